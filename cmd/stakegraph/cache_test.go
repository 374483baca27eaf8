package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/internal/freeport"
	"github.com/stakegraph/stakegraph/internal/syncbuffer"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// emptyMainnetDB returns the URL of a new migrated database of the mainnet
// network without data, and a handle on it that the test's cleanup closes.
func emptyMainnetDB(t *testing.T) (string, *store.DB) {
	t.Helper()
	url := storetest.NewURL(t)
	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.EnsureNetwork(context.Background(), "mainnet"); err != nil {
		t.Fatal(err)
	}
	return url, db
}

// TestServeResponseCache checks how serve mounts the response cache: behind
// the API-key check, on REST and GraphQL, with conditional requests, and
// off with --response-cache=false.
func TestServeResponseCache(t *testing.T) {
	dbURL, db := emptyMainnetDB(t)
	ctx := context.Background()
	key, err := db.CreateAPIKey(ctx, "cache-test", nil)
	if err != nil {
		t.Fatal(err)
	}

	for _, cached := range []bool{true, false} {
		t.Run(fmt.Sprintf("cache=%v", cached), func(t *testing.T) {
			base := serveOnFreePort(t, dbURL, fmt.Sprintf("--response-cache=%v", cached))
			get := func(path, key string, header ...string) *http.Response {
				t.Helper()
				req, _ := http.NewRequest(http.MethodGet, base+path, nil)
				if key != "" {
					req.Header.Set("X-API-Token", key)
				}
				for i := 0; i+1 < len(header); i += 2 {
					req.Header.Set(header[i], header[i+1])
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				return res
			}
			// The cache reads the data version within a second of starting.
			var first *http.Response
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				first = get("/metrics", key)
				if !cached || first.Header.Get("X-Cache") == "MISS" || time.Now().After(deadline) {
					break
				}
			}
			second := get("/metrics", key)
			if first.StatusCode != 200 || second.StatusCode != 200 {
				t.Fatalf("GET /metrics: %d then %d", first.StatusCode, second.StatusCode)
			}
			if !cached {
				if x := second.Header.Get("X-Cache"); x != "" || second.Header.Get("ETag") != "" {
					t.Errorf("without the cache: X-Cache %q, ETag %q", x, second.Header.Get("ETag"))
				}
				return
			}
			if x := second.Header.Get("X-Cache"); x != "HIT" {
				t.Errorf("second GET /metrics: X-Cache %q; want HIT", x)
			}
			if r := get("/metrics", ""); r.StatusCode != http.StatusUnauthorized {
				t.Errorf("a cached route without a key: %d; want 401", r.StatusCode)
			}
			if r := get("/metrics", "sg_unknown"); r.StatusCode != http.StatusUnauthorized {
				t.Errorf("a cached route with an unknown key: %d; want 401", r.StatusCode)
			}
			if r := get("/metrics", key, "If-None-Match", second.Header.Get("ETag")); r.StatusCode != http.StatusNotModified {
				t.Errorf("If-None-Match of the ETag: %d; want 304", r.StatusCode)
			}
			if r := get("/metrics", key, "Accept-Encoding", "gzip"); r.Header.Get("Content-Encoding") != "gzip" {
				t.Errorf("gzip-accepting GET: Content-Encoding %q", r.Header.Get("Content-Encoding"))
			}

			post := func() *http.Response {
				req, _ := http.NewRequest(http.MethodPost, base+"/graphql", strings.NewReader(`{"query":"{ metrics { totalStakers } }"}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-API-Token", key)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				return res
			}
			post()
			if r := post(); r.StatusCode != 200 || r.Header.Get("X-Cache") != "HIT" {
				t.Errorf("second GraphQL POST: %d, X-Cache %q; want 200 HIT", r.StatusCode, r.Header.Get("X-Cache"))
			}
		})
	}
}

// serveOnFreePort runs serve on free ports against dbURL with extra flags until
// the test ends, and returns the API's base URL once it answers.
func serveOnFreePort(t *testing.T, dbURL string, flags ...string) string {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freeport.Get(t))
	env := map[string]string{"DATABASE_URL": dbURL, "STAKEGRAPH_ADDR": addr, "STAKEGRAPH_LOG_LEVEL": "warn"}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncbuffer.Buffer
	done := make(chan int, 1)
	go func() {
		args := append([]string{"serve", "--admin-addr", "off"}, flags...)
		done <- run(ctx, args, func(k string) string { return env[k] }, &stdout, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop")
		}
	})
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if res, err := http.Get("http://" + addr + "/healthz"); err == nil {
			res.Body.Close()
			return "http://" + addr
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited with %d:\n%s", code, stderr.String())
		default:
		}
	}
	t.Fatalf("serve never answered:\n%s", stderr.String())
	return ""
}

// TestServeCacheFollowsAnnouncements checks that a new data version
// reaches serve's response cache by PostgreSQL's announcement, with the
// version polls an hour apart: the next request after the change misses.
func TestServeCacheFollowsAnnouncements(t *testing.T) {
	dbURL, db := emptyMainnetDB(t)
	ctx := context.Background()
	key, err := db.CreateAPIKey(ctx, "announce-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	base := serveOnFreePort(t, dbURL, "--version-poll-interval", "1h")
	xcache := func() string {
		t.Helper()
		code, header, body := getWithKey(t, base+"/avs", key)
		if code != http.StatusOK {
			t.Fatalf("GET /avs: %d %s", code, body)
		}
		return header.Get("X-Cache")
	}
	bump := func() {
		t.Helper()
		if err := db.InTx(ctx, func(tx *store.Tx) error { return tx.BumpDataVersion(ctx) }); err != nil {
			t.Fatal(err)
		}
	}
	// The server listens a moment after it answers: bump until a change
	// is seen, then check that each later change is.
	deadline := time.Now().Add(time.Minute)
	for xcache() != "MISS" || xcache() != "HIT" {
		if time.Now().After(deadline) {
			t.Fatal("the cache never kept /avs")
		}
	}
	for seen := false; !seen; {
		bump()
		for end := time.Now().Add(200 * time.Millisecond); !seen && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			seen = xcache() == "MISS"
		}
		if time.Now().After(deadline) {
			t.Fatal("a new data version never reached the cache")
		}
	}
	for i := 0; i < 3; i++ {
		if x := xcache(); x != "HIT" {
			t.Fatalf("before change %d: X-Cache %s; want HIT", i+1, x)
		}
		bump()
		waitUntilTrue(t, fmt.Sprintf("change %d reaches the cache", i+1), func() bool { return xcache() == "MISS" })
	}
}

// waitUntilTrue waits until ok holds, failing the test after a minute.
func waitUntilTrue(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServeResponseCacheBytes checks that --response-cache-bytes bounds the
// response cache: with a bound smaller than any response, the cache keeps
// only the last one stored, so a response is served from it until another
// takes its place.
func TestServeResponseCacheBytes(t *testing.T) {
	dbURL, db := emptyMainnetDB(t)
	key, err := db.CreateAPIKey(context.Background(), "cache-bytes-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	base := serveOnFreePort(t, dbURL, "--response-cache-bytes", "1")
	xcache := func(path string) string {
		t.Helper()
		status, header, body := getWithKey(t, base+path, key)
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d %.200s", path, status, body)
		}
		return header.Get("X-Cache")
	}
	// The cache reads the data version within a second of starting.
	for deadline := time.Now().Add(10 * time.Second); xcache("/metrics") != "MISS"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the response cache did not start")
		}
	}
	if x := xcache("/metrics"); x != "HIT" {
		t.Errorf("GET /metrics again: X-Cache %q; want HIT (the last response stored stays)", x)
	}
	if x := xcache("/metrics/total-stakers"); x != "MISS" {
		t.Errorf("GET /metrics/total-stakers: X-Cache %q; want MISS", x)
	}
	if x := xcache("/metrics"); x != "MISS" {
		t.Errorf("GET /metrics after another response: X-Cache %q; want MISS (evicted beyond 1 byte)", x)
	}
	if r := stakegraph(t, nil, "serve", "--response-cache-bytes", "0"); r.code == 0 || !strings.Contains(r.stderr, "must be positive") {
		t.Errorf("serve --response-cache-bytes 0: exit %d\n%s", r.code, r.stderr)
	}
}
