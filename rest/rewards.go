package rest

import (
	_ "embed"
	"net/http"
)

//go:embed operations/reward_strategies.graphql
var rewardStrategiesOp string

// rewardStrategies serves GET /rewards/strategies.
func (h *handlers) rewardStrategies(w http.ResponseWriter, r *http.Request) {
	h.serve(w, r, rewardStrategiesOp, vars{}, "", "result")
}
