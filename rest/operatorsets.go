package rest

import (
	_ "embed"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/stakegraph/stakegraph/internal/respond"
)

var (
	//go:embed operations/avs_operator_sets.graphql
	avsOperatorSetsOp string
	//go:embed operations/operator_set.graphql
	operatorSetOp string
)

// maxOperatorSetID is the largest operator set id: ids are uint32 on chain.
const maxOperatorSetID = 1<<32 - 1

// avsOperatorSets serves GET /avs/{address}/operator-sets.
func (h *handlers) avsOperatorSets(w http.ResponseWriter, r *http.Request) {
	addr, err := pathAddress("address", chi.URLParam(r, "address"))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	p := newParams(r.URL.Query())
	vs := vars{"address": addr, "withTvl": p.Bool("withTvl")}
	vs["skip"], vs["take"] = p.Page()
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	h.serve(w, r, avsOperatorSetsOp, vs, "no AVS has the address "+chi.URLParam(r, "address"), "avs", "result")
}

// operatorSet serves GET /operator-sets/{avs}/{id}: the set with one page
// (skip, take) of its operators and their allocations to it.
func (h *handlers) operatorSet(w http.ResponseWriter, r *http.Request) {
	avs, err := pathAddress("avs", chi.URLParam(r, "avs"))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	id, err := pathOperatorSetID("id", chi.URLParam(r, "id"))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	p := newParams(r.URL.Query())
	vs := vars{"avs": avs, "id": id, "withTvl": p.Bool("withTvl")}
	vs["skip"], vs["take"] = p.Page()
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	// The 404 message names the AVS and id as sent.
	h.serve(w, r, operatorSetOp, vs, "the AVS "+chi.URLParam(r, "avs")+" has no operator set "+chi.URLParam(r, "id"), "result")
}

// pathOperatorSetID validates an operator set id path parameter: a decimal
// integer from 0 to 4294967295, without a sign.
func pathOperatorSetID(name, v string) (int, error) {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, &ParamError{Name: name, In: "path", Value: v, Want: "an operator set id: an integer from 0 to " + strconv.Itoa(maxOperatorSetID)}
	}
	return int(n), nil
}
