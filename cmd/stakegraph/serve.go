package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stakegraph/stakegraph/apikey"
	"github.com/stakegraph/stakegraph/graph"
	"github.com/stakegraph/stakegraph/httpcache"
	"github.com/stakegraph/stakegraph/internal/version"
	"github.com/stakegraph/stakegraph/replicas"
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
		pprof := fs.Bool("pprof", envOr(c.getenv, "STAKEGRAPH_PPROF", "false") == "true",
			"serve Go profiles under /debug/pprof/ on the admin listener, which must not be public (env STAKEGRAPH_PPROF)")
		cache := fs.Bool("response-cache", envOr(c.getenv, "STAKEGRAPH_RESPONSE_CACHE", "true") == "true",
			"cache API responses in memory until the data version changes (env STAKEGRAPH_RESPONSE_CACHE)")
		entities := fs.Bool("entity-cache", envOr(c.getenv, "STAKEGRAPH_ENTITY_CACHE", "true") == "true",
			"keep the records of the small tables (AVS, operators, strategies, their shares and registrations) in memory until the data version changes (env STAKEGRAPH_ENTITY_CACHE)")
		var limitErrs []error
		cacheBytes := intFlag(fs, c, &limitErrs, "response-cache-bytes", "STAKEGRAPH_RESPONSE_CACHE_BYTES", httpcache.DefaultMaxBytes,
			"memory the response cache may hold, in `bytes` of compressed responses; the least recently used are dropped beyond it (env STAKEGRAPH_RESPONSE_CACHE_BYTES)")
		requestTimeout := durationFlag(fs, c, &limitErrs, "request-timeout", "STAKEGRAPH_REQUEST_TIMEOUT", server.DefaultRequestTimeout,
			"`duration` an API request may take; past it its database work is cancelled and it is answered 504 (code gateway_timeout); 0 means no limit (env STAKEGRAPH_REQUEST_TIMEOUT)")
		statementTimeout := durationFlag(fs, c, &limitErrs, "statement-timeout", "STAKEGRAPH_STATEMENT_TIMEOUT", defaultStatementTimeout,
			"PostgreSQL statement_timeout (a `duration`) of the API's database connections, not the indexer's; a statement past it fails the request with 504; 0 means none (env STAKEGRAPH_STATEMENT_TIMEOUT)")
		connsPerRequest := intFlag(fs, c, &limitErrs, "db-conns-per-request", "STAKEGRAPH_DB_CONNS_PER_REQUEST", server.DefaultConnsPerRequest,
			fmt.Sprintf("most database connections (of the API's %d) one request uses at once; 0 means no limit (env STAKEGRAPH_DB_CONNS_PER_REQUEST)", store.DefaultPool.MaxOpenConns))
		concurrentRequests := intFlag(fs, c, &limitErrs, "concurrent-requests", "STAKEGRAPH_CONCURRENT_REQUESTS", server.DefaultConcurrentRequests(),
			"most API requests that run at once, of those the response cache does not answer; the others wait their turn in arrival order (until their deadline); 0 means no limit (env STAKEGRAPH_CONCURRENT_REQUESTS)")
		var gql graphLimits
		gql.body = intFlag(fs, c, &limitErrs, "graphql-body-limit", "STAKEGRAPH_GRAPHQL_BODY_LIMIT", graph.DefaultBodyLimit,
			"largest /graphql request body (and GET query string) in `bytes`; a larger one is answered 413 (env STAKEGRAPH_GRAPHQL_BODY_LIMIT)")
		gql.fields = intFlag(fs, c, &limitErrs, "graphql-field-limit", "STAKEGRAPH_GRAPHQL_FIELD_LIMIT", graph.DefaultFieldLimit,
			"most fields, aliases included, one GraphQL document may select, checked before validation (env STAKEGRAPH_GRAPHQL_FIELD_LIMIT)")
		gql.complexity = intFlag(fs, c, &limitErrs, "graphql-complexity-limit", "STAKEGRAPH_GRAPHQL_COMPLEXITY_LIMIT", graph.DefaultComplexityLimit,
			"largest complexity of a GraphQL operation: about the values it can return, lists counted at their page size, introspection included (env STAKEGRAPH_GRAPHQL_COMPLEXITY_LIMIT)")
		gql.statements = intFlag(fs, c, &limitErrs, "graphql-statement-limit", "STAKEGRAPH_GRAPHQL_STATEMENT_LIMIT", graph.DefaultStatementLimit,
			"most database reads one GraphQL request may make before it is stopped (env STAKEGRAPH_GRAPHQL_STATEMENT_LIMIT)")
		versionPoll := durationFlag(fs, c, &limitErrs, "version-poll-interval", "STAKEGRAPH_VERSION_POLL_INTERVAL", time.Second,
			"how often the caches and the replica router read the databases' data versions, beside the announcements PostgreSQL sends on every change (`duration`) (env STAKEGRAPH_VERSION_POLL_INTERVAL)")
		var replicaURLs urlList
		if v := c.getenv("STAKEGRAPH_REPLICA_URLS"); v != "" {
			for _, u := range strings.Split(v, ",") {
				if u = strings.TrimSpace(u); u != "" {
					replicaURLs.urls = append(replicaURLs.urls, u)
				}
			}
		}
		fs.Var(&replicaURLs, "replica-url",
			"PostgreSQL read replica `URL` (repeatable): the API reads from the healthy replicas, and from the primary (the database URL) when none is; keys and the indexer use the primary (env STAKEGRAPH_REPLICA_URLS, comma-separated)")
		redisURL := fs.String("redis-url", c.getenv("STAKEGRAPH_REDIS_URL"),
			"Redis `URL` (redis://, rediss:// or unix://) holding the API keys' rate limits, so that every instance enforces one limit per key; while Redis cannot be reached each instance limits in its own memory (env STAKEGRAPH_REDIS_URL)")
		index := registerIndexFlags(fs, c, false)
		return func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected arguments %q", args)
			}
			if err := errors.Join(limitErrs...); err != nil {
				return usagef("%v", err)
			}
			switch {
			case *requestTimeout < 0:
				return usagef("--request-timeout must not be negative")
			case *statementTimeout < 0:
				return usagef("--statement-timeout must not be negative")
			case *versionPoll <= 0:
				return usagef("--version-poll-interval must be positive")
			case *cacheBytes <= 0:
				return usagef("--response-cache-bytes must be positive")
			case *connsPerRequest < 0:
				return usagef("--db-conns-per-request must not be negative")
			case *concurrentRequests < 0:
				return usagef("--concurrent-requests must not be negative")
			case *gql.body <= 0 || *gql.fields <= 0 || *gql.complexity <= 0 || *gql.statements <= 0:
				return usagef("--graphql-body-limit, --graphql-field-limit, --graphql-complexity-limit and --graphql-statement-limit must be positive")
			}
			var shared apikey.SharedLimiter
			if *redisURL != "" {
				client, err := apikey.NewRedisClient(*redisURL)
				if err != nil {
					return usagef("--redis-url: %v", err)
				}
				defer client.Close()
				shared = apikey.NewRedisLimiter(client)
			}
			if c.getenv("GOMEMLIMIT") == "" {
				debug.SetMemoryLimit(serveMemoryLimit)
			}
			// This pool migrates the database and, with --index, is the
			// indexer's: its statements may run long.
			db, err := c.openDatabase(ctx)
			if err != nil {
				return err
			}
			// The local cluster, when used, lives as long as the server.
			defer db.Close()
			pools, err := openServePools(ctx, db.DB, *statementTimeout, *cache || *entities, replicaURLs.urls)
			if err != nil {
				return err
			}
			defer pools.Close()
			var router *replicas.Router
			if len(pools.replicas) > 0 {
				router = replicas.New(replicas.Database{DB: pools.api, Poll: pools.versions}, pools.replicas, *versionPoll, c.logger)
				router.Poll(ctx)
				go router.Run(ctx)
			}
			registry := prometheus.NewRegistry()
			stopIndexer, err := startIndexer(ctx, c, index, db.DB, registry)
			if err != nil {
				return err
			}
			defer stopIndexer()
			if !index.enabled {
				// Nothing uses the migrations' connections any more.
				db.SetMaxIdleConns(0)
			}
			admin := *adminAddr
			if admin == "off" {
				admin = ""
			}
			srv := server.New(
				server.Config{
					Addr: *addr, AdminAddr: admin, Pprof: *pprof, Logger: c.logger,
					RequestTimeout:  orNegative(*requestTimeout),
					ConnsPerRequest: orNegative(*connsPerRequest),
				},
				serveDeps(pools, registry, router, apiMounts(ctx, c, pools, registry, cacheOptions{responses: *cache, responseBytes: int64(*cacheBytes), entities: *entities, poll: *versionPoll}, gql, server.NewRunQueue(*concurrentRequests), shared, router)),
			)
			return srv.Run(ctx)
		}
	},
}

// followAnnouncements applies the database's announcements of changed
// versions (store.ListenVersions) at once, until ctx ends: a new data
// version is polled by the router (until a replica has replayed it, for a
// short while) and then by the response cache (pollCache, nil without
// one); a change to the keys makes auth check them. The pollers keep
// running beside it, for announcements lost while the connection was down.
func followAnnouncements(ctx context.Context, logger *slog.Logger, db *store.DB, router *replicas.Router, pollCache func(context.Context) error, auth *apikey.Authenticator) {
	changed := func(channel string, version int64) {
		switch channel {
		case store.APIKeysVersionChannel:
			auth.KeysChanged(ctx)
		case store.DataVersionChannel:
			if router != nil {
				// A replica replays the change a moment after the primary
				// announces it.
				for range 10 {
					router.Poll(ctx)
					if v, err := router.DataVersion(ctx); err == nil && (version < 0 || v >= version) {
						break
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			if pollCache != nil {
				_ = pollCache(ctx)
			}
		}
	}
	for {
		err := db.ListenVersions(ctx, changed)
		if ctx.Err() != nil {
			return
		}
		logger.Warn("cannot listen for the database's announcements of new versions; relying on polls", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
	}
}

// serveDeps returns the server's dependencies: with read replicas, /readyz
// reports every database and the metrics include theirs.
func serveDeps(pools *servePools, registry *prometheus.Registry, router *replicas.Router, mounts []func(chi.Router)) server.Deps {
	deps := server.Deps{DB: pools.api, Registry: registry, Mounts: mounts}
	if router != nil {
		deps.Databases = router.Readiness
		registry.MustRegister(router.Collectors()...)
	}
	return deps
}

// urlList is a repeatable flag of URLs whose default (from the
// environment) the first use of the flag replaces.
type urlList struct {
	urls []string
	set  bool // by the flag
}

func (l *urlList) String() string { return strings.Join(l.urls, ",") }

func (l *urlList) Set(v string) error {
	if v == "" {
		return errors.New("empty URL")
	}
	if !l.set {
		l.urls, l.set = nil, true
	}
	l.urls = append(l.urls, v)
	return nil
}

// defaultStatementTimeout is serve's --statement-timeout: half the
// request deadline, so that a slow statement fails with the timeout error
// while its request still has time to answer.
const defaultStatementTimeout = 5 * time.Second

// servePools are the database pools of the API, beside the pool that
// migrates the database and runs the indexer.
type servePools struct {
	// api serves the requests; its connections carry the statement
	// timeout.
	api *store.DB
	// versions is the data-version poller's one connection (nil without
	// caches or replicas): with a connection of its own, the poll never
	// waits behind requests that hold every connection of api, and a
	// commit still reaches the caches within a second when the server is
	// saturated.
	versions *store.DB
	// replicas are the read replicas' pools, each with a connection for
	// polls of its own.
	replicas []replicas.Database
}

// openServePools opens the pools of the API on the database of db and on
// each read replica at replicaURLs, with PostgreSQL's statement_timeout set
// to statementTimeout on every connection (none when zero). A replica that
// cannot be reached at start is an error: its URL is probably wrong.
func openServePools(ctx context.Context, db *store.DB, statementTimeout time.Duration, caches bool, replicaURLs []string) (p *servePools, err error) {
	cfg := store.DefaultPool
	cfg.StatementTimeout = statementTimeout
	pollCfg := cfg
	pollCfg.MaxOpenConns, pollCfg.MaxIdleConns = 1, 1
	p = &servePools{}
	defer func() {
		if err != nil {
			p.Close()
		}
	}()
	if p.api, err = db.NewPool(ctx, cfg); err != nil {
		return nil, fmt.Errorf("the API's database pool: %w", err)
	}
	if caches || len(replicaURLs) > 0 {
		if p.versions, err = db.NewPool(ctx, pollCfg); err != nil {
			return nil, fmt.Errorf("the data-version poller's database connection: %w", err)
		}
	}
	for i, url := range replicaURLs {
		var r replicas.Database
		if r.DB, err = db.NewPoolOn(ctx, url, cfg); err != nil {
			return nil, fmt.Errorf("read replica %d: %w", i+1, redactURLError(err, url))
		}
		p.replicas = append(p.replicas, r)
		if p.replicas[i].Poll, err = db.NewPoolOn(ctx, url, pollCfg); err != nil {
			return nil, fmt.Errorf("read replica %d: %w", i+1, redactURLError(err, url))
		}
	}
	return p, nil
}

// Close closes the pools.
func (p *servePools) Close() {
	for _, db := range append([]*store.DB{p.api, p.versions}, databases(p.replicas)...) {
		if db != nil {
			db.Close()
		}
	}
}

// databases returns the handles of rs.
func databases(rs []replicas.Database) []*store.DB {
	var out []*store.DB
	for _, r := range rs {
		out = append(out, r.DB, r.Poll)
	}
	return out
}

// orNegative returns v, or -1 for zero: the flags' "no limit", which
// server.Config spells as a negative value (its zero is the default).
func orNegative[T int | time.Duration](v T) T {
	if v == 0 {
		return -1
	}
	return v
}

// durationFlag defines a duration flag whose default the environment
// variable env sets; a malformed value of it is added to errs, for the
// command to report.
func durationFlag(fs *flag.FlagSet, c *cli, errs *[]error, name, env string, fallback time.Duration, usage string) *time.Duration {
	if v := c.getenv(env); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			*errs = append(*errs, fmt.Errorf("%s=%q is not a duration such as 10s or 500ms", env, v))
		} else {
			fallback = d
		}
	}
	return fs.Duration(name, fallback, usage)
}

// intFlag defines an integer flag whose default the environment variable
// env sets; a malformed value of it is added to errs, for the command to
// report.
func intFlag(fs *flag.FlagSet, c *cli, errs *[]error, name, env string, fallback int, usage string) *int {
	if v := c.getenv(env); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			*errs = append(*errs, fmt.Errorf("%s=%q is not an integer", env, v))
		} else {
			fallback = n
		}
	}
	return fs.Int(name, fallback, usage)
}

// serveMemoryLimit is serve's soft memory limit unless GOMEMLIMIT sets one:
// with the response cache full (then 64 MiB), the garbage collector's
// default pacing let the heap double between collections, to a peak RSS of
// 281 MiB in the 64-client soak; near this limit it collects sooner
// instead. With both caches full (16 MiB of responses, about 40 MiB of
// entity records) the live heap is about 80 MiB on the bench data.
const serveMemoryLimit = 192 << 20

// cacheOptions say which of serve's in-memory caches are on.
type cacheOptions struct {
	// responses: whole API responses (package httpcache).
	responses bool
	// responseBytes bounds the response cache's memory.
	responseBytes int64
	// entities: the records of the small tables (graph.EntityCache).
	entities bool
	// poll is how often the data version is read besides announcements.
	poll time.Duration
}

// graphLimits are the limits of /graphql that serve's flags set; the REST
// routes' fixed operations run without them.
type graphLimits struct {
	body, fields, complexity, statements *int
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
// package httpcache) reads every second until ctx ends, through a
// connection of its own (pools.versions). With
// caches.responses set, responses are kept in memory until the data version
// changes; the cache sits behind the API-key middleware, so every request
// is authenticated and rate-limited first. With caches.entities set, the
// GraphQL handler and the REST executor share one graph.EntityCache.
// Behind the cache, runs lets a bounded number of requests run at once
// (nil for no bound).
func apiMounts(ctx context.Context, c *cli, pools *servePools, registry *prometheus.Registry, caches cacheOptions, limits graphLimits, runs *server.RunQueue, shared apikey.SharedLimiter, router *replicas.Router) []func(chi.Router) {
	db := pools.api
	auth := apikey.New(db, apikey.Options{Logger: c.logger, Shared: shared})
	if shared != nil {
		registry.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "stakegraph_rate_limit_shared_up",
				Help: "1 while the shared rate limiter (Redis) works, else 0: the keys' limits are then enforced by each instance on its own.",
			}, func() float64 {
				if auth.SharedLimiterUp() {
					return 1
				}
				return 0
			}),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "stakegraph_rate_limit_fallbacks_total",
				Help: "Requests rate-limited in this instance's memory because the shared rate limiter (Redis) could not be reached.",
			}, func() float64 { return float64(auth.SharedFallbacks()) }),
		)
	}
	// SQL statements sent by this process, for statements-per-request
	// figures (bench/).
	registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "stakegraph_sql_statements_total",
		Help: "SQL statements sent to PostgreSQL by this process.",
	}, func() float64 { return float64(db.StatementCount()) }))
	// With read replicas each request gets its database after the key
	// check (which reads the primary) and before the cache, which keys on
	// that database's data version.
	route := func(h http.Handler) http.Handler { return h }
	var opts graph.Options
	var versions httpcache.VersionSource = pools.versions
	var requestVersion func(*http.Request) (int64, bool)
	if router != nil {
		route = router.Middleware
		versions = router
		requestVersion = func(r *http.Request) (int64, bool) {
			_, v, known := replicas.ReadDB(r.Context(), nil)
			return v, known
		}
		opts.ReadDB = func(ctx context.Context) (*store.DB, int64, bool) { return replicas.ReadDB(ctx, db) }
	}
	registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "stakegraph_api_requests_waiting",
		Help: "API requests waiting for their turn to run (--concurrent-requests).",
	}, func() float64 { return float64(runs.Waiting()) }))
	restAuth := func(h http.Handler) http.Handler { return auth.Middleware(route(runs.Middleware(h))) }
	gqlAuth := restAuth
	var pollCache func(context.Context) error
	if caches.responses || caches.entities {
		cache := httpcache.New(versions, httpcache.Options{
			Logger: c.logger, Registerer: registry,
			// GraphQL responses are kept apart by the media type /graphql
			// chooses from the Accept header.
			GraphQLMediaType: graph.ResponseMediaType,
			RequestVersion:   requestVersion,
			PollInterval:     caches.poll,
			MaxBytes:         caches.responseBytes,
		})
		go cache.Run(ctx)
		pollCache = cache.Poll
		if caches.responses {
			restAuth = func(h http.Handler) http.Handler { return auth.Middleware(route(cache.Middleware(runs.Middleware(h)))) }
			gqlAuth = func(h http.Handler) http.Handler {
				return auth.Middleware(route(cache.GraphQLMiddleware(runs.Middleware(h))))
			}
		}
		if caches.entities {
			opts.Entities = graph.NewEntityCache(cache.Version, 0)
			registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "stakegraph_entity_cache_entries",
				Help: "Records of the small tables kept in memory (graph.EntityCache).",
			}, func() float64 { return float64(opts.Entities.Len()) }))
		}
	}
	go followAnnouncements(ctx, c.logger, db, router, pollCache, auth)
	// How often the compiled REST operations and the interpreter of
	// /graphql answer, and how often they hand a request to gqlgen's
	// executor.
	for _, run := range []struct {
		path, result string
		count        func(graph.FastPathRuns) int64
	}{
		{"compiled", "answered", func(r graph.FastPathRuns) int64 { return r.CompiledAnswered }},
		{"compiled", "declined", func(r graph.FastPathRuns) int64 { return r.CompiledDeclined }},
		{"interpreted", "answered", func(r graph.FastPathRuns) int64 { return r.InterpretedAnswered }},
		{"interpreted", "declined", func(r graph.FastPathRuns) int64 { return r.InterpretedDeclined }},
	} {
		registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "stakegraph_graphql_fast_path_runs_total",
			Help:        "Operations run by the compiled REST operations or the interpreter of /graphql, by whether they answered or declined to gqlgen's executor (an error, introspection).",
			ConstLabels: prometheus.Labels{"path": run.path, "result": run.result},
		}, func() float64 { return float64(run.count(graph.ReadFastPathRuns())) }))
	}
	// The GraphQL playground page is served without a key, so that a
	// browser can open it; its queries need one.
	gqlOpts := opts
	gqlOpts.Logger, gqlOpts.Authenticate = c.logger, gqlAuth
	gqlOpts.BodyLimit, gqlOpts.FieldLimit = int64(*limits.body), *limits.fields
	gqlOpts.ComplexityLimit, gqlOpts.StatementLimit = *limits.complexity, *limits.statements
	gql := graph.NewHandler(db, gqlOpts)
	// The REST API runs each route's operation through the same schema, and
	// shares the key cache and rate limits with /graphql.
	restOpts := opts
	restOpts.Logger = c.logger
	api := rest.NewHandler(rest.Config{
		Executor:     graph.NewExecutor(db, restOpts),
		Authenticate: restAuth,
		Version:      version.Version,
	})
	return []func(chi.Router){
		func(r chi.Router) { r.Handle("/graphql", gql) },
		func(r chi.Router) { r.Mount("/", api) },
	}
}
