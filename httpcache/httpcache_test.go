package httpcache

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// versions is a VersionSource whose answer the test sets.
type versions struct {
	mu      sync.Mutex
	version int64
	err     error
}

func (v *versions) DataVersion(context.Context) (int64, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.version, v.err
}

func (v *versions) set(version int64, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.version, v.err = version, err
}

// countingHandler answers with a body naming its call number, so that a
// response from the cache is told apart from a fresh one.
type countingHandler struct {
	calls  atomic.Int64
	status int
}

func (h *countingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := h.calls.Add(1)
	status := h.status
	if status == 0 {
		status = http.StatusOK
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"call":%d,"path":%q,"query":%q}`, n, r.URL.Path, r.URL.RawQuery)
}

// newTestCache returns a cache over src that has polled once.
func newTestCache(t *testing.T, src *versions, opts Options) *Cache {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c := New(src, opts)
	if err := c.Poll(context.Background()); err != nil && src.err == nil {
		t.Fatal(err)
	}
	return c
}

type result struct {
	status int
	header http.Header
	body   string
}

func do(t *testing.T, h http.Handler, method, target string, header ...string) result {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return result{status: rec.Code, header: rec.Header(), body: rec.Body.String()}
}

func TestRESTHitAfterMiss(t *testing.T) {
	src := &versions{version: 7}
	next := &countingHandler{}
	h := newTestCache(t, src, Options{}).Middleware(next)

	first := do(t, h, http.MethodGet, "/avs?take=5")
	second := do(t, h, http.MethodGet, "/avs?take=5")
	if first.status != http.StatusOK || second.status != http.StatusOK {
		t.Fatalf("statuses %d, %d", first.status, second.status)
	}
	if got := next.calls.Load(); got != 1 {
		t.Errorf("handler ran %d times; want 1", got)
	}
	if first.body != second.body {
		t.Errorf("cached body %q differs from the first %q", second.body, first.body)
	}
	if x := first.header.Get("X-Cache"); x != "MISS" {
		t.Errorf("first X-Cache = %q; want MISS", x)
	}
	if x := second.header.Get("X-Cache"); x != "HIT" {
		t.Errorf("second X-Cache = %q; want HIT", x)
	}
	for _, r := range []result{first, second} {
		if r.header.Get("ETag") == "" || r.header.Get("Cache-Control") != "private, max-age=5" {
			t.Errorf("ETag %q, Cache-Control %q", r.header.Get("ETag"), r.header.Get("Cache-Control"))
		}
		if ct := r.header.Get("Content-Type"); ct != "application/json; charset=utf-8" {
			t.Errorf("Content-Type %q", ct)
		}
		if cl := r.header.Get("Content-Length"); cl != fmt.Sprint(len(r.body)) {
			t.Errorf("Content-Length %q for a body of %d bytes", cl, len(r.body))
		}
	}
	// Another path or query is another entry.
	do(t, h, http.MethodGet, "/avs?take=6")
	do(t, h, http.MethodGet, "/operators?take=5")
	if got := next.calls.Load(); got != 3 {
		t.Errorf("handler ran %d times after two other targets; want 3", got)
	}
}

func TestQueryNormalization(t *testing.T) {
	src := &versions{version: 1}
	next := &countingHandler{}
	h := newTestCache(t, src, Options{}).Middleware(next)

	// The handlers read the first value of a parameter and treat an empty
	// one as absent: these all ask for the same thing.
	for _, target := range []string{
		"/avs?withTvl=true&take=5",
		"/avs?take=5&withTvl=true",
		"/avs?take=5&withTvl=true&take=9",
		"/avs?take=5&withTvl=true&skip=",
		"/avs?take=5&with%54vl=true",
	} {
		do(t, h, http.MethodGet, target)
	}
	if got := next.calls.Load(); got != 1 {
		t.Errorf("handler ran %d times for one normalized query; want 1", got)
	}
	// A different first value is a different request.
	do(t, h, http.MethodGet, "/avs?take=9&take=5&withTvl=true")
	if got := next.calls.Load(); got != 2 {
		t.Errorf("handler ran %d times; want 2", got)
	}
}

func TestNewVersionDropsEntries(t *testing.T) {
	src := &versions{version: 1}
	next := &countingHandler{}
	c := newTestCache(t, src, Options{})
	h := c.Middleware(next)

	do(t, h, http.MethodGet, "/metrics")
	do(t, h, http.MethodGet, "/metrics")
	src.set(2, nil)
	if err := c.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := do(t, h, http.MethodGet, "/metrics")
	if got := next.calls.Load(); got != 2 {
		t.Errorf("handler ran %d times across a version change; want 2", got)
	}
	if !strings.Contains(r.body, `"call":2`) {
		t.Errorf("after the version change got %s; want the second call's body", r.body)
	}
}

func TestUnknownVersionBypasses(t *testing.T) {
	src := &versions{version: 3}
	next := &countingHandler{}
	c := newTestCache(t, src, Options{})
	h := c.Middleware(next)
	do(t, h, http.MethodGet, "/metrics") // stored

	src.set(0, errors.New("connection refused"))
	if err := c.Poll(context.Background()); err == nil {
		t.Fatal("Poll succeeded with a failing source")
	}
	for range 3 {
		r := do(t, h, http.MethodGet, "/metrics")
		if x := r.header.Get("X-Cache"); x != "BYPASS" {
			t.Errorf("X-Cache = %q while the version is unknown; want BYPASS", x)
		}
	}
	if got := next.calls.Load(); got != 4 {
		t.Errorf("handler ran %d times; want 4 (every request while the version is unknown)", got)
	}

	// Back with the same version: the entry stored before is served again.
	src.set(3, nil)
	if err := c.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := do(t, h, http.MethodGet, "/metrics")
	if r.header.Get("X-Cache") != "HIT" || !strings.Contains(r.body, `"call":1`) {
		t.Errorf("after recovery: X-Cache %q, body %s; want the first call's entry", r.header.Get("X-Cache"), r.body)
	}
}

func TestNothingServedBeforeFirstPoll(t *testing.T) {
	next := &countingHandler{}
	h := New(&versions{version: 1}, Options{}).Middleware(next)
	do(t, h, http.MethodGet, "/metrics")
	do(t, h, http.MethodGet, "/metrics")
	if got := next.calls.Load(); got != 2 {
		t.Errorf("handler ran %d times before any poll; want 2", got)
	}
}

func TestErrorsAreNotCached(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusUnprocessableEntity, http.StatusInternalServerError, http.StatusServiceUnavailable} {
		src := &versions{version: 1}
		next := &countingHandler{status: status}
		h := newTestCache(t, src, Options{}).Middleware(next)
		for range 2 {
			r := do(t, h, http.MethodGet, "/avs/0x1/operators")
			if r.status != status {
				t.Errorf("status %d; want %d passed through", r.status, status)
			}
			if r.header.Get("ETag") != "" {
				t.Errorf("%d response has an ETag", status)
			}
		}
		if got := next.calls.Load(); got != 2 {
			t.Errorf("status %d: handler ran %d times; want 2 (errors are not stored)", status, got)
		}
	}
}

func TestConditionalAndCompressed(t *testing.T) {
	src := &versions{version: 1}
	next := &countingHandler{}
	h := newTestCache(t, src, Options{}).Middleware(next)

	plain := do(t, h, http.MethodGet, "/metrics")
	zipped := do(t, h, http.MethodGet, "/metrics", "Accept-Encoding", "br, gzip;q=0.8")
	if zipped.header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding %q for a client accepting gzip", zipped.header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(strings.NewReader(zipped.body))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if string(unzipped) != plain.body {
		t.Errorf("gzip body decompresses to %q; want %q", unzipped, plain.body)
	}
	if plain.header.Get("ETag") == zipped.header.Get("ETag") {
		t.Error("the identity and gzip representations share an ETag")
	}
	if !strings.Contains(zipped.header.Get("Vary"), "Accept-Encoding") {
		t.Errorf("Vary %q", zipped.header.Get("Vary"))
	}
	if r := do(t, h, http.MethodGet, "/metrics", "Accept-Encoding", "gzip;q=0"); r.header.Get("Content-Encoding") != "" {
		t.Error("gzip sent to a client that refuses it")
	}

	for _, inm := range []string{plain.header.Get("ETag"), zipped.header.Get("ETag"), `"other", W/` + plain.header.Get("ETag"), "*"} {
		r := do(t, h, http.MethodGet, "/metrics", "If-None-Match", inm)
		if r.status != http.StatusNotModified || r.body != "" {
			t.Errorf("If-None-Match %s: %d %q; want 304 without a body", inm, r.status, r.body)
		}
		if r.header.Get("ETag") == "" || r.header.Get("Content-Type") != "" {
			t.Errorf("304 headers: ETag %q, Content-Type %q", r.header.Get("ETag"), r.header.Get("Content-Type"))
		}
	}
	if r := do(t, h, http.MethodGet, "/metrics", "If-None-Match", `"stale"`); r.status != http.StatusOK {
		t.Errorf("If-None-Match of another ETag: %d; want 200", r.status)
	}

	head := do(t, h, http.MethodHead, "/metrics")
	if head.status != http.StatusOK || head.body != "" || head.header.Get("Content-Length") != fmt.Sprint(len(plain.body)) {
		t.Errorf("HEAD: %d, body %q, Content-Length %q", head.status, head.body, head.header.Get("Content-Length"))
	}
	if got := next.calls.Load(); got != 1 {
		t.Errorf("handler ran %d times; want 1", got)
	}
}

func TestHeadMissIsNotStored(t *testing.T) {
	src := &versions{version: 1}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "2")
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			io.WriteString(w, "{}")
		}
	})
	h := newTestCache(t, src, Options{}).Middleware(next)
	do(t, h, http.MethodHead, "/metrics")
	if r := do(t, h, http.MethodGet, "/metrics"); r.body != "{}" {
		t.Errorf("GET after HEAD = %q; want the handler's body, not an empty stored one", r.body)
	}
}

func TestTTL(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	src := &versions{version: 1}
	next := &countingHandler{}
	h := newTestCache(t, src, Options{TTL: 10 * time.Second, Now: clock}).Middleware(next)

	do(t, h, http.MethodGet, "/metrics")
	mu.Lock()
	now = now.Add(9 * time.Second)
	mu.Unlock()
	do(t, h, http.MethodGet, "/metrics")
	if got := next.calls.Load(); got != 1 {
		t.Errorf("handler ran %d times within the TTL; want 1", got)
	}
	mu.Lock()
	now = now.Add(2 * time.Second)
	mu.Unlock()
	do(t, h, http.MethodGet, "/metrics")
	if got := next.calls.Load(); got != 2 {
		t.Errorf("handler ran %d times after the TTL; want 2", got)
	}
}

func TestSizeBound(t *testing.T) {
	src := &versions{version: 1}
	// Random text, so that the gzip copies the cache keeps are large too.
	raw := make([]byte, 7500)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(raw)
	big := base64.StdEncoding.EncodeToString(raw)
	var calls atomic.Int64
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, "%q", big+r.URL.RawQuery)
	})
	c := newTestCache(t, src, Options{MaxBytes: 50000, MaxEntryBytes: 20000})
	h := c.Middleware(next)
	for i := range 20 {
		do(t, h, http.MethodGet, fmt.Sprintf("/x?i=%d", i))
	}
	c.mu.Lock()
	bytesHeld, n := c.bytes, c.lru.Len()
	c.mu.Unlock()
	if bytesHeld > 50000 {
		t.Errorf("cache holds %d bytes; bound is 50000", bytesHeld)
	}
	if n == 0 || n >= 20 {
		t.Errorf("cache holds %d entries; want some but not all 20", n)
	}
	// The most recent entry is kept, the oldest was evicted.
	before := calls.Load()
	do(t, h, http.MethodGet, "/x?i=19")
	do(t, h, http.MethodGet, "/x?i=0")
	if got := calls.Load() - before; got != 1 {
		t.Errorf("handler ran %d times for the newest and the oldest entry; want 1 (the oldest only)", got)
	}

	// A body above MaxEntryBytes is served but not stored.
	huge := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Write(bytes.Repeat([]byte("y"), 30000))
	})
	hh := c.Middleware(huge)
	before = calls.Load()
	for range 2 {
		if r := do(t, hh, http.MethodGet, "/huge"); len(r.body) != 30000 {
			t.Errorf("huge body of %d bytes", len(r.body))
		}
	}
	if got := calls.Load() - before; got != 2 {
		t.Errorf("handler ran %d times for an oversized body; want 2", got)
	}
}

func TestConcurrentMissesRunOnce(t *testing.T) {
	src := &versions{version: 1}
	release := make(chan struct{})
	var calls atomic.Int64
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		<-release
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	})
	c := newTestCache(t, src, Options{})
	h := c.Middleware(next)

	const n = 20
	var wg sync.WaitGroup
	bodies := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bodies[i] = do(t, h, http.MethodGet, "/avs").body
		}()
	}
	// Wait until every request is either running the handler or waiting
	// for the one that is.
	deadline := time.Now().Add(5 * time.Second)
	for calls.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	if got := calls.Load(); got != 1 {
		t.Errorf("handler ran %d times for %d concurrent requests; want 1", got, n)
	}
	for i, b := range bodies {
		if b != `{"ok":true}` {
			t.Errorf("request %d got %q", i, b)
		}
	}
}

func TestUncacheableLeaderLetsFollowersRun(t *testing.T) {
	src := &versions{version: 1}
	release := make(chan struct{})
	var calls atomic.Int64
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			<-release
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	h := newTestCache(t, src, Options{}).Middleware(next)
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := do(t, h, http.MethodGet, "/avs"); r.status != http.StatusServiceUnavailable {
				t.Errorf("status %d; want 503", r.status)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	if got := calls.Load(); got != 3 {
		t.Errorf("handler ran %d times; want 3 (an error is answered per request)", got)
	}
}

// TestFollowerPastDeadlineAnswers checks that a request whose deadline
// passes while it waits for another request's response is answered by the
// handler (which fails at once with its timeout error), not left empty.
func TestFollowerPastDeadlineAnswers(t *testing.T) {
	src := &versions{version: 1}
	release := make(chan struct{})
	defer close(release)
	var calls atomic.Int64
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			<-release // the leader hangs
		}
		if r.Context().Err() != nil {
			w.WriteHeader(http.StatusGatewayTimeout)
			return
		}
		io.WriteString(w, `{"ok":true}`)
	})
	h := newTestCache(t, src, Options{}).Middleware(next)
	go do(t, h, http.MethodGet, "/avs")
	for deadline := time.Now().Add(5 * time.Second); calls.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/avs", nil).WithContext(ctx))
	if rec.Code != http.StatusGatewayTimeout || calls.Load() != 2 {
		t.Errorf("follower past its deadline: status %d after %d handler calls; want 504 from its own call", rec.Code, calls.Load())
	}
}

func TestPanicEndsFlight(t *testing.T) {
	src := &versions{version: 1}
	var calls atomic.Int64
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			panic("boom")
		}
		io.WriteString(w, "{}")
	})
	h := newTestCache(t, src, Options{}).Middleware(next)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the handler's panic did not propagate")
			}
		}()
		do(t, h, http.MethodGet, "/avs")
	}()
	done := make(chan result)
	go func() { done <- do(t, h, http.MethodGet, "/avs") }()
	select {
	case r := <-done:
		if r.body != "{}" {
			t.Errorf("after a panic: %q", r.body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a request after a panicking one hangs on its flight")
	}
}

func TestGraphQL(t *testing.T) {
	src := &versions{version: 1}
	var calls atomic.Int64
	var gotBodies []string
	var mu sync.Mutex
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		gotBodies = append(gotBodies, string(body))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(string(body), "fails") {
			io.WriteString(w, `{"errors":[{"message":"no"}],"data":null}`)
			return
		}
		io.WriteString(w, `{"data":{"n":1}}`)
	})
	h := newTestCache(t, src, Options{}).GraphQLMiddleware(next)
	post := func(body string) result {
		req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return result{status: rec.Code, header: rec.Header(), body: rec.Body.String()}
	}
	q := `{"query":"{ metrics { totalStakers } }"}`
	post(q)
	r := post(q)
	if r.header.Get("X-Cache") != "HIT" || r.body != `{"data":{"n":1}}` {
		t.Errorf("second POST: X-Cache %q, body %q", r.header.Get("X-Cache"), r.body)
	}
	post(`{"query":"{ fails }"}`)
	post(`{"query":"{ fails }"}`)
	if got := calls.Load(); got != 3 {
		t.Errorf("handler ran %d times; want 3 (one success stored, errors not)", got)
	}
	for _, b := range gotBodies {
		if b != q && b != `{"query":"{ fails }"}` {
			t.Errorf("the handler read body %q", b)
		}
	}

	// GET requests are keyed by the query string.
	do(t, h, http.MethodGet, "/graphql?query=%7Bx%7D")
	if r := do(t, h, http.MethodGet, "/graphql?query=%7Bx%7D"); r.header.Get("X-Cache") != "HIT" {
		t.Errorf("second GET: X-Cache %q", r.header.Get("X-Cache"))
	}
	// A body that is not JSON passes through.
	req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader("query=x"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Header().Get("X-Cache") != "" {
		t.Errorf("form POST went through the cache: X-Cache %q", rec.Header().Get("X-Cache"))
	}
}

func TestGraphQLLargeBodyPassesThroughIntact(t *testing.T) {
	src := &versions{version: 1}
	var got string
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = string(b)
		io.WriteString(w, `{"data":{}}`)
	})
	h := newTestCache(t, src, Options{MaxRequestBytes: 100}).GraphQLMiddleware(next)
	body := `{"query":"` + strings.Repeat("a", 500) + `"}`
	req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if got != body {
		t.Errorf("handler read %d bytes; want the %d-byte body intact", len(got), len(body))
	}
	if rec.Header().Get("X-Cache") != "" {
		t.Errorf("an oversized body went through the cache: X-Cache %q", rec.Header().Get("X-Cache"))
	}
}

func TestHasGraphQLErrors(t *testing.T) {
	for body, want := range map[string]bool{
		`{"data":{"a":1}}`:                             false,
		`{"data":{"errors":"a field named errors"}}`:   false,
		`{"data":{"s":"\"errors\":"},"extensions":{}}`: false,
		`{"errors":[{"message":"x"}],"data":null}`:     true,
		`{"data":null,"errors":[{"message":"x"}]}`:     true,
		`not json`:        true,
		`[]`:              true,
		`{"data":{"a":1}`: true,
		"{\"data\":{\"a\":[1,2,{\"b\":\"}\"}]},\"x\":true}": false,
		" {\"data\" : {\"a\":\"\\\\\"}\n,\t\"errors\":[]}":  true,
		`{"data":{"a":"errors","errors":1}}`:                false,
		`{"data":[}}`:                                       true,
		`{"data":{]}`:                                       true,
		`{"data":1}}`:                                       true,
		`{"data":1} x`:                                      true,
		`{"data":"unterminated}`:                            true,
		`{"data":1} `:                                       false,
		`{"data":1,"err\u006frs":[]}`:                       true,
		`{"d\u0061ta":1}`:                                   false,
		`{"data":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `}`:             false,
		`{"data":` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `,"errors":[]}`: true,
	} {
		if got := hasGraphQLErrors([]byte(body)); got != want {
			t.Errorf("hasGraphQLErrors(%s) = %v; want %v", body, got, want)
		}
	}
}

// TestHasGraphQLErrorsIsDecoded checks the structural scan against
// encoding/json's decoder on random JSON objects, with members named
// errors at every depth and strings holding brackets, quotes and escapes.
func TestHasGraphQLErrorsIsDecoded(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	names := []string{"data", "errors", "extensions", "a", `x"y`, "{", "]"}
	var value func(depth int) any
	value = func(depth int) any {
		switch n := r.IntN(6); {
		case depth > 5 || n == 0:
			return names[r.IntN(len(names))] + "\\}\n"
		case n == 1:
			return r.Float64()
		case n == 2:
			list := make([]any, r.IntN(4))
			for i := range list {
				list[i] = value(depth + 1)
			}
			return list
		default:
			m := map[string]any{}
			for range r.IntN(4) {
				m[names[r.IntN(len(names))]] = value(depth + 1)
			}
			return m
		}
	}
	for range 5000 {
		top := map[string]any{}
		for range r.IntN(4) {
			top[names[r.IntN(len(names))]] = value(1)
		}
		body, err := json.MarshalIndent(top, "", strings.Repeat(" ", r.IntN(2)))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := hasGraphQLErrors(body), hasGraphQLErrorsDecoded(body); got != want {
			t.Fatalf("hasGraphQLErrors(%s) = %v; encoding/json says %v", body, got, want)
		}
	}
}

func TestAcceptsGzip(t *testing.T) {
	for header, want := range map[string]bool{
		"":                     false,
		"gzip":                 true,
		"deflate, gzip":        true,
		"GZIP;q=0.5":           true,
		"gzip;q=0":             false,
		"gzip; q=0.0":          false,
		"br":                   false,
		"*":                    true,
		"identity, x-gzip":     true,
		"gzipped-not-a-coding": false,
	} {
		if got := acceptsGzip(header); got != want {
			t.Errorf("acceptsGzip(%q) = %v; want %v", header, got, want)
		}
	}
}

// negotiate chooses the media type as a GraphQL endpoint does, for the
// tests: application/graphql-response+json when the Accept header names
// it, else application/json.
func negotiate(r *http.Request) string {
	if strings.Contains(r.Header.Get("Accept"), "application/graphql-response+json") {
		return "application/graphql-response+json"
	}
	return "application/json"
}

// TestGraphQLKeyedOnMediaType checks that a GraphQL response negotiated as
// one media type is never served to a client that negotiates the other,
// that clients spelling the same choice differently share an entry, and
// that the responses say Vary: Accept.
func TestGraphQLKeyedOnMediaType(t *testing.T) {
	src := &versions{version: 1}
	var calls atomic.Int64
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		w.Header().Set("Content-Type", negotiate(r))
		fmt.Fprintf(w, `{"data":{"call":%d}}`, n)
	})
	h := newTestCache(t, src, Options{GraphQLMediaType: negotiate}).GraphQLMiddleware(next)
	post := func(accept string, header ...string) result {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(`{"query":"{ x }"}`))
		req.Header.Set("Content-Type", "application/json")
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return result{status: rec.Code, header: rec.Header(), body: rec.Body.String()}
	}
	const gqlResponse = "application/graphql-response+json"
	for i, c := range []struct {
		accept, wantType, wantCache, wantBody string
	}{
		{"application/json", "application/json", "MISS", `{"data":{"call":1}}`},
		{gqlResponse, gqlResponse, "MISS", `{"data":{"call":2}}`},
		{"application/json", "application/json", "HIT", `{"data":{"call":1}}`},
		{"", "application/json", "HIT", `{"data":{"call":1}}`},
		{gqlResponse + ", application/json;q=0.9", gqlResponse, "HIT", `{"data":{"call":2}}`},
		{gqlResponse, gqlResponse, "HIT", `{"data":{"call":2}}`},
	} {
		r := post(c.accept)
		if ct := r.header.Get("Content-Type"); ct != c.wantType {
			t.Errorf("request %d (Accept %q): Content-Type %q; want %q", i, c.accept, ct, c.wantType)
		}
		if x := r.header.Get("X-Cache"); x != c.wantCache || r.body != c.wantBody {
			t.Errorf("request %d (Accept %q): X-Cache %q, body %s; want %s, %s", i, c.accept, x, r.body, c.wantCache, c.wantBody)
		}
		if v := r.header.Values("Vary"); strings.Join(v, ", ") != "Accept, Accept-Encoding" {
			t.Errorf("request %d: Vary %q; want Accept, Accept-Encoding", i, v)
		}
	}
	// The representations have different validators, and each revalidates
	// only itself.
	plain, graphql := post("application/json"), post(gqlResponse)
	if plain.header.Get("ETag") == graphql.header.Get("ETag") {
		t.Errorf("the application/json and %s responses share the ETag %s", gqlResponse, plain.header.Get("ETag"))
	}
	if r := post("application/json", "If-None-Match", plain.header.Get("ETag")); r.status != http.StatusNotModified {
		t.Errorf("revalidation with its own ETag: %d; want 304", r.status)
	}
	if r := post("application/json", "If-None-Match", graphql.header.Get("ETag")); r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" {
		t.Errorf("revalidation with the other media type's ETag: %d %q; want 200 application/json", r.status, r.header.Get("Content-Type"))
	}
	// A Vary the handler set already is not repeated.
	wrapped := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Vary", "Accept")
		h.ServeHTTP(w, r)
	})
	req := httptest.NewRequest(http.MethodGet, "/graphql?query=%7Bx%7D", nil)
	rec := httptest.NewRecorder()
	wrapped.ServeHTTP(rec, req)
	rec = httptest.NewRecorder()
	wrapped.ServeHTTP(rec, req)
	if v := rec.Header().Values("Vary"); strings.Join(v, ", ") != "Accept, Accept-Encoding" || rec.Header().Get("X-Cache") != "HIT" {
		t.Errorf("GET hit: Vary %q, X-Cache %q", v, rec.Header().Get("X-Cache"))
	}
}

// TestGraphQLKeyedOnAcceptByDefault checks that without GraphQLMediaType
// responses are kept apart by the Accept header as sent.
func TestGraphQLKeyedOnAcceptByDefault(t *testing.T) {
	src := &versions{version: 1}
	h := newTestCache(t, src, Options{}).GraphQLMiddleware(&countingHandler{})
	if r := do(t, h, http.MethodGet, "/graphql?query=%7Bx%7D", "Accept", "application/json"); r.header.Get("X-Cache") != "MISS" {
		t.Fatalf("first GET: X-Cache %q", r.header.Get("X-Cache"))
	}
	if r := do(t, h, http.MethodGet, "/graphql?query=%7Bx%7D", "Accept", "application/graphql-response+json"); r.header.Get("X-Cache") != "MISS" {
		t.Errorf("GET with another Accept: X-Cache %q; want MISS", r.header.Get("X-Cache"))
	}
	if r := do(t, h, http.MethodGet, "/graphql?query=%7Bx%7D", "Accept", "application/json"); r.header.Get("X-Cache") != "HIT" {
		t.Errorf("GET with the first Accept again: X-Cache %q; want HIT", r.header.Get("X-Cache"))
	}
}

// TestRESTDoesNotVaryOnAccept checks that REST responses, application/json
// whatever the Accept header, share one entry and do not say Vary: Accept.
func TestRESTDoesNotVaryOnAccept(t *testing.T) {
	src := &versions{version: 1}
	h := newTestCache(t, src, Options{}).Middleware(&countingHandler{})
	do(t, h, http.MethodGet, "/avs", "Accept", "application/json")
	r := do(t, h, http.MethodGet, "/avs", "Accept", "*/*")
	if r.header.Get("X-Cache") != "HIT" {
		t.Errorf("X-Cache %q; want HIT", r.header.Get("X-Cache"))
	}
	if v := r.header.Values("Vary"); strings.Join(v, ", ") != "Accept-Encoding" {
		t.Errorf("Vary %q; want Accept-Encoding", v)
	}
}

// TestFlightOutlivesItsStarter checks that the request that started a
// flight can stop waiting (its client left) without ending the flight for
// the requests that share it, and that a GraphQL request past its deadline
// reads its own body while the flight reads a copy (run with -race).
func TestFlightOutlivesItsStarter(t *testing.T) {
	src := &versions{version: 1}
	release := make(chan struct{})
	var calls atomic.Int64
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		body, _ := io.ReadAll(r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
			w.WriteHeader(http.StatusGatewayTimeout)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"data":{"body":`+strconv.Quote(string(body))+`}}`)
	})
	c := newTestCache(t, src, Options{})
	for _, tc := range []struct {
		name    string
		handler http.Handler
		method  string
		body    string
	}{
		{"rest", c.Middleware(next), http.MethodGet, ""},
		{"graphql", c.GraphQLMiddleware(next), http.MethodPost, `{"query":"{ a }"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls.Store(0)
			release = make(chan struct{})
			newReq := func(ctx context.Context) *http.Request {
				r := httptest.NewRequest(tc.method, "/avs", strings.NewReader(tc.body)).WithContext(ctx)
				if tc.body != "" {
					r.Header.Set("Content-Type", "application/json")
				}
				return r
			}
			// The starter's client leaves while the handler runs.
			ctx, leave := context.WithCancel(context.Background())
			started := make(chan struct{})
			go func() {
				defer close(started)
				tc.handler.ServeHTTP(httptest.NewRecorder(), newReq(ctx))
			}()
			for deadline := time.Now().Add(5 * time.Second); calls.Load() == 0 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			// A request past its deadline answers with its own call.
			short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			late := httptest.NewRecorder()
			tc.handler.ServeHTTP(late, newReq(short))
			if late.Code != http.StatusGatewayTimeout {
				t.Errorf("request past its deadline: %d; want its own 504", late.Code)
			}
			leave()
			<-started
			follower := make(chan *httptest.ResponseRecorder)
			go func() {
				rec := httptest.NewRecorder()
				tc.handler.ServeHTTP(rec, newReq(context.Background()))
				follower <- rec
			}()
			time.Sleep(20 * time.Millisecond)
			close(release)
			rec := <-follower
			if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), strconv.Quote(tc.body)) {
				t.Errorf("follower after the starter left: %d %s", rec.Code, rec.Body)
			}
			if n := calls.Load(); n != 2 {
				t.Errorf("handler ran %d times; want 2 (the flight and the late request)", n)
			}
		})
	}
}

func TestRequestOfAnotherVersionBypasses(t *testing.T) {
	src := &versions{version: 7}
	next := &countingHandler{}
	// The request header names the version of the database serving it,
	// as a read replica's would be.
	h := newTestCache(t, src, Options{RequestVersion: func(r *http.Request) (int64, bool) {
		v, err := strconv.ParseInt(r.Header.Get("Version"), 10, 64)
		return v, err == nil
	}}).Middleware(next)

	for i, tc := range []struct{ version, xcache string }{
		{"7", "MISS"}, {"7", "HIT"}, // the cache's version
		{"6", "BYPASS"}, {"6", "BYPASS"}, // a replica that lags
		{"", "BYPASS"}, // a version not known
		{"7", "HIT"},
	} {
		r := do(t, h, http.MethodGet, "/avs", "Version", tc.version)
		if r.status != http.StatusOK || r.header.Get("X-Cache") != tc.xcache {
			t.Errorf("request %d at version %q: %d, X-Cache %q; want %s", i+1, tc.version, r.status, r.header.Get("X-Cache"), tc.xcache)
		}
	}
	if got := next.calls.Load(); got != 4 {
		t.Errorf("handler ran %d times; want 4 (one miss, three bypasses)", got)
	}
}
