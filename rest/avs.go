package rest

import (
	_ "embed"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/stakegraph/stakegraph/internal/respond"
)

var (
	//go:embed operations/avs_list.graphql
	avsListOp string
	//go:embed operations/avs_addresses.graphql
	avsAddressesOp string
	//go:embed operations/avs_operators.graphql
	avsOperatorsOp string
	//go:embed operations/avs_rewards.graphql
	avsRewardsOp string
)

// searchModes are the values of searchMode; the first is the default.
var searchModes = []string{"contains", "startsWith"}

// avsList serves GET /avs.
func (h *handlers) avsList(w http.ResponseWriter, r *http.Request) {
	p := newParams(r.URL.Query())
	vs := vars{
		"withTvl":             p.Bool("withTvl"),
		"withCuratedMetadata": p.Bool("withCuratedMetadata"),
		"searchMode":          p.Enum("searchMode", searchModes[0], searchModes...),
	}
	setOptional(vs, "searchByText", p.Text("searchByText"))
	for _, s := range []string{"sortByApy", "sortByTvl", "sortByTotalStakers", "sortByTotalOperators"} {
		setOptional(vs, s, p.Sort(s))
	}
	vs["skip"], vs["take"] = p.Page()
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	h.serve(w, r, avsListOp, vs, "", "result")
}

// avsAddresses serves GET /avs/addresses. An AVS without a logo has an
// empty logo, as the contract types it a string.
func (h *handlers) avsAddresses(w http.ResponseWriter, r *http.Request) {
	p := newParams(r.URL.Query())
	vs := vars{"searchMode": p.Enum("searchMode", searchModes[0], searchModes...)}
	setOptional(vs, "searchByText", p.Text("searchByText"))
	vs["skip"], vs["take"] = p.Page()
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	raw, err := h.result(r.Context(), avsAddressesOp, vs, "result")
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	var page struct {
		Data []map[string]any `json:"data"`
		Meta map[string]any   `json:"meta"`
	}
	if err := decode(raw, &page); err != nil {
		respond.Error(w, r, fmt.Errorf("decode AVS addresses: %w", err))
		return
	}
	for _, item := range page.Data {
		if item["logo"] == nil {
			item["logo"] = ""
		}
	}
	respond.JSON(w, r, http.StatusOK, page)
}

// avsOperators serves GET /avs/{address}/operators.
func (h *handlers) avsOperators(w http.ResponseWriter, r *http.Request) {
	addr, err := pathAddress("address", chi.URLParam(r, "address"))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	p := newParams(r.URL.Query())
	vs := vars{
		"address":    addr,
		"withTvl":    p.Bool("withTvl"),
		"searchMode": p.Enum("searchMode", searchModes[0], searchModes...),
	}
	setOptional(vs, "searchByText", p.Text("searchByText"))
	setOptional(vs, "sortByTvl", p.Sort("sortOperatorsByTvl"))
	vs["skip"], vs["take"] = p.Page()
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	h.serve(w, r, avsOperatorsOp, vs, "no AVS has the address "+chi.URLParam(r, "address"), "avs", "result")
}

// rewardsPageSize is how many rewards submissions one run of the rewards
// operation fetches; the route answers with all of them.
const rewardsPageSize = 1000

// avsRewards serves GET /avs/{address}/rewards with every submission of
// the AVS, fetching them a page at a time.
func (h *handlers) avsRewards(w http.ResponseWriter, r *http.Request) {
	addr, err := pathAddress("address", chi.URLParam(r, "address"))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	var rewards map[string]any
	var submissions []any
	for {
		vs := vars{"address": addr, "skip": len(submissions), "take": rewardsPageSize}
		raw, err := h.result(r.Context(), avsRewardsOp, vs, "avs", "result")
		if err != nil {
			respond.Error(w, r, notFoundError(err, "no AVS has the address "+chi.URLParam(r, "address")))
			return
		}
		rewards = nil
		if err := decode(raw, &rewards); err != nil {
			respond.Error(w, r, fmt.Errorf("decode AVS rewards: %w", err))
			return
		}
		page, _ := rewards["submissions"].([]any)
		submissions = append(submissions, page...)
		if len(page) < rewardsPageSize {
			break
		}
	}
	rewards["submissions"] = submissions
	if submissions == nil {
		rewards["submissions"] = []any{}
	}
	respond.JSON(w, r, http.StatusOK, rewards)
}
