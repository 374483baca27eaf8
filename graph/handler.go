// Package graph serves the GraphQL API of stakegraph: the schema in
// ../schema.graphqls, executed by gqlgen (generated.go) with resolvers that
// read the store through per-request dataloaders, so that a nested query
// costs a number of SQL statements bounded by its shape, not by the number
// of records it returns.
//
// NewHandler returns the HTTP endpoint (GET and POST, a query cache,
// automatic persisted queries, introspection, complexity and depth limits,
// errors carrying the REST contract's codes) together with an offline
// GraphiQL playground. Executor runs fixed operations in process, for the
// REST layer, which answers each route with one operation of this schema.
package graph

import (
	"cmp"
	"log/slog"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/stakegraph/stakegraph/store"
)

// Options configure the GraphQL handler and executor. The zero value is
// usable.
type Options struct {
	// Logger receives internal errors and panics; slog.Default() when nil.
	Logger *slog.Logger
	// Now is the clock that default date ranges are computed from;
	// time.Now when nil. Tests set it to the demo data's time.
	Now func() time.Time
	// ComplexityLimit bounds the complexity of an operation: roughly the
	// number of values it can return, where a paged list counts its take
	// times its elements. Default 200000, enough for every REST route at
	// take 1000.
	ComplexityLimit int
	// DepthLimit bounds the nesting of fields; introspection does not
	// count. Default 10.
	DepthLimit int
	// QueryCacheSize is the number of parsed documents kept. Default 1000.
	QueryCacheSize int
	// PersistedQueryCacheSize is the number of automatic persisted queries
	// kept. Default 1000.
	PersistedQueryCacheSize int
	// BatchWait is how long a dataloader collects keys before it queries.
	// Default 2ms.
	BatchWait time.Duration
	// Entities, when set, keeps the records of the small tables between
	// requests (see EntityCache). Give the handler and the executor of a
	// server the same one.
	Entities *EntityCache
	// Authenticate, when set, wraps the GraphQL endpoint (for example with
	// the API-key middleware). The playground page is served without it,
	// so that a browser can load it and the user can enter a key in it.
	Authenticate func(http.Handler) http.Handler
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.ComplexityLimit = cmp.Or(o.ComplexityLimit, 200000)
	o.DepthLimit = cmp.Or(o.DepthLimit, 10)
	o.QueryCacheSize = cmp.Or(o.QueryCacheSize, 1000)
	o.PersistedQueryCacheSize = cmp.Or(o.PersistedQueryCacheSize, 1000)
	o.BatchWait = cmp.Or(o.BatchWait, 2*time.Millisecond)
	return o
}

// newSchema returns the executable schema with the complexity functions of
// its list fields.
func newSchema() graphql.ExecutableSchema {
	cfg := Config{Resolvers: &Resolver{}}
	setComplexity(&cfg.Complexity)
	return NewExecutableSchema(cfg)
}

// NewHandler returns the /graphql endpoint. A GET that accepts text/html
// (a browser) gets the GraphiQL playground; every other request is a
// GraphQL request over GET or POST, authenticated by opts.Authenticate.
func NewHandler(db *store.DB, opts Options) http.Handler {
	opts = opts.withDefaults()

	srv := handler.New(newSchema())
	srv.AddTransport(transport.GET{})
	srv.AddTransport(transport.POST{})
	srv.SetQueryCache(lru.New[*ast.QueryDocument](opts.QueryCacheSize))
	srv.Use(extension.Introspection{})
	srv.Use(extension.AutomaticPersistedQuery{Cache: lru.New[string](opts.PersistedQueryCacheSize)})
	srv.Use(extension.FixedComplexityLimit(opts.ComplexityLimit))
	srv.Use(depthLimit{max: opts.DepthLimit})
	srv.SetErrorPresenter(errorPresenter(opts.Logger))
	srv.SetRecoverFunc(recoverFunc(opts.Logger))

	var api http.Handler = withRequestLoaders(srv, db, opts)
	if opts.Authenticate != nil {
		api = opts.Authenticate(api)
	}
	playground := newPlayground()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && playground.wanted(r) {
			playground.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// withRequestLoaders gives each request its own dataloaders, which cache
// records for the request only.
func withRequestLoaders(next http.Handler, db *store.DB, opts Options) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l := newLoaders(db, opts.Now(), opts.BatchWait, opts.Entities)
		next.ServeHTTP(w, r.WithContext(withLoaders(r.Context(), l)))
	})
}

// newExecutor returns a gqlgen executor for in-process operations: the same
// schema, error presenter and recovery, and a query cache, without the
// limits meant for untrusted queries.
func newExecutor(opts Options) *executor.Executor {
	exec := executor.New(newSchema())
	exec.SetQueryCache(lru.New[*ast.QueryDocument](opts.QueryCacheSize))
	exec.Use(extension.Introspection{})
	exec.SetErrorPresenter(errorPresenter(opts.Logger))
	exec.SetRecoverFunc(recoverFunc(opts.Logger))
	return exec
}
