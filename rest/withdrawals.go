package rest

import (
	_ "embed"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/internal/respond"
)

var (
	//go:embed operations/withdrawals.graphql
	withdrawalsOp string
	//go:embed operations/withdrawal_detail.graphql
	withdrawalDetailOp string
)

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

// stakerWithdrawals serves GET /stakers/{address}/withdrawals and, with a
// status, its /queued, /queued_withdrawable and /completed variants: the
// answer of GET /withdrawals with stakerAddress (and status) set, by the
// same operation. A staker without withdrawals has an empty list.
func (h *handlers) stakerWithdrawals(status string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		addr, err := pathAddress("address", chi.URLParam(r, "address"))
		if err != nil {
			respond.Error(w, r, err)
			return
		}
		p := newParams(r.URL.Query())
		vs := vars{"stakerAddress": addr}
		if status != "" {
			vs["status"] = status
		}
		vs["skip"], vs["take"] = p.Page()
		if err := p.Err(); err != nil {
			respond.Error(w, r, err)
			return
		}
		h.serve(w, r, withdrawalsOp, vs, "", "result")
	}
}

// withdrawalDetail serves GET /withdrawals/{withdrawalRoot}: one
// withdrawal, as GET /withdrawals lists it.
func (h *handlers) withdrawalDetail(w http.ResponseWriter, r *http.Request) {
	root := chi.URLParam(r, "withdrawalRoot")
	if !chain.IsHash(root) {
		respond.Error(w, r, &ParamError{Name: "withdrawalRoot", In: "path", Value: root, Want: "a withdrawal root: 0x followed by 64 hexadecimal digits"})
		return
	}
	h.serve(w, r, withdrawalDetailOp, vars{"withdrawalRoot": strings.ToLower(root)},
		"no withdrawal has the root "+root, "result")
}
