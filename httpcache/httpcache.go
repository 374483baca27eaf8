// Package httpcache keeps whole successful API responses in memory and
// serves them again for as long as the database's data is unchanged.
//
// Freshness comes from the database's data version
// (service_state.data_version), which every commit of the indexer or the
// seeder increments. Run polls it in the background, once a second by
// default, so a cached answer costs no SQL statement at all. When the version
// changes, every entry is dropped. When it cannot be read (the database is
// down) the cache steps aside until it can: every request goes to the
// handler, which answers 503 as it would without a cache, and nothing is
// stored or served from memory. Entries also expire after a TTL, which
// bounds how stale a response may get whose content depends on the clock
// rather than on the data, such as a default "last 7 days" date range.
//
// The cache knows nothing of the routes it fronts. Middleware keys REST
// requests by path and normalized query string; GraphQLMiddleware keys
// GraphQL requests by their body (POST) or query string (GET) and by the
// media type the endpoint negotiates from the Accept header
// (Options.GraphQLMediaType), and its responses say Vary: Accept. Only 200
// responses are stored, and for GraphQL only those without errors.
// Concurrent requests for a response that is not cached yet wait for the
// first one instead of all running the same queries.
//
// Mount the cache behind the API-key middleware, so that every request is
// authenticated and counted against its key's rate limit before a cached
// answer is given.
//
// Cached responses carry a strong ETag (a hash of the body), Cache-Control
// and X-Cache (HIT, MISS or BYPASS); a request whose If-None-Match names the
// current ETag gets 304 Not Modified. A response is compressed once, when
// it is stored, and only that gzip copy is kept: clients that accept gzip
// (nearly all) get it as it is, the others get it decompressed.
package httpcache

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/stakegraph/stakegraph/internal/respond"
)

// VersionSource reads the database's data version. *store.DB is one. Give
// the cache a handle with a connection of its own (a one-connection pool,
// from store's DB.NewPool), so that its polls never wait behind requests
// that hold every connection of the API's pool and a commit still shows
// within a poll interval when the server is saturated.
type VersionSource interface {
	DataVersion(ctx context.Context) (int64, error)
}

// DefaultMaxBytes is the default bound of a Cache's memory: 16 MiB of gzip
// copies, about 7,500 responses of the bench workload. Twice as much bought
// no more than a few points of hit rate there, and left the garbage
// collector half the room under the server's memory limit: it then ran
// about twice as often, and the routes measured after the cache filled
// answered up to half as many requests.
const DefaultMaxBytes = 16 << 20

// Options tune a Cache. Zero values select the defaults.
type Options struct {
	// MaxBytes bounds the memory held by entries (their gzip copies); the
	// least recently used entries are dropped beyond it. Default
	// DefaultMaxBytes.
	MaxBytes int64
	// MaxEntryBytes is the largest body that is stored. Default 4 MiB.
	MaxEntryBytes int
	// TTL is how long an entry may be served while the data version stays
	// the same. Default 30 s.
	TTL time.Duration
	// MaxAge is the max-age of the Cache-Control header of cached
	// responses, for clients. Default 5 s; negative sends no-cache, which
	// makes clients revalidate with If-None-Match every time.
	MaxAge time.Duration
	// PollInterval is how often Run reads the data version. Default 1 s.
	PollInterval time.Duration
	// MaxRequestBytes is the largest GraphQL POST body that is cached;
	// larger ones pass through. Default 64 KiB.
	MaxRequestBytes int64
	// GraphQLMediaType returns the media type of the GraphQL endpoint's
	// response to a request, which the endpoint chooses from the request's
	// Accept header (graph.ResponseMediaType). GraphQLMiddleware keeps the
	// responses of each media type apart, so that a client is never given
	// a response in a media type it did not ask for. When nil, the Accept
	// header as sent stands for the media type: as safe, but requests that
	// spell the same choice differently do not share entries.
	GraphQLMediaType func(r *http.Request) string
	// RequestVersion, when set, returns the data version of the database
	// that will serve r (one of several read replicas, say), and false
	// when it is not known. A request whose version is not the cache's
	// passes through uncached (X-Cache: BYPASS): its answer may belong to
	// another version. When nil, every request is served from the
	// database whose version the cache polls.
	RequestVersion func(r *http.Request) (int64, bool)
	// Registerer, when set, receives the cache's Prometheus metrics.
	Registerer prometheus.Registerer
	// Logger receives version changes and poll failures; slog.Default()
	// when nil.
	Logger *slog.Logger
	// Now returns the current time; tests set it. Default time.Now.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxEntryBytes <= 0 {
		o.MaxEntryBytes = 4 << 20
	}
	if o.TTL <= 0 {
		o.TTL = 30 * time.Second
	}
	if o.MaxAge == 0 {
		o.MaxAge = 5 * time.Second
	}
	if o.PollInterval <= 0 {
		o.PollInterval = time.Second
	}
	if o.MaxRequestBytes <= 0 {
		o.MaxRequestBytes = 64 << 10
	}
	if o.GraphQLMediaType == nil {
		o.GraphQLMediaType = func(r *http.Request) string { return strings.TrimSpace(r.Header.Get("Accept")) }
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Cache is an in-memory cache of API responses keyed on the data version.
// It is safe for concurrent use.
type Cache struct {
	src          VersionSource
	opts         Options
	cacheControl string
	metrics      *metrics

	pollMu sync.Mutex // serialises Poll

	// seen is version and known as the last poll left them, for
	// Version, which every entity lookup calls: read without mu, which
	// a page of a thousand lookups at once would contend for.
	seen atomic.Pointer[seenVersion]

	mu      sync.Mutex
	version int64
	known   bool // version was read by the last poll
	// pollFailed says the last poll failed, for logging transitions only.
	pollFailed bool
	entries    map[string]*list.Element
	lru        *list.List // of *entry, most recently used first
	bytes      int64
	// flights runs one handler call per key and data version at a time
	// for the requests that missed.
	flights singleflight.Group
}

// entry is one stored response. Only its gzip copy is kept: API responses
// compress five to ten times, so the cache holds that many more of them,
// and nearly every client accepts gzip; the body is decompressed for the
// others.
type entry struct {
	key         string
	contentType string
	gzipBody    []byte
	bodyLen     int    // of the uncompressed body
	etag        string // of the uncompressed body
	gzipETag    string // of gzipBody
	expires     time.Time
	// varyAccept says the response depends on the Accept header (it is
	// stored under the negotiated media type).
	varyAccept bool
}

// size is the memory e holds: its body and key, the entry, its list
// element and its map slot (the key's bytes are shared by the map).
func (e *entry) size() int64 { return int64(len(e.gzipBody) + len(e.key) + 400) }

// body returns the uncompressed body.
func (e *entry) body() ([]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(e.gzipBody))
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, e.bodyLen)
	buf := bytes.NewBuffer(out)
	if _, err := buf.ReadFrom(zr); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// flightResult is what a flight computed: the entry (nil when the response
// was not cacheable), the recorded response, and the token of the request
// that started it, so that this request alone replays an uncacheable
// response and the others compute their own.
type flightResult struct {
	entry *entry
	rec   *recorder
	owner *int
	// panicked holds the value the handler panicked with, re-raised in
	// every request that shared the flight.
	panicked any
}

// New returns a cache whose freshness follows src. It serves nothing
// (every request bypasses it) until Run or Poll has read the version.
func New(src VersionSource, opts Options) *Cache {
	opts = opts.withDefaults()
	c := &Cache{
		src:     src,
		opts:    opts,
		entries: map[string]*list.Element{},
		lru:     list.New(),
		metrics: newMetrics(opts.Registerer),
	}
	if opts.MaxAge < 0 {
		c.cacheControl = "private, no-cache"
	} else {
		c.cacheControl = "private, max-age=" + strconv.Itoa(int(opts.MaxAge/time.Second))
	}
	return c
}

// Run polls the data version every PollInterval until ctx ends.
func (c *Cache) Run(ctx context.Context) {
	t := time.NewTicker(c.opts.PollInterval)
	defer t.Stop()
	for {
		_ = c.Poll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Poll reads the data version once. A new version drops every entry; a
// failed read makes the cache step aside until a read succeeds again (the
// entries are kept, and served again if the version turns out unchanged).
func (c *Cache) Poll(ctx context.Context) error {
	c.pollMu.Lock()
	defer c.pollMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, max(2*time.Second, c.opts.PollInterval))
	defer cancel()
	v, err := c.src.DataVersion(ctx)

	c.mu.Lock()
	failedBefore := c.pollFailed
	c.pollFailed = err != nil
	c.known = err == nil
	if err == nil && v != c.version {
		c.version = v
		c.clearLocked()
	}
	c.seen.Store(&seenVersion{version: c.version, known: c.known})
	c.mu.Unlock()

	switch {
	case err != nil && !failedBefore:
		c.opts.Logger.WarnContext(ctx, "response cache bypassed: cannot read the data version", "error", err)
	case err == nil && failedBefore:
		c.opts.Logger.InfoContext(ctx, "response cache back in use", "data_version", v)
	}
	if err == nil {
		c.metrics.version.Set(float64(v))
	}
	return err
}

// clearLocked drops every entry. c.mu is held.
func (c *Cache) clearLocked() {
	clear(c.entries)
	c.lru.Init()
	c.bytes = 0
	c.metrics.bytes.Set(0)
	c.metrics.entries.Set(0)
}

// Version returns the data version the last poll read, and false while it
// is unknown (before the first poll, or while the database cannot be read).
// Other caches keyed on the data version can share the poller through it.
func (c *Cache) Version() (int64, bool) { return c.current() }

// seenVersion is a data version and whether it is known.
type seenVersion struct {
	version int64
	known   bool
}

// current returns the data version and whether it is known.
func (c *Cache) current() (int64, bool) {
	if s := c.seen.Load(); s != nil {
		return s.version, s.known
	}
	return 0, false
}

// get returns the live entry of key at version, or nil.
func (c *Cache) get(version int64, key string) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known || c.version != version {
		return nil
	}
	el, ok := c.entries[key]
	if !ok {
		return nil
	}
	e := el.Value.(*entry)
	if c.opts.Now().After(e.expires) {
		c.removeLocked(el)
		return nil
	}
	c.lru.MoveToFront(el)
	return e
}

// put stores e unless the version has changed since the response was
// computed, evicting the least recently used entries beyond MaxBytes.
func (c *Cache) put(version int64, e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.known || c.version != version {
		return
	}
	if el, ok := c.entries[e.key]; ok {
		c.removeLocked(el)
	}
	c.entries[e.key] = c.lru.PushFront(e)
	c.bytes += e.size()
	for c.bytes > c.opts.MaxBytes && c.lru.Len() > 1 {
		c.removeLocked(c.lru.Back())
		c.metrics.evictions.Inc()
	}
	c.metrics.bytes.Set(float64(c.bytes))
	c.metrics.entries.Set(float64(c.lru.Len()))
}

func (c *Cache) removeLocked(el *list.Element) {
	e := c.lru.Remove(el).(*entry)
	delete(c.entries, e.key)
	c.bytes -= e.size()
	c.metrics.bytes.Set(float64(c.bytes))
	c.metrics.entries.Set(float64(c.lru.Len()))
}

// Middleware caches the GET (and serves the HEAD) responses of a REST API,
// keyed by path and query string. The query is normalized the way the
// handlers read it: parameters in name order, only the first value of a
// repeated parameter, and empty values left out.
func (c *Cache) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		// REST responses are application/json whatever the Accept header
		// says, so it is not part of the key.
		key := "rest " + r.URL.Path + "?" + normalizeQuery(r.URL.Query())
		c.handle(w, r, key, nil, false, next, func(rec *recorder) bool { return true })
	})
}

// GraphQLMiddleware caches the responses of a GraphQL endpoint to POST
// requests with a JSON body (keyed by the body) and to GET requests (keyed
// by the normalized query string), apart for each media type the endpoint
// negotiates (Options.GraphQLMediaType); its responses say Vary: Accept.
// Responses that carry errors are not stored.
func (c *Cache) GraphQLMiddleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var key string
		var body []byte
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			key = "graphql ?" + normalizeQuery(r.URL.Query())
		case http.MethodPost:
			mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if mt != "application/json" || r.Body == nil {
				next.ServeHTTP(w, r)
				return
			}
			var err error
			body, err = io.ReadAll(io.LimitReader(r.Body, c.opts.MaxRequestBytes+1))
			rest := r.Body
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(body), rest), rest}
			if err != nil || int64(len(body)) > c.opts.MaxRequestBytes {
				next.ServeHTTP(w, r)
				return
			}
			sum := sha256.Sum256(body)
			key = "graphql post " + hex.EncodeToString(sum[:])
		default:
			next.ServeHTTP(w, r)
			return
		}
		key += " as " + c.opts.GraphQLMediaType(r)
		c.handle(w, r, key, body, true, next, func(rec *recorder) bool { return !hasGraphQLErrors(rec.body.Bytes()) })
	})
}

// handle answers r from the cache, or runs next and stores its response
// when cacheable says so. varyAccept says the key holds the media type
// negotiated from the Accept header.
func (c *Cache) handle(w http.ResponseWriter, r *http.Request, key string, body []byte, varyAccept bool, next http.Handler, cacheable func(*recorder) bool) {
	version, known := c.current()
	if known && c.opts.RequestVersion != nil {
		v, ok := c.opts.RequestVersion(r)
		known = ok && v == version
	}
	if !known {
		c.metrics.requests.WithLabelValues("bypass").Inc()
		w.Header().Set("X-Cache", "BYPASS")
		next.ServeHTTP(w, r)
		return
	}
	if e := c.get(version, key); e != nil {
		c.metrics.requests.WithLabelValues("hit").Inc()
		c.serve(w, r, e, "HIT")
		return
	}
	c.metrics.requests.WithLabelValues("miss").Inc()
	if r.Method == http.MethodHead {
		// A HEAD response has no body to store.
		w.Header().Set("X-Cache", "MISS")
		next.ServeHTTP(w, r)
		return
	}
	// The flight runs the handler on its own copy of the request, whose
	// body reader is its own and whose context keeps the request's values
	// and deadline but not its cancellation: a request that stops waiting
	// (its client left, or its deadline passed) leaves the flight to the
	// others, and answers on its own without sharing a body or a
	// recorder with it.
	token := new(int)
	flightReq := r.Clone(context.WithoutCancel(r.Context()))
	if body != nil {
		flightReq.Body = io.NopCloser(bytes.NewReader(body))
	}
	deadline, hasDeadline := r.Context().Deadline()
	ch := c.flights.DoChan(strconv.FormatInt(version, 10)+" "+key, func() (any, error) {
		// Only the request that starts the flight gets here.
		if hasDeadline {
			ctx, cancel := context.WithDeadline(flightReq.Context(), deadline)
			defer cancel()
			flightReq = flightReq.WithContext(ctx)
		}
		return c.fly(version, key, varyAccept, next, flightReq, cacheable, token), nil
	})
	var res flightResult
	select {
	case out := <-ch:
		res = out.Val.(flightResult)
	case <-r.Context().Done():
		if !errors.Is(r.Context().Err(), context.DeadlineExceeded) {
			return // the client left
		}
		// The request ran out of time waiting: the handler answers at
		// once with the timeout error of its API.
		w.Header().Set("X-Cache", "MISS")
		next.ServeHTTP(w, r)
		return
	}
	if res.panicked != nil {
		panic(res.panicked)
	}
	switch {
	case res.entry != nil:
		status := "HIT"
		if res.owner == token {
			status = "MISS"
		}
		c.serve(w, r, res.entry, status)
	case res.owner == token:
		w.Header().Set("X-Cache", "MISS")
		res.rec.replay(w)
	default:
		// The flight's response was not cacheable (an error, say): answer
		// this request on its own.
		res = c.fly(version, key, varyAccept, next, r, cacheable, token)
		if res.panicked != nil {
			panic(res.panicked)
		}
		if res.entry != nil {
			c.serve(w, r, res.entry, "MISS")
			return
		}
		w.Header().Set("X-Cache", "MISS")
		res.rec.replay(w)
	}
}

// fly runs next for r, recording its response, and stores the response
// when it is a cacheable 200. A panic of next is returned, not raised, so
// that it reaches the requests waiting for the flight.
func (c *Cache) fly(version int64, key string, varyAccept bool, next http.Handler, r *http.Request, cacheable func(*recorder) bool, owner *int) (res flightResult) {
	res.owner = owner
	res.rec = &recorder{header: http.Header{}, body: getBuffer()}
	defer func() {
		if p := recover(); p != nil {
			res.panicked = p
		}
	}()
	next.ServeHTTP(res.rec, r)
	if res.rec.status == http.StatusOK && res.rec.body.Len() <= c.opts.MaxEntryBytes && cacheable(res.rec) {
		res.entry = c.newEntry(key, res.rec)
		res.entry.varyAccept = varyAccept
		c.put(version, res.entry)
		// The entry holds its own copy; the recorded body is replayed
		// only when there is no entry.
		putBuffer(res.rec.body)
		res.rec.body = nil
	}
	return res
}

// newEntry makes the entry of a recorded 200 response.
func (c *Cache) newEntry(key string, rec *recorder) *entry {
	body := rec.body.Bytes()
	e := &entry{
		key:         key,
		contentType: rec.header.Get("Content-Type"),
		gzipBody:    gzipBytes(body),
		bodyLen:     len(body),
		expires:     c.opts.Now().Add(c.opts.TTL),
	}
	// The tag covers the media type too: a GraphQL response stored as
	// application/json and as application/graphql-response+json has the
	// same body, but the two are different representations, which a
	// cache that revalidates them must tell apart.
	hash := sha256.New()
	hash.Write([]byte(e.contentType))
	hash.Write([]byte{0})
	hash.Write(body)
	tag := base64.RawURLEncoding.EncodeToString(hash.Sum(nil)[:15])
	e.etag = `"` + tag + `"`
	e.gzipETag = `"` + tag + `-gz"`
	return e
}

// serve answers r with e: 304 when If-None-Match names it, else 200 with
// the gzip copy for clients that accept gzip. xcache is the X-Cache value.
func (c *Cache) serve(w http.ResponseWriter, r *http.Request, e *entry, xcache string) {
	h := w.Header()
	h.Set("X-Cache", xcache)
	h.Set("Cache-Control", c.cacheControl)
	if e.varyAccept {
		addVary(h, "Accept")
	}
	addVary(h, "Accept-Encoding")
	gz := acceptsGzip(r.Header.Get("Accept-Encoding"))
	etag := e.etag
	if gz {
		etag = e.gzipETag
	}
	h.Set("ETag", etag)
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagListMatches(inm, e) {
		// No Content-Type, so that a compressing middleware outside leaves
		// the empty body alone.
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := e.gzipBody
	if !gz {
		var err error
		if body, err = e.body(); err != nil {
			// Our own gzip of our own bytes: this does not happen.
			h.Del("ETag")
			respond.Error(w, r, fmt.Errorf("decompress cached response %s: %w", e.key, err))
			return
		}
	}
	h.Set("Content-Type", e.contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	if gz {
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// addVary adds field to the Vary header of h unless it names it already.
func addVary(h http.Header, field string) {
	for _, v := range h.Values("Vary") {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); strings.EqualFold(name, field) || name == "*" {
				return
			}
		}
	}
	h.Add("Vary", field)
}

// recorder captures a handler's response.
type recorder struct {
	header http.Header
	status int
	body   *bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}

// replay writes the recorded response to w as it is.
func (r *recorder) replay(w http.ResponseWriter) {
	h := w.Header()
	for k, vs := range r.header {
		h[k] = vs
	}
	status := r.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(r.body.Bytes())
}

// normalizeQuery encodes the first non-empty value of each parameter, in
// name order.
func normalizeQuery(q url.Values) string {
	names := make([]string, 0, len(q))
	for name, vs := range q {
		if len(vs) > 0 && vs[0] != "" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var b strings.Builder
	for i, name := range names {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(name))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(q[name][0]))
	}
	return b.String()
}

// hasGraphQLErrors reports whether a GraphQL response body has a top-level
// "errors" member, or is not a JSON object: it does not start with a
// brace, a string or bracket in it does not close, a bracket closes with
// the other kind, or bytes follow the object. The body is read once, for
// its structure and the names of its top-level members only, without
// validating the scalars between them (the endpoint writes valid JSON):
// decoding every member with encoding/json to look at the next name had
// taken 3% of the server's time on a page of GraphQL. Bodies nested deeper
// than the structure's stack, and top-level names written with escapes,
// are left to encoding/json.
func hasGraphQLErrors(body []byte) bool {
	var open [64]byte // the brackets that enclose the position
	depth := 0
	name := false // whether a string at depth 1 is a member's name
	i := skipJSONSpace(body, 0)
	if i == len(body) || body[i] != '{' {
		return true
	}
	for ; i < len(body); i++ {
		switch c := body[i]; c {
		case '"':
			end := i + 1
			for end < len(body) && body[end] != '"' {
				if body[end] == '\\' {
					end++
				}
				end++
			}
			if end >= len(body) {
				return true
			}
			if depth == 1 && name {
				switch key := body[i+1 : end]; {
				case string(key) == "errors":
					return true
				case bytes.IndexByte(key, '\\') >= 0:
					// An escaped name, which may spell errors.
					return hasGraphQLErrorsDecoded(body)
				}
			}
			name = false
			i = end
		case '{', '[':
			if depth == len(open) {
				return hasGraphQLErrorsDecoded(body)
			}
			open[depth] = c
			depth++
			name = depth == 1
		case '}', ']':
			if depth == 0 || open[depth-1] != c-2 { // '{'+2 == '}', '['+2 == ']'
				return true
			}
			depth--
			if depth == 0 {
				return skipJSONSpace(body, i+1) != len(body)
			}
		case ',':
			name = depth == 1
		}
	}
	return true
}

// skipJSONSpace returns the index of the first byte of body at or after i
// that is not JSON white space.
func skipJSONSpace(body []byte, i int) int {
	for i < len(body) && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r') {
		i++
	}
	return i
}

// hasGraphQLErrorsDecoded is hasGraphQLErrors with encoding/json's
// decoder, for bodies of any depth.
func hasGraphQLErrorsDecoded(body []byte) bool {
	d := json.NewDecoder(bytes.NewReader(body))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return true
	}
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return true
		}
		if t == "errors" {
			return true
		}
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			return true
		}
	}
	t, err := d.Token()
	return err != nil || t != json.Delim('}')
}

// acceptsGzip reports whether an Accept-Encoding header admits gzip.
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding != "gzip" && coding != "x-gzip" && coding != "*" {
			continue
		}
		if q, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q="); ok {
			if v, err := strconv.ParseFloat(q, 64); err == nil && v == 0 {
				continue
			}
		}
		return true
	}
	return false
}

// etagListMatches reports whether an If-None-Match header names either
// representation of e (weak comparison, as RFC 9110 asks for it).
func etagListMatches(header string, e *entry) bool {
	if strings.TrimSpace(header) == "*" {
		return true
	}
	for _, tag := range strings.Split(header, ",") {
		tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
		if tag == e.etag || tag == e.gzipETag {
			return true
		}
	}
	return false
}

var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return w
}}

func gzipBytes(b []byte) []byte {
	buf := getBuffer()
	defer putBuffer(buf)
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	gzipWriters.Put(zw)
	// An exact copy: the buffer's spare capacity (up to as much again)
	// would be held by the cache without being counted.
	return bytes.Clone(buf.Bytes())
}

// buffers holds the buffers that record responses and compress them,
// which are done with once the entry has its exact-size copy: growing a
// new one for every miss was 7% of the server's allocations in a bench
// run.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuffer is the largest buffer kept for reuse; a rare large
// response's buffer is left to the garbage collector instead of being held.
const maxPooledBuffer = 256 << 10

func getBuffer() *bytes.Buffer { return buffers.Get().(*bytes.Buffer) }

func putBuffer(b *bytes.Buffer) {
	if b.Cap() > maxPooledBuffer {
		return
	}
	b.Reset()
	buffers.Put(b)
}

// metrics are the cache's Prometheus metrics.
type metrics struct {
	requests  *prometheus.CounterVec
	evictions prometheus.Counter
	bytes     prometheus.Gauge
	entries   prometheus.Gauge
	version   prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stakegraph_http_cache_requests_total",
			Help: "Requests seen by the response cache, by result: hit, miss or bypass (data version unknown, or not that of the database serving the request).",
		}, []string{"result"}),
		evictions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "stakegraph_http_cache_evictions_total",
			Help: "Entries dropped from the response cache to stay within its size.",
		}),
		bytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "stakegraph_http_cache_bytes",
			Help: "Bytes held by the response cache's entries.",
		}),
		entries: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "stakegraph_http_cache_entries",
			Help: "Entries in the response cache.",
		}),
		version: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "stakegraph_data_version",
			Help: "The database's data version as last read by the response cache.",
		}),
	}
	if reg != nil {
		for _, col := range []prometheus.Collector{m.requests, m.evictions, m.bytes, m.entries, m.version} {
			if err := reg.Register(col); err != nil {
				panic(fmt.Sprintf("httpcache: register metrics: %v", err))
			}
		}
	}
	return m
}
