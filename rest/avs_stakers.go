package rest

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/go-chi/chi/v5"

	"github.com/stakegraph/stakegraph/internal/derrors"
	"github.com/stakegraph/stakegraph/internal/respond"
)

var (
	//go:embed operations/avs_stakers.graphql
	avsStakersOp string
	//go:embed operations/stakers.graphql
	stakersOp string
	//go:embed operations/staker_detail.graphql
	stakerDetailOp string
)

// avsStakers serves GET /avs/{address}/stakers: the stakers delegated to
// the AVS's registered operators, by operator then staker address, in
// EigenExplorer's shape (see restStakerFromGraph).
func (h *handlers) avsStakers(w http.ResponseWriter, r *http.Request) {
	addr, err := pathAddress("address", chi.URLParam(r, "address"))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	p := newParams(r.URL.Query())
	vs := vars{"address": addr, "withTvl": p.Bool("withTvl")}
	setOptional(vs, "updatedSince", formatTime(p.Time("updatedSince")))
	vs["skip"], vs["take"] = p.Page()
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	raw, err := h.result(r.Context(), avsStakersOp, vs, "avs", "result")
	if err != nil {
		respond.Error(w, r, notFoundError(err, "no AVS has the address "+chi.URLParam(r, "address")))
		return
	}
	respondStakers(w, r, raw)
}

// stakers serves GET /stakers: every staker, by address, in
// EigenExplorer's shape (see restStakerFromGraph).
func (h *handlers) stakers(w http.ResponseWriter, r *http.Request) {
	p := newParams(r.URL.Query())
	vs := vars{"withTvl": p.Bool("withTvl")}
	setOptional(vs, "updatedSince", formatTime(p.Time("updatedSince")))
	vs["skip"], vs["take"] = p.Page()
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	raw, err := h.result(r.Context(), stakersOp, vs, "result")
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	respondStakers(w, r, raw)
}

// stakerDetail serves GET /stakers/{address}: one staker in
// EigenExplorer's shape with its rewards, or 404 for an address the
// service has never seen. EigenExplorer's document requires rewards, so
// they are always present; withRewards is accepted and changes nothing.
func (h *handlers) stakerDetail(w http.ResponseWriter, r *http.Request) {
	addr, err := pathAddress("address", chi.URLParam(r, "address"))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	p := newParams(r.URL.Query())
	vs := vars{"address": addr, "withTvl": p.Bool("withTvl")}
	p.Bool("withRewards")
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	notFound := "the service has never seen the staker " + chi.URLParam(r, "address")
	raw, err := h.result(r.Context(), stakerDetailOp, vs, "result")
	if err != nil {
		respond.Error(w, r, notFoundError(err, notFound))
		return
	}
	// A staker whose first event the service has not seen has no block.
	var seen struct {
		CreatedAtBlock *int64 `json:"createdAtBlock"`
	}
	if err := decode(raw, &seen); err != nil {
		respond.Error(w, r, fmt.Errorf("decode staker: %w", err))
		return
	}
	if seen.CreatedAtBlock == nil {
		respond.Error(w, r, fmt.Errorf("%w: %s", derrors.NotFound, notFound))
		return
	}
	body, err := stakersInRESTShape(raw)
	if err != nil {
		respond.Error(w, r, fmt.Errorf("reshape staker: %w", err))
		return
	}
	respond.RawJSON(w, r, http.StatusOK, body)
}

// respondStakers answers with the page of stakers raw in EigenExplorer's
// shape (see stakersInRESTShape).
func respondStakers(w http.ResponseWriter, r *http.Request, raw json.RawMessage) {
	body, err := stakersInRESTShape(raw, "data", "*")
	if err != nil {
		respond.Error(w, r, fmt.Errorf("reshape stakers: %w", err))
		return
	}
	respond.RawJSON(w, r, http.StatusOK, body)
}

// stakersInRESTShape returns the JSON document raw of the GraphQL answer
// with its stakers, the objects at the path root, in EigenExplorer's
// shape. Its document requires an operator: an undelegated staker's is the
// zero address, which is also what the DelegationManager's delegatedTo
// answers for it. Block numbers are decimal strings, "0" when unknown. And
// each of a staker's shares names its staker first, as stakerAddress. The
// text is rewritten where it stands, everything else copied as it is,
// which costs a fraction of decoding the page and encoding it again.
func stakersInRESTShape(raw []byte, root ...string) ([]byte, error) {
	at := func(names ...string) []string { return append(slices.Clone(root), names...) }
	s := nullScanner{
		in:  raw,
		out: make([]byte, 0, len(raw)+len(raw)/4),
		replace: []replacement{
			{path: at("operatorAddress"), text: []byte(`"` + zeroAddress + `"`)},
			{path: at("createdAtBlock"), text: []byte(`"0"`)},
			{path: at("updatedAtBlock"), text: []byte(`"0"`)},
		},
		quote:  [][]string{at("createdAtBlock"), at("updatedAtBlock")},
		copied: &memberCopy{from: at("address"), into: at("shares", "*"), name: "stakerAddress"},
	}
	out, err := s.document()
	if err != nil {
		return nil, fmt.Errorf("stakers in EigenExplorer's shape: %w", err)
	}
	return out, nil
}
