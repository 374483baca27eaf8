package rest

import (
	_ "embed"
	"net/http"
	"strings"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/internal/respond"
)

var (
	//go:embed operations/reward_strategies.graphql
	rewardStrategiesOp string
	//go:embed operations/programmatic_incentives.graphql
	programmaticIncentivesOp string
)

// maxHoldings bounds the tokens of one programmatic incentives request.
const maxHoldings = 100

// rewardStrategies serves GET /rewards/strategies.
func (h *handlers) rewardStrategies(w http.ResponseWriter, r *http.Request) {
	h.serve(w, r, rewardStrategiesOp, vars{}, "", "result")
}

// programmaticIncentives serves GET /rewards/programmatic-incentives. The
// holdings are tokenAddresses and amounts, comma-separated lists of equal
// length; without them the answer has the APYs alone.
func (h *handlers) programmaticIncentives(w http.ResponseWriter, r *http.Request) {
	p := newParams(r.URL.Query())
	tokens := p.List("tokenAddresses", maxHoldings, chain.IsAddress, "addresses (0x followed by 40 hexadecimal digits)")
	amounts := p.List("amounts", maxHoldings, isUint256, "non-negative integers below 2^256")
	if p.Err() == nil && len(tokens) != len(amounts) {
		raw, _ := p.raw("amounts")
		p.fail("amounts", raw, "as many amounts as tokenAddresses")
	}
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	holdings := make([]map[string]any, len(tokens))
	for i := range tokens {
		holdings[i] = map[string]any{"tokenAddress": strings.ToLower(tokens[i]), "amount": amounts[i]}
	}
	vs := vars{"withHoldings": len(holdings) > 0}
	if len(holdings) > 0 {
		vs["holdings"] = holdings
	}
	h.serve(w, r, programmaticIncentivesOp, vs, "", "result")
}
