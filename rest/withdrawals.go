package rest

import (
	_ "embed"
	"net/http"

	"github.com/stakegraph/stakegraph/internal/respond"
)

//go:embed operations/withdrawals.graphql
var withdrawalsOp string

// withdrawals serves GET /withdrawals.
func (h *handlers) withdrawals(w http.ResponseWriter, r *http.Request) {
	p := newParams(r.URL.Query())
	vs := vars{}
	setOptional(vs, "stakerAddress", p.Address("stakerAddress"))
	setOptional(vs, "delegatedTo", p.Address("delegatedTo"))
	setOptional(vs, "strategyAddress", p.Address("strategyAddress"))
	setOptional(vs, "status", p.OptionalEnum("status", "queued", "queued_withdrawable", "completed"))
	vs["skip"], vs["take"] = p.Page()
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	h.serve(w, r, withdrawalsOp, vs, "", "result")
}
