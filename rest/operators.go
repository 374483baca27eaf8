package rest

import (
	_ "embed"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/stakegraph/stakegraph/internal/respond"
)

var (
	//go:embed operations/operator_list.graphql
	operatorListOp string
	//go:embed operations/operator_allocations.graphql
	operatorAllocationsOp string
	//go:embed operations/operator_addresses.graphql
	operatorAddressesOp string
	//go:embed operations/operator_rewards.graphql
	operatorRewardsOp string
)

// operatorList serves GET /operators.
func (h *handlers) operatorList(w http.ResponseWriter, r *http.Request) {
	p := newParams(r.URL.Query())
	vs := vars{"withTvl": p.Bool("withTvl")}
	setOptional(vs, "searchByText", p.Text("searchByText"))
	for _, s := range []string{"sortByApy", "sortByTvl", "sortByTotalAvs", "sortByTotalStakers"} {
		setOptional(vs, s, p.Sort(s))
	}
	vs["skip"], vs["take"] = p.Page()
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	h.serve(w, r, operatorListOp, vs, "", "result")
}

// operatorAllocations serves GET /operators/{address}/allocations.
func (h *handlers) operatorAllocations(w http.ResponseWriter, r *http.Request) {
	addr, err := pathAddress("address", chi.URLParam(r, "address"))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	p := newParams(r.URL.Query())
	vs := vars{"address": addr}
	vs["skip"], vs["take"] = p.Page()
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	h.serve(w, r, operatorAllocationsOp, vs, "no operator has the address "+chi.URLParam(r, "address"), "operator", "result")
}

// operatorRewards serves GET /operators/{address}/rewards: the tokens and
// strategies the operator is rewarded in and for.
func (h *handlers) operatorRewards(w http.ResponseWriter, r *http.Request) {
	addr, err := pathAddress("address", chi.URLParam(r, "address"))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	h.serve(w, r, operatorRewardsOp, vars{"address": addr}, "no operator has the address "+chi.URLParam(r, "address"), "operator", "result")
}

// addressListNulls are the null members of a page of addresses
// (/avs/addresses, /operators/addresses) written otherwise: a logo the
// metadata lacks is an empty string, as the contract types it a string.
var addressListNulls = map[string]string{"data.*.logo": `""`}

// operatorAddresses serves GET /operators/addresses. An operator without a
// logo has an empty logo, as EigenExplorer's document types it a string.
func (h *handlers) operatorAddresses(w http.ResponseWriter, r *http.Request) {
	p := newParams(r.URL.Query())
	vs := vars{"searchMode": p.Enum("searchMode", searchModes[0], searchModes...)}
	setOptional(vs, "searchByText", p.Text("searchByText"))
	vs["skip"], vs["take"] = p.Page()
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	raw, err := h.result(r.Context(), operatorAddressesOp, vs, "result")
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	if raw, err = writeNullsAs(raw, addressListNulls); err != nil {
		respond.Error(w, r, fmt.Errorf("operator addresses: %w", err))
		return
	}
	respond.RawJSON(w, r, http.StatusOK, raw)
}
