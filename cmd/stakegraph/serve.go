package main

import (
	"context"
	"flag"
	"net/http"
	"runtime/debug"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stakegraph/stakegraph/apikey"
	"github.com/stakegraph/stakegraph/graph"
	"github.com/stakegraph/stakegraph/httpcache"
	"github.com/stakegraph/stakegraph/internal/version"
	"github.com/stakegraph/stakegraph/rest"
	"github.com/stakegraph/stakegraph/server"
	"github.com/stakegraph/stakegraph/store"
)

var serveCommand = command{
	name:    "serve",
	summary: "serve the API until interrupted (SIGINT or SIGTERM)",
	flags: func(fs *flag.FlagSet, c *cli) func(context.Context, []string) error {
		addr := fs.String("addr", envOr(c.getenv, "STAKEGRAPH_ADDR", server.DefaultAddr), "API listen `address` (env STAKEGRAPH_ADDR)")
		adminAddr := fs.String("admin-addr", envOr(c.getenv, "STAKEGRAPH_ADMIN_ADDR", server.DefaultAdminAddr), "`address` of the admin listener with /metrics; \"off\" disables it (env STAKEGRAPH_ADMIN_ADDR)")
		cache := fs.Bool("response-cache", envOr(c.getenv, "STAKEGRAPH_RESPONSE_CACHE", "true") == "true",
			"cache API responses in memory until the data version changes (env STAKEGRAPH_RESPONSE_CACHE)")
		entities := fs.Bool("entity-cache", envOr(c.getenv, "STAKEGRAPH_ENTITY_CACHE", "true") == "true",
			"keep the records of the small tables (AVS, operators, strategies, their shares and registrations) in memory until the data version changes (env STAKEGRAPH_ENTITY_CACHE)")
		index := registerIndexFlags(fs, c, false)
		return func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected arguments %q", args)
			}
			if c.getenv("GOMEMLIMIT") == "" {
				debug.SetMemoryLimit(serveMemoryLimit)
			}
			db, err := c.openDatabase(ctx)
			if err != nil {
				return err
			}
			// The local cluster, when used, lives as long as the server.
			defer db.Close()
			registry := prometheus.NewRegistry()
			stopIndexer, err := startIndexer(ctx, c, index, db.DB, registry)
			if err != nil {
				return err
			}
			defer stopIndexer()
			admin := *adminAddr
			if admin == "off" {
				admin = ""
			}
			srv := server.New(
				server.Config{Addr: *addr, AdminAddr: admin, Logger: c.logger},
				server.Deps{DB: db.DB, Registry: registry, Mounts: apiMounts(ctx, c, db, registry, cacheOptions{responses: *cache, entities: *entities})},
			)
			return srv.Run(ctx)
		}
	},
}

// serveMemoryLimit is serve's soft memory limit unless GOMEMLIMIT sets one:
// with the response cache full (then 64 MiB), the garbage collector's
// default pacing let the heap double between collections, to a peak RSS of
// 281 MiB in the 64-client soak; near this limit it collects sooner
// instead. With both caches full (32 MiB of responses, about 40 MiB of
// entity records) the live heap is about 100 MiB on the bench data.
const serveMemoryLimit = 192 << 20

// cacheOptions say which of serve's in-memory caches are on.
type cacheOptions struct {
	// responses: whole API responses (package httpcache).
	responses bool
	// entities: the records of the small tables (graph.EntityCache).
	entities bool
}

// apiMounts returns the routes of the API: the GraphQL endpoint and the
// REST API are mounted here, each as one func(chi.Router), for example
//
//	func(r chi.Router) { r.Handle("/graphql", graphqlHandler) }
//	func(r chi.Router) { r.Mount("/", restHandler) }
//
// The server itself serves /healthz and /readyz.
//
// Both caches are keyed on the data version, which one poller (that of
// package httpcache) reads every second until ctx ends. With
// caches.responses set, responses are kept in memory until the data version
// changes; the cache sits behind the API-key middleware, so every request
// is authenticated and rate-limited first. With caches.entities set, the
// GraphQL handler and the REST executor share one graph.EntityCache.
func apiMounts(ctx context.Context, c *cli, db *database, registry *prometheus.Registry, caches cacheOptions) []func(chi.Router) {
	auth := apikey.New(db.DB, apikey.Options{Logger: c.logger})
	// SQL statements sent by this process, for statements-per-request
	// figures (bench/).
	registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "stakegraph_sql_statements_total",
		Help: "SQL statements sent to PostgreSQL by this process.",
	}, func() float64 { return float64(store.StatementCount()) }))
	restAuth, gqlAuth := auth.Middleware, auth.Middleware
	var opts graph.Options
	if caches.responses || caches.entities {
		cache := httpcache.New(db.DB, httpcache.Options{Logger: c.logger, Registerer: registry})
		go cache.Run(ctx)
		if caches.responses {
			restAuth = func(h http.Handler) http.Handler { return auth.Middleware(cache.Middleware(h)) }
			gqlAuth = func(h http.Handler) http.Handler { return auth.Middleware(cache.GraphQLMiddleware(h)) }
		}
		if caches.entities {
			opts.Entities = graph.NewEntityCache(cache.Version, 0)
			registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "stakegraph_entity_cache_entries",
				Help: "Records of the small tables kept in memory (graph.EntityCache).",
			}, func() float64 { return float64(opts.Entities.Len()) }))
		}
	}
	// The GraphQL playground page is served without a key, so that a
	// browser can open it; its queries need one.
	gqlOpts := opts
	gqlOpts.Logger, gqlOpts.Authenticate = c.logger, gqlAuth
	gql := graph.NewHandler(db.DB, gqlOpts)
	// The REST API runs each route's operation through the same schema, and
	// shares the key cache and rate limits with /graphql.
	restOpts := opts
	restOpts.Logger = c.logger
	api := rest.NewHandler(rest.Config{
		Executor:     graph.NewExecutor(db.DB, restOpts),
		Authenticate: restAuth,
		Version:      version.Version,
	})
	return []func(chi.Router){
		func(r chi.Router) { r.Handle("/graphql", gql) },
		func(r chi.Router) { r.Mount("/", api) },
	}
}
