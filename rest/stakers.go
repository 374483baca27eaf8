package rest

import (
	_ "embed"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/stakegraph/stakegraph/internal/respond"
)

var (
	//go:embed operations/staker_delegation_events.graphql
	stakerDelegationEventsOp string
	//go:embed operations/deposits.graphql
	depositsOp string
)

// deposits serves GET /deposits: every deposit, newest first, optionally
// of one staker, token or strategy.
func (h *handlers) deposits(w http.ResponseWriter, r *http.Request) {
	p := newParams(r.URL.Query())
	vs := vars{}
	setOptional(vs, "stakerAddress", p.Address("stakerAddress"))
	setOptional(vs, "tokenAddress", p.Address("tokenAddress"))
	setOptional(vs, "strategyAddress", p.Address("strategyAddress"))
	vs["skip"], vs["take"] = p.Page()
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	h.serve(w, r, depositsOp, vs, "", "result")
}

// stakerDeposits serves GET /stakers/{address}/deposits: the staker's
// deposits into strategies, newest first, as GET /deposits lists them. A
// staker without deposits has an empty list.
func (h *handlers) stakerDeposits(w http.ResponseWriter, r *http.Request) {
	addr, err := pathAddress("address", chi.URLParam(r, "address"))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	p := newParams(r.URL.Query())
	vs := vars{"stakerAddress": addr}
	vs["skip"], vs["take"] = p.Page()
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	h.serve(w, r, depositsOp, vs, "", "result")
}

// delegationTypes are the values of a delegation event's type.
var delegationTypes = []string{"DELEGATION", "UNDELEGATION", "SHARES_INCREASED", "SHARES_DECREASED"}

// stakerDelegationEvents serves GET /stakers/{address}/events/delegation.
// The date-range rules are the resolver's; this handler checks that each
// date parses and passes it on in RFC 3339 form. Fields that do not apply
// to an event (the strategy and shares of a DELEGATION, the token values of
// beacon-chain ETH) are left out rather than null.
func (h *handlers) stakerDelegationEvents(w http.ResponseWriter, r *http.Request) {
	addr, err := pathAddress("address", chi.URLParam(r, "address"))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	p := newParams(r.URL.Query())
	vs := vars{
		"address":       addr,
		"withTokenData": p.Bool("withTokenData"),
		"withEthValue":  p.Bool("withEthValue"),
	}
	setOptional(vs, "txHash", p.Hash("txHash"))
	setOptional(vs, "type", p.OptionalEnum("type", delegationTypes...))
	setOptional(vs, "strategyAddress", p.Address("strategyAddress"))
	setOptional(vs, "operatorAddress", p.Address("operatorAddress"))
	setOptional(vs, "startAt", formatTime(p.Time("startAt")))
	setOptional(vs, "endAt", formatTime(p.Time("endAt")))
	vs["skip"], vs["take"] = p.Page()
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	raw, err := h.result(r.Context(), stakerDelegationEventsOp, vs, "staker", "result")
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	if raw, err = leaveOutNulls(raw, delegationEventNulls); err != nil {
		respond.Error(w, r, fmt.Errorf("staker events: %w", err))
		return
	}
	respond.RawJSON(w, r, http.StatusOK, raw)
}

// formatTime writes t in the RFC 3339 form the GraphQL date arguments take.
func formatTime(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}
