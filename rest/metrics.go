package rest

import (
	_ "embed"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/stakegraph/stakegraph/internal/respond"
)

var (
	//go:embed operations/metrics.graphql
	metricsOp string
	//go:embed operations/restaking_tvl.graphql
	restakingTVLOp string
	//go:embed operations/strategy_tvl.graphql
	strategyTVLOp string
	//go:embed operations/total_withdrawals.graphql
	totalWithdrawalsOp string
	//go:embed operations/total_stakers.graphql
	totalStakersOp string
	//go:embed operations/deployment_ratio.graphql
	deploymentRatioOp string
	//go:embed operations/restaking_ratio.graphql
	restakingRatioOp string
	//go:embed operations/historical_count.graphql
	historicalCountOp string
	//go:embed operations/historical_tvl.graphql
	historicalTVLOp string
	//go:embed operations/total_count.graphql
	totalCountOp string
	//go:embed operations/total_tvl.graphql
	totalTVLOp string
	//go:embed operations/beacon_chain_tvl.graphql
	beaconChainTVLOp string
	//go:embed operations/historical_value.graphql
	historicalValueOp string
	//go:embed operations/historical_strategy_tvl.graphql
	historicalStrategyTVLOp string
	//go:embed operations/historical_operator.graphql
	historicalOperatorOp string
	//go:embed operations/historical_avs.graphql
	historicalAVSOp string
)

// metrics serves GET /metrics.
func (h *handlers) metrics(w http.ResponseWriter, r *http.Request) {
	h.serve(w, r, metricsOp, vars{}, "", "result")
}

// serveWithChange serves a metric route whose only parameter is the
// withChange toggle; without it the change24h and change7d keys are absent.
func (h *handlers) serveWithChange(op string) http.HandlerFunc {
	return h.serveSeriesWithChange(op, "", "")
}

// restakingRatio serves GET /metrics/restaking-ratio; without a recorded
// ETH supply there is no ratio to give.
func (h *handlers) restakingRatio() http.HandlerFunc {
	return h.serveSeriesWithChange(restakingRatioOp, "",
		"the restaking ratio is unknown: no ETH supply has been recorded (the indexer's --eth-supply source)")
}

// totalCount serves GET /metrics/total-{avs,operators,deposits}: the count
// of series, a value of the CountSeries enum.
func (h *handlers) totalCount(series string) http.HandlerFunc {
	return h.serveSeriesWithChange(totalCountOp, series, "")
}

// serveSeriesWithChange is serveWithChange for an operation that also
// takes series, unless it is "", and whose null result is answered 404
// with notFoundMsg.
func (h *handlers) serveSeriesWithChange(op, series, notFoundMsg string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		p := newParams(r.URL.Query())
		vs := vars{"withChange": p.Bool("withChange")}
		if series != "" {
			vs["series"] = series
		}
		if err := p.Err(); err != nil {
			respond.Error(w, r, err)
			return
		}
		h.serve(w, r, op, vs, notFoundMsg, "metrics", "result")
	}
}

// strategyTVL serves GET /metrics/tvl/restaking/{strategy}.
func (h *handlers) strategyTVL(w http.ResponseWriter, r *http.Request) {
	strategy, err := pathAddress("strategy", chi.URLParam(r, "strategy"))
	if err != nil {
		respond.Error(w, r, err)
		return
	}
	p := newParams(r.URL.Query())
	vs := vars{"strategy": strategy, "withChange": p.Bool("withChange")}
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	h.serve(w, r, strategyTVLOp, vs, "no strategy has the address "+chi.URLParam(r, "strategy"), "metrics", "result")
}

// historicalCount serves GET /metrics/historical/count-{series}: avs,
// operators, stakers, withdrawals or deposits, the values of the
// CountSeries enum.
func (h *handlers) historicalCount(series string) http.HandlerFunc {
	return h.historical(historicalCountOp, series)
}

// historicalTVL serves GET /metrics/historical/tvl (series total) and
// /metrics/historical/tvl/beacon-chain (beaconChain), the values of the
// TvlSeries enum.
func (h *handlers) historicalTVL(series string) http.HandlerFunc {
	return h.historical(historicalTVLOp, series)
}

// historicalValue serves GET /metrics/historical/deposits and
// /metrics/historical/withdrawals, the values of the ValueSeries enum.
func (h *handlers) historicalValue(series string) http.HandlerFunc {
	return h.historical(historicalValueOp, series)
}

// historical serves a historical series route: op with series.
func (h *handlers) historical(op, series string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h.serveHistory(w, r, op, vars{"series": series}, "")
	}
}

// historicalOf serves the history of one subject (what) named by the
// address path parameter: op with that address, or 404 when the subject is
// unknown. It serves GET /metrics/historical/tvl/restaking/{address} and
// /metrics/historical/operators/{address}.
func (h *handlers) historicalOf(op, what string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		addr, err := pathAddress("address", chi.URLParam(r, "address"))
		if err != nil {
			respond.Error(w, r, err)
			return
		}
		h.serveHistory(w, r, op, vars{"address": addr}, "no "+what+" has the address "+chi.URLParam(r, "address"))
	}
}

// serveHistory runs a historical series operation with vs and the route's
// frequency, variant, startAt and endAt. The default range, the range
// limits and the buckets are the resolver's.
func (h *handlers) serveHistory(w http.ResponseWriter, r *http.Request, op string, vs vars, notFoundMsg string) {
	p := newParams(r.URL.Query())
	vs["frequency"] = p.Enum("frequency", "1d", "1d", "7d")
	vs["variant"] = p.Enum("variant", "cumulative", "discrete", "cumulative")
	setOptional(vs, "startAt", formatTime(p.Time("startAt")))
	setOptional(vs, "endAt", formatTime(p.Time("endAt")))
	if err := p.Err(); err != nil {
		respond.Error(w, r, err)
		return
	}
	h.serve(w, r, op, vs, notFoundMsg, "metrics", "result")
}
