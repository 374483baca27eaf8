package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/internal/freeport"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// limitsDB returns a fresh database for serve and a handle on it for the
// test, with a key whose rate limit no test here reaches.
func limitsDB(t *testing.T) (url string, db *store.DB, key string) {
	t.Helper()
	url = storetest.NewURL(t)
	ctx := context.Background()
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.EnsureNetwork(ctx, "mainnet"); err != nil {
		t.Fatal(err)
	}
	limit := 100000
	key, err = db.CreateAPIKey(ctx, "limits", &limit)
	if err != nil {
		t.Fatal(err)
	}
	return url, db, key
}

// hangTimeout bounds how long a test here waits for something that
// happens at once unless the code under test is broken (a request queued
// behind a blocked one, a poller that stopped). It detects a hang, not a
// slow machine, so it is far above any answer's time under load.
const hangTimeout = 2 * time.Minute

// hangClient gives up on an answer after hangTimeout.
var hangClient = &http.Client{Timeout: hangTimeout}

// apiAnswer is a response of the API: its status, the REST error or the
// first GraphQL error's code, and how long it took.
type apiAnswer struct {
	status  int
	code    string // error.code (REST) or errors[0].extensions.code (GraphQL)
	message string
	body    string
	elapsed time.Duration
}

// call sends a GET (body empty) or a GraphQL POST with key and reads the
// answer.
func call(t *testing.T, url, key, body string) apiAnswer {
	t.Helper()
	method := http.MethodGet
	if body != "" {
		method = http.MethodPost
	}
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("X-API-Token", key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	res, err := hangClient.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, url, err)
		return apiAnswer{}
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	a := apiAnswer{status: res.StatusCode, body: string(b), elapsed: time.Since(start)}
	var decoded struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		Errors []struct {
			Message    string `json:"message"`
			Extensions struct {
				Code string `json:"code"`
			} `json:"extensions"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(b, &decoded); err != nil {
		t.Errorf("%s %s: %d with a body that is not JSON: %.300q", method, url, res.StatusCode, b)
	}
	a.code, a.message = decoded.Error.Code, decoded.Error.Message
	if len(decoded.Errors) > 0 {
		a.code, a.message = decoded.Errors[0].Extensions.Code, decoded.Errors[0].Message
	}
	return a
}

// aliasedAVSLists is a GraphQL request body selecting n pages of the AVS
// list under aliases, which the server resolves concurrently, from skip
// from on (requests with different bodies are not answered together by
// the response cache).
func aliasedAVSLists(n, from int) string {
	var q strings.Builder
	q.WriteString("{")
	for i := range n {
		fmt.Fprintf(&q, " a%d: avsList(skip: %d, take: 1) { meta { total } }", i, from+i)
	}
	q.WriteString(" }")
	b, _ := json.Marshal(map[string]string{"query": q.String()})
	return string(b)
}

// waitForWaiters waits until at least n connections to db's database wait
// for a lock.
func waitForWaiters(t *testing.T, db *store.DB, n int) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		got := storetest.LockWaiters(t, db)
		if got >= n {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%d statements wait for the lock; want %d", got, n)
		}
	}
}

// TestServeLockedTable holds a lock on the avs table under a running
// server: REST and GraphQL requests that read it are answered with the
// timeout error (504, gateway_timeout) once the statement timeout or the
// request deadline passes, their statements stop waiting on the server,
// and a request that reads another table is served at once meanwhile.
func TestServeLockedTable(t *testing.T) {
	const limit = 300 * time.Millisecond
	url, db, key := limitsDB(t)
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"statement timeout", []string{"--statement-timeout", limit.String(), "--request-timeout", "20s"}},
		{"request deadline", []string{"--request-timeout", limit.String(), "--statement-timeout", "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := serveOnFreePort(t, url, tc.flags...)
			// The request beside the blocked ones must itself finish
			// within the limit, which its first run on a cold server
			// (statements prepared, caches filled) on a busy machine may
			// not: one run before the lock warms it, and a 504 of the
			// limit is tried again while the table stays locked.
			withdrawals := func() apiAnswer {
				t.Helper()
				var a apiAnswer
				for end := time.Now().Add(hangTimeout); ; {
					if a = call(t, base+"/withdrawals?take=1", key, ""); a.status != http.StatusGatewayTimeout || time.Now().After(end) {
						return a
					}
				}
			}
			if a := withdrawals(); a.status != http.StatusOK {
				t.Fatalf("GET /withdrawals before the lock: %d %s", a.status, a.body)
			}
			release := storetest.LockTables(t, db, "avs")
			defer release()

			var wg sync.WaitGroup
			wg.Go(func() {
				time.Sleep(50 * time.Millisecond) // while the requests below wait
				if a := withdrawals(); a.status != http.StatusOK {
					t.Errorf("GET /withdrawals beside blocked requests: %d %s after %v; want 200", a.status, a.body, a.elapsed)
				}
			})
			for _, req := range []struct{ path, body string }{
				{"/avs", ""},
				{"/graphql", `{"query":"{ avsList(take: 1) { meta { total } } }"}`},
			} {
				a := call(t, base+req.path, key, req.body)
				if a.status != http.StatusGatewayTimeout || a.code != "gateway_timeout" {
					t.Errorf("%s on a locked table: %d %s; want 504 gateway_timeout", req.path, a.status, a.body)
				}
				if a.elapsed < limit || a.elapsed > limit+3*time.Second {
					t.Errorf("%s on a locked table answered after %v; want about %v", req.path, a.elapsed, limit)
				}
			}
			wg.Wait()
			for end := time.Now().Add(5 * time.Second); storetest.LockWaiters(t, db) > 0; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatalf("the statements of the timed-out requests still wait on the server")
				}
			}
		})
	}
}

// TestServeConnsPerRequest sends a GraphQL request whose eight aliased
// lists query a locked table at once: with --db-conns-per-request 2 it
// holds two connections, not eight, while another request is served; it
// completes once the lock is released. Without the limit it holds more.
func TestServeConnsPerRequest(t *testing.T) {
	url, db, key := limitsDB(t)
	for _, tc := range []struct {
		conns string
		want  int // waiting statements to expect
	}{{"2", 2}, {"0", 3}} {
		t.Run("conns="+tc.conns, func(t *testing.T) {
			base := serveOnFreePort(t, url, "--db-conns-per-request", tc.conns, "--request-timeout", "30s", "--statement-timeout", "0")
			release := storetest.LockTables(t, db, "avs")
			defer release()
			done := make(chan apiAnswer, 1)
			go func() { done <- call(t, base+"/graphql", key, aliasedAVSLists(8, 0)) }()
			waitForWaiters(t, db, tc.want)
			if tc.conns != "0" {
				for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
					if n := storetest.LockWaiters(t, db); n > tc.want {
						t.Fatalf("one request holds %d connections at once; want at most %s", n, tc.conns)
					}
				}
			}
			// Served while the other request stays blocked (it is
			// released only below): were it queued behind it, the call
			// would give up after hangTimeout.
			if a := call(t, base+"/withdrawals?take=1", key, ""); a.status != http.StatusOK {
				t.Errorf("GET /withdrawals beside the blocked request: %d %s after %v; want 200 before the other is released", a.status, a.body, a.elapsed)
			}
			release()
			select {
			case a := <-done:
				if a.status != http.StatusOK || a.code != "" {
					t.Errorf("the aliased request after the lock was released: %d %.500s", a.status, a.body)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("the aliased request did not finish after the lock was released")
			}
		})
	}
}

// TestServePollerWhileSaturated fills every connection of the API's pool
// with requests blocked on a locked table and checks that the response
// cache's poller, on a connection of its own, still sees a new data
// version (on the admin /metrics) within a few poll intervals.
func TestServePollerWhileSaturated(t *testing.T) {
	url, db, key := limitsDB(t)
	admin := fmt.Sprintf("127.0.0.1:%d", freeport.Get(t))
	base := serveOnFreePort(t, url, "--admin-addr", admin, "--request-timeout", "60s", "--statement-timeout", "0")
	dataVersion := func() (int64, bool) {
		res, err := http.Get("http://" + admin + "/metrics")
		if err != nil {
			return 0, false
		}
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "stakegraph_data_version "); ok {
				f, err := strconv.ParseFloat(v, 64)
				return int64(f), err == nil
			}
		}
		return 0, false
	}
	var before int64
	ctx := context.Background()
	want, err := db.DataVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if v, ok := dataVersion(); ok && v == want {
			before = v
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the poller never read data version %d", want)
		}
	}

	release := storetest.LockTables(t, db, "avs")
	defer release()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer release()
	// Six requests of up to four connections each ask for more than the
	// pool's 16.
	for i := range 6 {
		wg.Go(func() { call(t, base+"/graphql", key, aliasedAVSLists(8, 100*i)) })
	}
	waitForWaiters(t, db, store.DefaultPool.MaxOpenConns)

	if _, err := storetest.SQL(t, db).ExecContext(ctx, `UPDATE service_state SET data_version = data_version + 1`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		if v, ok := dataVersion(); ok && v == before+1 {
			break
		}
		if time.Since(start) > hangTimeout {
			v, _ := dataVersion()
			t.Fatalf("with the pool saturated the poller still reports data version %d after %v; want %d", v, time.Since(start), before+1)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the poller saw the new data version %v after the commit, with %d statements blocked", time.Since(start).Round(time.Millisecond), storetest.LockWaiters(t, db))
}

// TestServeGraphQLLimits checks that serve's GraphQL limit flags reach
// /graphql and not the REST routes: a small body limit and field limit
// reject a request the defaults accept, while REST still answers.
func TestServeGraphQLLimits(t *testing.T) {
	url, _, key := limitsDB(t)
	base := serveOnFreePort(t, url, "--graphql-body-limit", "2048", "--graphql-field-limit", "10")
	query := func(fields int) string {
		var b strings.Builder
		for i := range fields {
			fmt.Fprintf(&b, " a%d: __typename", i)
		}
		body, _ := json.Marshal(map[string]string{"query": "{" + b.String() + " }"})
		return string(body)
	}
	if a := call(t, base+"/graphql", key, query(10)); a.status != http.StatusOK {
		t.Errorf("10 fields: %d %s %s", a.status, a.code, a.message)
	}
	if a := call(t, base+"/graphql", key, query(11)); a.status != http.StatusUnprocessableEntity || a.code != "unprocessable_entity" {
		t.Errorf("11 fields with --graphql-field-limit 10: %d %s %s", a.status, a.code, a.message)
	}
	big, _ := json.Marshal(map[string]string{"query": "{ __typename }", "operationName": strings.Repeat("x", 4096)})
	if a := call(t, base+"/graphql", key, string(big)); a.status != http.StatusRequestEntityTooLarge || a.code != "bad_request" {
		t.Errorf("a 4 KiB body with --graphql-body-limit 2048: %d %s %s", a.status, a.code, a.message)
	}
	if a := call(t, base+"/avs?take=50", key, ""); a.status != http.StatusOK {
		t.Errorf("REST /avs?take=50: %d %s %s", a.status, a.code, a.message)
	}
	if r := stakegraph(t, nil, "serve", "--graphql-statement-limit", "0"); r.code == 0 || !strings.Contains(r.stderr, "must be positive") {
		t.Errorf("serve --graphql-statement-limit 0: exit %d\n%s", r.code, r.stderr)
	}
}
