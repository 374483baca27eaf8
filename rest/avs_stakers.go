package rest

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

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
	var s graphStaker
	if err := decode(raw, &s); err != nil {
		respond.Error(w, r, fmt.Errorf("decode staker: %w", err))
		return
	}
	if s.CreatedAtBlock == nil {
		respond.Error(w, r, fmt.Errorf("%w: %s", derrors.NotFound, notFound))
		return
	}
	respond.JSON(w, r, http.StatusOK, restStakerFromGraph(s))
}

// respondStakers answers with the page of stakers raw in EigenExplorer's
// shape.
func respondStakers(w http.ResponseWriter, r *http.Request, raw json.RawMessage) {
	var page struct {
		Data []graphStaker   `json:"data"`
		Meta json.RawMessage `json:"meta"`
	}
	if err := decode(raw, &page); err != nil {
		respond.Error(w, r, fmt.Errorf("decode stakers: %w", err))
		return
	}
	out := struct {
		Data []restStaker    `json:"data"`
		Meta json.RawMessage `json:"meta"`
	}{Data: make([]restStaker, len(page.Data)), Meta: page.Meta}
	for i, s := range page.Data {
		out.Data[i] = restStakerFromGraph(s)
	}
	respond.JSON(w, r, http.StatusOK, out)
}

// graphStaker is a staker as the AvsStakers operation selects it.
type graphStaker struct {
	Address         string          `json:"address"`
	OperatorAddress *string         `json:"operatorAddress"`
	CreatedAtBlock  *int64          `json:"createdAtBlock"`
	UpdatedAtBlock  *int64          `json:"updatedAtBlock"`
	CreatedAt       *string         `json:"createdAt"`
	UpdatedAt       *string         `json:"updatedAt"`
	Shares          []graphShare    `json:"shares"`
	Tvl             json.RawMessage `json:"tvl,omitempty"`
	Rewards         json.RawMessage `json:"rewards,omitempty"`
}

// graphShare is one strategy's shares.
type graphShare struct {
	StrategyAddress string `json:"strategyAddress"`
	Shares          string `json:"shares"`
}

// restStaker is a staker in EigenExplorer's shape: block numbers as
// decimal strings, and each share naming its staker.
type restStaker struct {
	Address         string          `json:"address"`
	OperatorAddress string          `json:"operatorAddress"`
	CreatedAtBlock  string          `json:"createdAtBlock"`
	UpdatedAtBlock  string          `json:"updatedAtBlock"`
	CreatedAt       *string         `json:"createdAt"`
	UpdatedAt       *string         `json:"updatedAt"`
	Shares          []restShare     `json:"shares"`
	Tvl             json.RawMessage `json:"tvl,omitempty"`
	Rewards         json.RawMessage `json:"rewards,omitempty"`
}

// restShare is one strategy's shares of a staker.
type restShare struct {
	StakerAddress   string `json:"stakerAddress"`
	StrategyAddress string `json:"strategyAddress"`
	Shares          string `json:"shares"`
}

// restStakerFromGraph converts a staker of the GraphQL answer to
// EigenExplorer's shape. EigenExplorer's document requires an operator:
// an undelegated staker's is the zero address, which is also what the
// DelegationManager's delegatedTo answers for it.
func restStakerFromGraph(s graphStaker) restStaker {
	operator := zeroAddress
	if s.OperatorAddress != nil {
		operator = *s.OperatorAddress
	}
	out := restStaker{
		Address:         s.Address,
		OperatorAddress: operator,
		CreatedAtBlock:  blockText(s.CreatedAtBlock),
		UpdatedAtBlock:  blockText(s.UpdatedAtBlock),
		CreatedAt:       s.CreatedAt,
		UpdatedAt:       s.UpdatedAt,
		Shares:          make([]restShare, len(s.Shares)),
		Tvl:             s.Tvl,
		Rewards:         s.Rewards,
	}
	for i, sh := range s.Shares {
		out.Shares[i] = restShare{StakerAddress: s.Address, StrategyAddress: sh.StrategyAddress, Shares: sh.Shares}
	}
	return out
}

// blockText is a block number as decimal text, "0" when unknown.
func blockText(b *int64) string {
	if b == nil {
		return "0"
	}
	return strconv.FormatInt(*b, 10)
}
