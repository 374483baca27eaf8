package bench

import (
	"compress/gzip"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestPercentiles(t *testing.T) {
	s := newStats()
	for i := 100; i >= 1; i-- { // unsorted on purpose
		s.add(Request{}, Outcome{Status: 200, Latency: time.Duration(i) * time.Millisecond})
	}
	s.finish(2 * time.Second)
	for p, want := range map[float64]time.Duration{
		0.5: 50 * time.Millisecond, 0.95: 95 * time.Millisecond, 0.99: 99 * time.Millisecond,
		1: 100 * time.Millisecond, 0: time.Millisecond,
	} {
		if got := s.Percentile(p); got != want {
			t.Errorf("Percentile(%v) = %v; want %v", p, got, want)
		}
	}
	if got := s.RPS(); got != 50 {
		t.Errorf("RPS = %v; want 50", got)
	}
	if got := (&Stats{}).Percentile(0.99); got != 0 {
		t.Errorf("Percentile of nothing = %v", got)
	}
}

func TestStatsCounting(t *testing.T) {
	s := newStats()
	s.add(Request{Method: "GET", Target: "/a"}, Outcome{Status: 200, CacheHit: true})
	s.add(Request{Method: "GET", Target: "/b"}, Outcome{Status: 503, Snippet: `{"error":{}}`})
	s.add(Request{Method: "GET", Target: "/c"}, Outcome{Status: 304})
	s.add(Request{Method: "GET", Target: "/d"}, Outcome{Status: 404})
	s.add(Request{Method: "GET", Target: "/e"}, Outcome{Err: fmt.Errorf("connection reset")})
	s.finish(time.Second)
	if s.Requests != 5 || s.CacheHits != 1 || s.TransportErrors != 1 {
		t.Errorf("requests %d, hits %d, transport errors %d", s.Requests, s.CacheHits, s.TransportErrors)
	}
	if s.Count5xx() != 1 || s.CountNon2xx() != 2 {
		t.Errorf("5xx %d, non-2xx %d; want 1 and 2 (304 counts as success)", s.Count5xx(), s.CountNon2xx())
	}
	if got := s.StatusSummary(); got != "200×1 304×1 404×1 503×1 transport errors×1" {
		t.Errorf("StatusSummary = %q", got)
	}
	if len(s.FirstErrors) != 3 || !strings.Contains(s.FirstErrors[0], "/b: 503") {
		t.Errorf("FirstErrors = %q", s.FirstErrors)
	}
}

func TestLoad(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		if r.Header.Get("X-API-Token") != "k" || r.Header.Get("Accept-Encoding") != "gzip" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/cached" {
			w.Header().Set("X-Cache", "HIT")
		}
		if r.URL.Path == "/fail" {
			http.Error(w, `{"error":{"code":"internal_server_error","message":"x"}}`, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, `{}`)
	}))
	defer srv.Close()
	c := NewClient(srv.URL, "k", 4)
	defer c.Close()
	targets := []string{"/cached", "/plain", "/fail"}
	next := func(r *rand.Rand) Request { return Request{Method: "GET", Target: targets[r.IntN(len(targets))]} }
	s := Load(context.Background(), c, 4, 300*time.Millisecond, 1, next, nil)
	if s.Requests == 0 || int64(s.Requests) > served.Load() {
		t.Fatalf("%d requests recorded, %d served", s.Requests, served.Load())
	}
	// The run lasts at least its 300 ms; that it stops at all is what the
	// upper bound checks, so it is far above any machine's delay.
	if s.Elapsed < 300*time.Millisecond || s.Elapsed > time.Minute {
		t.Errorf("elapsed %v for a 300 ms run", s.Elapsed)
	}
	if s.Statuses[401] != 0 {
		t.Errorf("%d requests were sent without the key or gzip", s.Statuses[401])
	}
	if s.CacheHits == 0 || s.Statuses[503] == 0 || s.Statuses[200] == 0 || s.TransportErrors != 0 {
		t.Errorf("hits %d, statuses %v, transport errors %d", s.CacheHits, s.Statuses, s.TransportErrors)
	}
	if len(s.FirstErrors) == 0 || !strings.Contains(s.FirstErrors[0], "internal_server_error") {
		t.Errorf("first errors %q lack the 503 body", s.FirstErrors)
	}
}

// TestLoadEndCutsOffRequests checks that a request still unanswered when
// the run's time is up ends the run and is not counted as a failure, be
// it waiting for its response or in the middle of its body.
func TestLoadEndCutsOffRequests(t *testing.T) {
	for _, partial := range []bool{false, true} {
		t.Run(fmt.Sprintf("partial=%v", partial), func(t *testing.T) { testLoadEndCutsOff(t, partial) })
	}
}

func testLoadEndCutsOff(t *testing.T, partial bool) {
	release := make(chan struct{})
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1) > 1 {
			if partial {
				w.Header().Set("Content-Length", "100")
				fmt.Fprint(w, `{"data":`)
				w.(http.Flusher).Flush()
			}
			select { // every request after the first waits for the end
			case <-release:
			case <-r.Context().Done():
			}
			if partial {
				return
			}
		}
		fmt.Fprint(w, `{}`)
	}))
	defer srv.Close()
	defer close(release)
	c := NewClient(srv.URL, "k", 1)
	defer c.Close()
	next := func(*rand.Rand) Request { return Request{Method: "GET", Target: "/avs"} }
	s := Load(context.Background(), c, 1, 100*time.Millisecond, 1, next, nil)
	if s.Requests != 1 || s.Statuses[200] != 1 || s.TransportErrors != 0 {
		t.Errorf("%d requests, statuses %v, %d transport errors; want the first one, answered, alone",
			s.Requests, s.Statuses, s.TransportErrors)
	}
	if s.Elapsed > time.Minute {
		t.Errorf("elapsed %v for a 100 ms run", s.Elapsed)
	}
}

func TestRestartPhases(t *testing.T) {
	var down atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"code":"internal_server_error","message":"service unavailable"}}`)
			return
		}
		fmt.Fprint(w, `{}`)
	}))
	defer srv.Close()
	c := NewClient(srv.URL, "k", 4)
	defer c.Close()
	res := Restart(context.Background(), c, func(*rand.Rand) Request { return Request{Method: "GET", Target: "/x"} }, RestartConfig{
		Clients: 2, Before: 100 * time.Millisecond, Down: 200 * time.Millisecond, After: 100 * time.Millisecond,
		Stop:  func(context.Context) error { down.Store(true); return nil },
		Start: func(context.Context) error { down.Store(false); return nil },
	})
	if res.Before.Requests == 0 || res.Before.Statuses[200] != res.Before.Requests {
		t.Errorf("before: %s", res.Before.StatusSummary())
	}
	// At most one request per client was in flight when the database went.
	if res.Down503 == 0 || res.Down503JSON != res.Down503 || res.DownServed200 > 2 {
		t.Errorf("down: %d 503s, %d with the JSON body, %d 200s", res.Down503, res.Down503JSON, res.DownServed200)
	}
	if res.After.Requests == 0 || res.FirstDBSuccess > 100*time.Millisecond {
		t.Errorf("after: %s, first success after %v", res.After.StatusSummary(), res.FirstDBSuccess)
	}
	report := res.Report()
	for _, want := range []string{"database down", "JSON body", "within seconds: met"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
}

func TestUpdateSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "RESULTS.md")
	if err := UpdateSection(path, "a", "first"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("# Title\n\nHand-written notes.\n\n<!-- BEGIN a -->\nold\n<!-- END a -->\n\nMore notes.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := UpdateSection(path, "a", "new\ntable"); err != nil {
		t.Fatal(err)
	}
	if err := UpdateSection(path, "b", "appended"); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	want := "# Title\n\nHand-written notes.\n\n<!-- BEGIN a -->\nnew\ntable\n<!-- END a -->\n\nMore notes.\n\n<!-- BEGIN b -->\nappended\n<!-- END b -->\n"
	if string(got) != want {
		t.Errorf("file after updates:\n%s\nwant:\n%s", got, want)
	}
}

func TestReadMemoryAndScrape(t *testing.T) {
	m, err := ReadMemory(os.Getpid())
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	if m.RSS <= 0 || m.Peak < m.RSS {
		t.Errorf("memory of this process: %+v", m)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "# HELP x y\nstakegraph_sql_statements_total_other 3\nstakegraph_sql_statements_total 1234\n")
	}))
	defer srv.Close()
	v, err := ScrapeCounter(context.Background(), srv.URL, "stakegraph_sql_statements_total")
	if err != nil || v != 1234 {
		t.Errorf("ScrapeCounter = %v, %v; want 1234", v, err)
	}
	if _, err := ScrapeCounter(context.Background(), srv.URL, "missing_metric"); err == nil {
		t.Error("ScrapeCounter found a missing metric")
	}
}

func TestMixedFollowsWeights(t *testing.T) {
	ops := []Operation{
		{Name: "a", Weight: 3, Next: func(*rand.Rand) Request { return Request{Target: "a"} }},
		{Name: "b", Weight: 1, Next: func(*rand.Rand) Request { return Request{Target: "b"} }},
	}
	next := Mixed(ops)
	r := rand.New(rand.NewPCG(1, 2))
	counts := map[string]int{}
	for range 4000 {
		counts[next(r).Target]++
	}
	if a := counts["a"]; a < 2800 || a > 3200 {
		t.Errorf("weight 3 of 4 drew %d of 4000", a)
	}
}

func TestGraphQLErrorsAreFailures(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := `{"data":{"metrics":{"tvl":1}}}`
		switch {
		case r.URL.Query().Get("fail") != "":
			body = `{"errors":[{"message":"the service is unavailable; try again later","extensions":{"code":"internal_server_error"}}],"data":null}`
		case r.URL.Query().Get("partial") != "":
			// A partial answer: one error per field that needed the
			// database, a body far longer than a snippet.
			var errs []string
			for i := range 40 {
				errs = append(errs, fmt.Sprintf(`{"message":"the service is unavailable; try again later","path":["operator","avsRegistrations",%d,"avs"],"extensions":{"code":"internal_server_error"}}`, i))
			}
			body = `{"errors":[` + strings.Join(errs, ",") + `],"data":{"operator":{"address":"0x1"}}}`
		case r.URL.Query().Get("invalid") != "":
			body = `{"errors":[{"message":"bad","extensions":{"code":"bad_request"}}],"data":null}`
		case r.URL.Query().Get("spaced") != "":
			// Whitespace longer than the head that is decompressed to
			// look for errors.
			body = strings.Repeat(" \n", 100) + `{"errors":[{"message":"bad","extensions":{"code":"bad_request"}}],"data":null}`
		case r.URL.Query().Get("long") != "":
			// A long answer without errors that mentions them later on.
			body = `{"data":{"text":"` + strings.Repeat("x", 100000) + `","errors":[]}}`
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		fmt.Fprint(zw, body)
		zw.Close()
	}))
	defer srv.Close()
	c := NewClient(srv.URL, "k", 1)
	defer c.Close()
	ok := c.Do(context.Background(), GraphQL("{ metrics { tvl } }", nil))
	failed := c.Do(context.Background(), Request{Method: "POST", Target: "/graphql?fail=1", Body: []byte(`{}`)})
	if ok.Status != 200 || ok.GraphQLError || failed.Status != 200 || !failed.GraphQLError {
		t.Fatalf("ok: %+v; failed: %+v", ok, failed)
	}
	partial := c.Do(context.Background(), Request{Method: "POST", Target: "/graphql?partial=1", Body: []byte(`{}`)})
	invalid := c.Do(context.Background(), Request{Method: "POST", Target: "/graphql?invalid=1", Body: []byte(`{}`)})
	spaced := c.Do(context.Background(), Request{Method: "POST", Target: "/graphql?spaced=1", Body: []byte(`{}`)})
	long := c.Do(context.Background(), Request{Method: "POST", Target: "/graphql?long=1", Body: []byte(`{}`)})
	if !partial.GraphQLError || !invalid.GraphQLError || !spaced.GraphQLError || long.GraphQLError {
		t.Errorf("GraphQL errors: partial %v, invalid %v, spaced %v, long %v; want true, true, true, false",
			partial.GraphQLError, invalid.GraphQLError, spaced.GraphQLError, long.GraphQLError)
	}
	if !strings.Contains(spaced.Snippet, `"bad"`) {
		t.Errorf("spaced: snippet %q does not hold the error", spaced.Snippet)
	}
	if !failed.GraphQLUnavailable || !partial.GraphQLUnavailable || invalid.GraphQLUnavailable || ok.GraphQLUnavailable {
		t.Errorf("unavailable: failed %v, partial %v, invalid %v, ok %v; want true, true, false, false",
			failed.GraphQLUnavailable, partial.GraphQLUnavailable, invalid.GraphQLUnavailable, ok.GraphQLUnavailable)
	}
	s := newStats()
	s.add(Request{}, ok)
	s.add(Request{}, failed)
	s.finish(time.Second)
	if s.CountFailed() != 1 || s.GraphQLErrors != 1 {
		t.Errorf("failed %d, GraphQL errors %d; want 1 and 1", s.CountFailed(), s.GraphQLErrors)
	}
}

func TestBalancedClientTakesServersInTurn(t *testing.T) {
	var hits [2]atomic.Int64
	var servers [2]*httptest.Server
	for i := range servers {
		servers[i] = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits[i].Add(1) }))
		defer servers[i].Close()
	}
	c := NewBalancedClient([]string{servers[0].URL, servers[1].URL + "/"}, "k", 2)
	defer c.Close()
	for range 10 {
		if o := c.Do(context.Background(), Request{Method: http.MethodGet, Target: "/avs"}); o.Status != http.StatusOK {
			t.Fatalf("status %d: %v", o.Status, o.Err)
		}
	}
	if hits[0].Load() != 5 || hits[1].Load() != 5 {
		t.Errorf("requests per server: %d, %d; want 5 each", hits[0].Load(), hits[1].Load())
	}
}
