// Package graph serves the GraphQL API of stakegraph: the schema in
// ../schema.graphqls, executed by gqlgen (generated.go) with resolvers that
// read the store through per-request dataloaders, so that a nested query
// costs a number of SQL statements bounded by its shape, not by the number
// of records it returns.
//
// NewHandler returns the HTTP endpoint (GET and POST, a query cache,
// automatic persisted queries, introspection, errors carrying the REST
// contract's codes) together with an offline GraphiQL playground. The
// endpoint bounds what one request can cost: the size of the request, the
// tokens and fields of its document (checked before validation, which
// cannot be stopped), the complexity and depth of its operation, and the
// database statements it may issue (see Options). Executor runs fixed
// operations in process, for the REST layer, which answers each route with
// one operation of this schema.
package graph

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/lru"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/stakegraph/stakegraph/internal/cors"
	"github.com/stakegraph/stakegraph/store"
)

// Options configure the GraphQL handler and executor. The zero value is
// usable. The limits (ComplexityLimit to StatementLimit) apply to the
// handler only: the executor runs the service's own operations.
type Options struct {
	// Logger receives one line for each request whose fields failed on
	// the server's side (however many fields failed), and panics;
	// slog.Default() when nil.
	Logger *slog.Logger
	// Now is the clock that default date ranges are computed from;
	// time.Now when nil. Tests set it to the demo data's time.
	Now func() time.Time
	// ComplexityLimit bounds the complexity of an operation: roughly the
	// number of values it can return, where a paged list counts its take
	// times its elements, introspection counts the schema's types and
	// fields, and a root field or paged field costs at least 50. Default
	// 300000, enough for every REST route at take 1000 and for five full
	// introspections (about 50,000 each; the field limit refuses a sixth).
	ComplexityLimit int
	// DepthLimit bounds the nesting of fields; introspection does not
	// count. Default 10.
	DepthLimit int
	// BodyLimit bounds the size in bytes of a POST body, and of a GET
	// query string; larger requests are answered 413 (414 for GET)
	// without being read further. Default 256 KiB.
	BodyLimit int64
	// TokenLimit bounds the tokens (names, punctuation, values) of a
	// document, counted as it is parsed. Default 15000.
	TokenLimit int
	// FieldLimit bounds the fields the operations of a document select,
	// aliases included, with a fragment's fields counted at each of its
	// spreads; checked before the document is validated. Default 1000.
	FieldLimit int
	// DuplicateFieldLimit bounds how many times one response name may be
	// selected in one selection set, through fragments too and with the
	// selections of same-named fields merged (as execution merges them):
	// validation compares such fields pairwise. Checked before validation.
	// Default 20.
	DuplicateFieldLimit int
	// StatementLimit bounds the reads of the database one request may
	// make: one for each batch of a dataloader and each list or count a
	// resolver reads. A request that needs more is stopped and answered
	// with an error. Default 200.
	StatementLimit int
	// QueryCacheSize is the number of parsed documents kept. Default 1000.
	QueryCacheSize int
	// PersistedQueryCacheSize is the number of automatic persisted queries
	// kept. Default 1000.
	PersistedQueryCacheSize int
	// BatchWait is how long a dataloader collects keys before it queries.
	// Default 500µs: the keys of one level of a request come within
	// microseconds while the request has a processor, and the server runs
	// a bounded number of requests at once (server.RunQueue), so a longer
	// wait only keeps a running request idle. Against 2ms, with six
	// requests at once on 2 cores, the GraphQL staker page served
	// 517-543 → 838-906 requests/s with as many statements per request.
	BatchWait time.Duration
	// Entities, when set, keeps the records of the small tables between
	// requests (see EntityCache). Give the handler and the executor of a
	// server the same one.
	Entities *EntityCache
	// ReadDB, when set, returns the database that serves the reads of the
	// request of ctx (a read replica, say) and the data version read from
	// it (false when unknown); nil means the database the handler or
	// executor was made with. Entities is used only by requests whose
	// version is the entity cache's, so that records read from a replica
	// that lags are never kept as the newer version's.
	ReadDB func(ctx context.Context) (db *store.DB, version int64, known bool)
	// Authenticate, when set, wraps the GraphQL endpoint (for example with
	// the API-key middleware). The playground page is served without it,
	// so that a browser can load it and the user can enter a key in it.
	Authenticate func(http.Handler) http.Handler
}

// The defaults of the limits in Options that bound an untrusted request.
const (
	DefaultBodyLimit           = 256 << 10
	DefaultTokenLimit          = 15000
	DefaultFieldLimit          = 1000
	DefaultDuplicateFieldLimit = 20
	DefaultStatementLimit      = 200
	DefaultComplexityLimit     = 300000
)

// reads returns the database that serves the reads of ctx's request, fallback
// unless ReadDB says otherwise, and the entity cache it may use (nil: none).
func (o Options) reads(ctx context.Context, fallback *store.DB) (*store.DB, *EntityCache) {
	if o.ReadDB == nil {
		return fallback, o.Entities
	}
	db, v, known := o.ReadDB(ctx)
	return db, o.Entities.forVersion(v, known)
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.ComplexityLimit = cmp.Or(o.ComplexityLimit, DefaultComplexityLimit)
	o.DepthLimit = cmp.Or(o.DepthLimit, 10)
	o.QueryCacheSize = cmp.Or(o.QueryCacheSize, 1000)
	o.PersistedQueryCacheSize = cmp.Or(o.PersistedQueryCacheSize, 1000)
	o.BatchWait = cmp.Or(o.BatchWait, 500*time.Microsecond)
	o.BodyLimit = cmp.Or(o.BodyLimit, DefaultBodyLimit)
	o.TokenLimit = cmp.Or(o.TokenLimit, DefaultTokenLimit)
	o.FieldLimit = cmp.Or(o.FieldLimit, DefaultFieldLimit)
	o.DuplicateFieldLimit = cmp.Or(o.DuplicateFieldLimit, DefaultDuplicateFieldLimit)
	o.StatementLimit = cmp.Or(o.StatementLimit, DefaultStatementLimit)
	return o
}

// newSchema returns the executable schema with the complexity functions of
// its list fields.
func newSchema() graphql.ExecutableSchema {
	cfg := Config{Resolvers: &Resolver{}}
	setComplexity(&cfg.Complexity)
	return NewExecutableSchema(cfg)
}

// AllowedMethods are the methods of the /graphql endpoint, its Allow
// header.
const AllowedMethods = "GET, HEAD, POST, OPTIONS"

// NewHandler returns the /graphql endpoint. A GET or HEAD that accepts
// text/html (a browser) gets the GraphiQL playground; an OPTIONS request
// (a browser's CORS preflight) is answered 204 before the key check, as
// the REST API answers it (package cors); every other request is a GraphQL
// request over GET or POST, authenticated by opts.Authenticate. Every
// response allows any origin and says Vary: Accept, since its media type
// follows the Accept header (see ResponseMediaType).
func NewHandler(db *store.DB, opts Options) http.Handler {
	opts = opts.withDefaults()

	es := newSchema()
	exec := executor.New(es)
	queries := sizeBoundedCache[*ast.QueryDocument]{
		Cache: lru.New[*ast.QueryDocument](opts.QueryCacheSize),
		size:  func(query string, _ *ast.QueryDocument) int { return len(query) },
	}
	exec.SetQueryCache(queries)
	exec.SetParserTokenLimit(opts.TokenLimit)
	exec.Use(extension.Introspection{})
	exec.Use(extension.AutomaticPersistedQuery{Cache: sizeBoundedCache[string]{
		Cache: lru.New[string](opts.PersistedQueryCacheSize),
		size:  func(_ string, query string) int { return len(query) },
	}})
	// After the persisted query extension, which supplies the query of a
	// request that sends only its hash.
	exec.Use(documentLimits{
		tokens:     opts.TokenLimit,
		fields:     opts.FieldLimit,
		duplicates: opts.DuplicateFieldLimit,
		validated:  queries,
	})
	exec.Use(newCostLimit(es, opts.ComplexityLimit))
	exec.Use(depthLimit{max: opts.DepthLimit})
	exec.SetErrorPresenter(errorPresenter())
	exec.SetRecoverFunc(recoverFunc(opts.Logger))

	var api http.Handler = &endpoint{exec: exec, schema: es.(*executableSchema), db: db, opts: opts}
	if opts.Authenticate != nil {
		api = opts.Authenticate(api)
	}
	playground := newPlayground()
	return cors.Middleware(AllowedMethods)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Vary", "Accept")
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && playground.wanted(r) {
			playground.ServeHTTP(w, r)
			return
		}
		// Bound the body before anything (authentication, the response
		// cache) reads it; the endpoint answers a body over the limit.
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(w, r.Body, opts.BodyLimit)
		}
		api.ServeHTTP(w, r)
	}))
}

// ResponseMediaType returns the media type of the endpoint's response to
// r, which it chooses from r's Accept header: application/json or
// application/graphql-response+json. The response cache keeps GraphQL
// responses apart by it.
func ResponseMediaType(r *http.Request) string { return responseMediaType(r) }

// maxCachedQueryBytes bounds the queries whose parsed documents are kept
// (and of the queries kept for automatic persisted queries), so that the
// caches, of QueryCacheSize and PersistedQueryCacheSize entries, stay small
// whatever the queries: a larger query is parsed and validated at each
// request, which the document limits keep cheap.
const maxCachedQueryBytes = 16 << 10

// sizeBoundedCache is a cache that keeps only entries of at most
// maxCachedQueryBytes, by size.
type sizeBoundedCache[T any] struct {
	graphql.Cache[T]
	size func(key string, value T) int
}

func (c sizeBoundedCache[T]) Add(ctx context.Context, key string, value T) {
	if c.size(key, value) <= maxCachedQueryBytes {
		c.Cache.Add(ctx, key, value)
	}
}

// newExecutor returns a gqlgen executor for in-process operations: the same
// schema, error presenter and recovery, and a query cache, without the
// limits meant for untrusted queries.
func newExecutor(opts Options) *executor.Executor {
	return newExecutorOf(newSchema(), opts)
}

// newExecutorOf is newExecutor over schema.
func newExecutorOf(schema graphql.ExecutableSchema, opts Options) *executor.Executor {
	exec := executor.New(schema)
	exec.SetQueryCache(lru.New[*ast.QueryDocument](opts.QueryCacheSize))
	exec.Use(extension.Introspection{})
	exec.SetErrorPresenter(errorPresenter())
	exec.SetRecoverFunc(recoverFunc(opts.Logger))
	return exec
}
