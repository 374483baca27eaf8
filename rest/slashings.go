package rest

import (
	_ "embed"
	"net/http"

	"github.com/stakegraph/stakegraph/internal/respond"
)

//go:embed operations/slashings.graphql
var slashingsOp string

// slashings serves GET /slashings. The dates are optional and inclusive;
// this handler checks that each parses and passes it on in RFC 3339 form,
// and the resolver rejects an end before the start.
func (h *handlers) slashings(w http.ResponseWriter, r *http.Request) {
	p := newParams(r.URL.Query())
	vs := vars{}
	setOptional(vs, "avsAddress", p.Address("avsAddress"))
	setOptional(vs, "operatorAddress", p.Address("operatorAddress"))
	setOptional(vs, "strategyAddress", p.Address("strategyAddress"))
	setOptional(vs, "startAt", formatTime(p.Time("startAt")))
	setOptional(vs, "endAt", formatTime(p.Time("endAt")))
	vs["skip"], vs["take"] = p.Page()
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	h.serve(w, r, slashingsOp, vs, "", "result")
}
