// Package rest serves stakegraph's REST API, a drop-in replacement for the
// routes of EigenExplorer's API that the interface specification lists,
// and routes of its own over the slashing-era protocol: operator sets,
// allocations and slashings.
//
// Each data route validates its parameters and then runs one fixed GraphQL
// operation (embedded from operations/) in-process through the executable
// schema, so the REST and GraphQL APIs share one implementation of every
// business rule. The handler only checks syntax, passes variables and
// writes the result in the REST shape.
package rest

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/klauspost/compress/gzip"

	"github.com/stakegraph/stakegraph/graph"
	"github.com/stakegraph/stakegraph/internal/cors"
	"github.com/stakegraph/stakegraph/internal/derrors"
	"github.com/stakegraph/stakegraph/internal/respond"
)

// Executor runs a GraphQL operation in-process and returns its data: the
// JSON object of the operation's root fields. A failed operation's error
// wraps the derrors sentinel of the GraphQL error's code.
type Executor interface {
	Execute(ctx context.Context, query string, vars map[string]any) (json.RawMessage, error)
}

// Config configures the REST handler.
type Config struct {
	// Executor runs the routes' GraphQL operations.
	Executor Executor
	// Authenticate wraps every route that needs an API key, normally
	// (*apikey.Authenticator).Middleware.
	Authenticate func(http.Handler) http.Handler
	// Version is reported by GET /version.
	Version string
}

// NewHandler returns the REST API. The routes that need a key are wrapped
// with cfg.Authenticate; /health, /version and /openapi.json and the 404
// and 405 answers are not. Every response allows any origin (package cors
// answers preflights before the key check) and is gzip-compressed when the
// client accepts it.
func NewHandler(cfg Config) http.Handler {
	if cfg.Executor == nil || cfg.Authenticate == nil {
		panic("rest.NewHandler: Executor and Authenticate are required")
	}
	h := &handlers{exec: cfg.Executor}

	r := chi.NewRouter()
	r.Use(cors.Middleware(allowedMethods))
	// Level 1: chi resets a pooled encoder for every request, and a flate
	// reset at levels 2-9 clears 640 KB of hash tables, about a tenth of the
	// server's CPU under load; the BestSpeed encoder resets for free. The
	// klauspost/compress encoder is twice as fast as compress/gzip's at
	// that level, with slightly smaller output.
	compressor := middleware.NewCompressor(gzip.BestSpeed, "application/json")
	compressor.SetEncoder("gzip", func(w io.Writer, level int) io.Writer {
		zw, err := gzip.NewWriterLevel(w, level)
		if err != nil {
			return nil
		}
		return zw
	})
	r.Use(compressor.Handler)
	r.Use(middleware.GetHead)
	r.Use(checkQuery)
	r.NotFound(notFound)
	r.MethodNotAllowed(methodNotAllowed)

	r.Get("/health", health)
	r.Get("/version", version(cfg.Version))
	r.Get("/openapi.json", openAPI)

	r.Group(func(r chi.Router) {
		r.Use(cfg.Authenticate)
		r.Use(lendOutputBuffers)
		r.Get("/avs", h.avsList)
		r.Get("/avs/addresses", h.avsAddresses)
		r.Get("/avs/{address}", h.avsDetail)
		r.Get("/avs/{address}/operators", h.avsOperators)
		r.Get("/avs/{address}/stakers", h.avsStakers)
		r.Get("/avs/{address}/rewards", h.avsRewards)
		r.Get("/avs/{address}/operator-sets", h.avsOperatorSets)
		r.Get("/operator-sets/{avs}/{id}", h.operatorSet)
		r.Get("/operators", h.operatorList)
		r.Get("/operators/addresses", h.operatorAddresses)
		r.Get("/operators/{address}", h.operatorDetail)
		r.Get("/operators/{address}/allocations", h.operatorAllocations)
		r.Get("/operators/{address}/rewards", h.operatorRewards)
		r.Get("/stakers/{address}/events/delegation", h.stakerDelegationEvents)
		r.Get("/withdrawals", h.withdrawals)
		r.Get("/withdrawals/{withdrawalRoot}", h.withdrawalDetail)
		r.Get("/stakers/{address}/withdrawals", h.stakerWithdrawals(""))
		r.Get("/stakers/{address}/withdrawals/queued", h.stakerWithdrawals("queued"))
		r.Get("/stakers/{address}/withdrawals/queued_withdrawable", h.stakerWithdrawals("queued_withdrawable"))
		r.Get("/stakers/{address}/withdrawals/completed", h.stakerWithdrawals("completed"))
		r.Get("/stakers/{address}/deposits", h.stakerDeposits)
		r.Get("/deposits", h.deposits)
		r.Get("/stakers", h.stakers)
		r.Get("/stakers/{address}", h.stakerDetail)
		r.Get("/slashings", h.slashings)
		r.Get("/metrics", h.metrics)
		r.Get("/metrics/tvl/restaking", h.serveWithChange(restakingTVLOp))
		r.Get("/metrics/tvl/restaking/{strategy}", h.strategyTVL)
		r.Get("/metrics/total-withdrawals", h.serveWithChange(totalWithdrawalsOp))
		r.Get("/metrics/total-stakers", h.serveWithChange(totalStakersOp))
		r.Get("/metrics/deployment-ratio", h.serveWithChange(deploymentRatioOp))
		r.Get("/metrics/restaking-ratio", h.restakingRatio())
		r.Get("/metrics/total-avs", h.totalCount("avs"))
		r.Get("/metrics/total-operators", h.totalCount("operators"))
		r.Get("/metrics/tvl", h.serveWithChange(totalTVLOp))
		r.Get("/metrics/tvl/beacon-chain", h.serveWithChange(beaconChainTVLOp))
		r.Get("/metrics/historical/count-avs", h.historicalCount("avs"))
		r.Get("/metrics/historical/count-operators", h.historicalCount("operators"))
		r.Get("/metrics/historical/count-stakers", h.historicalCount("stakers"))
		r.Get("/metrics/historical/count-withdrawals", h.historicalCount("withdrawals"))
		r.Get("/metrics/historical/tvl", h.historicalTVL("total"))
		r.Get("/metrics/historical/tvl/beacon-chain", h.historicalTVL("beaconChain"))
		r.Get("/metrics/historical/tvl/restaking/{address}", h.historicalOf(historicalStrategyTVLOp, "strategy"))
		r.Get("/metrics/historical/operators/{address}", h.historicalOf(historicalOperatorOp, "operator"))
		r.Get("/metrics/historical/avs/{address}", h.historicalOf(historicalAVSOp, "AVS"))
		r.Get("/metrics/historical/count-deposits", h.historicalCount("deposits"))
		r.Get("/metrics/historical/deposits", h.historicalValue("deposits"))
		r.Get("/metrics/historical/withdrawals", h.historicalValue("withdrawals"))
		r.Get("/metrics/total-deposits", h.totalCount("deposits"))
		r.Get("/rewards/strategies", h.rewardStrategies)
		r.Get("/rewards/programmatic-incentives", h.programmaticIncentives)
		r.Get("/events/delegation", h.serveFeed(delegationFeed("")))
		r.Get("/events/deposit", h.serveFeed(depositFeed("")))
		r.Get("/events/withdrawal", h.serveFeed(withdrawalFeed("")))
		r.Get("/events/rewards", h.serveFeed(rewardsFeed("")))
		r.Get("/events/registration-status", h.serveFeed(registrationFeed("")))
		r.Get("/avs/{address}/events/rewards", h.serveFeed(rewardsFeed("avs")))
		r.Get("/avs/{address}/events/registration-status", h.serveFeed(registrationFeed("avs")))
		r.Get("/operators/{address}/events/delegation", h.serveFeed(delegationFeed("operator")))
		r.Get("/operators/{address}/events/registration-status", h.serveFeed(registrationFeed("operator")))
		r.Get("/stakers/{address}/events/deposit", h.serveFeed(depositFeed("staker")))
		r.Get("/stakers/{address}/events/withdrawal", h.serveFeed(withdrawalFeed("staker")))
	})
	return r
}

// allowedMethods is the Allow header of every route.
const allowedMethods = "GET, HEAD, OPTIONS"

// checkQuery answers 400 bad_request when the query string cannot be
// parsed, such as for malformed percent-encoding (stakerAddress=%zz) or a
// semicolon separator, before the key check and the routes, which would
// otherwise read the parameters that parse and silently drop the rest.
func checkQuery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
			respond.Error(w, r, fmt.Errorf("%w: malformed query string: %s", derrors.BadRequest, queryErrorText(err)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// queryErrorText describes a url.ParseQuery error for the client, quoting
// the offending escape as sent.
func queryErrorText(err error) string {
	var esc url.EscapeError
	if errors.As(err, &esc) {
		return fmt.Sprintf("invalid percent-encoding %s; write a literal %% as %%25", respond.QuoteInput(string(esc)))
	}
	return err.Error()
}

// notFound names the path as sent, percent-encoded as it came.
func notFound(w http.ResponseWriter, r *http.Request) {
	respond.Error(w, r, fmt.Errorf("%w: no route %s", derrors.NotFound, respond.QuoteInput(r.URL.EscapedPath())))
}

// methodNotAllowed names the method as sent: methods are case-sensitive,
// so "get" is not GET.
func methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Allow", allowedMethods)
	respond.Error(w, r, fmt.Errorf("%w: method %s is not supported; use %s", derrors.MethodNotAllowed, respond.QuoteInput(r.Method), allowedMethods))
}

func health(w http.ResponseWriter, r *http.Request) {
	respond.JSON(w, r, http.StatusOK, map[string]string{"status": "ok"})
}

func version(v string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		respond.JSON(w, r, http.StatusOK, map[string]string{"version": v})
	}
}

//go:embed openapi.json
var openAPIDocument []byte

// openAPI serves the OpenAPI 3 document describing exactly these routes.
func openAPI(w http.ResponseWriter, r *http.Request) {
	respond.JSON(w, r, http.StatusOK, json.RawMessage(openAPIDocument))
}

// lendOutputBuffers lets the operations a route runs write their data into
// pooled buffers (graph.WithOutputBuffers), returned when the route has
// written its response.
func lendOutputBuffers(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, release := graph.WithOutputBuffers(r.Context())
		defer release()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
