package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/apikey"
	"github.com/stakegraph/stakegraph/internal/freeport"
	"github.com/stakegraph/stakegraph/internal/syncbuffer"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// statusWithKey sends GET base+path with key in X-API-Token and returns the
// status and body.
func statusWithKey(t *testing.T, base, path, key string) (int, string) {
	t.Helper()
	code, _, body := getWithKey(t, base+path, key)
	return code, body
}

// getWithKey sends GET url with key and returns the status, header and
// body of the answer.
func getWithKey(t *testing.T, url, key string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Token", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(body)
}

// graphqlStatusWithKey posts a small GraphQL query with key and returns the
// status.
func graphqlStatusWithKey(t *testing.T, base, key string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/graphql", strings.NewReader(`{"query":"{ metrics { totalStakers } }"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Token", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode
}

// TestServeKeyChanges runs serve and changes its keys with the keys
// commands while it serves: a created key works at once, and a revoked key
// is refused by every request sent more than apikey.DefaultCheckInterval
// (1 s) after `keys revoke` returned, on REST and GraphQL alike.
func TestServeKeyChanges(t *testing.T) {
	dbURL, db := emptyMainnetDB(t)
	env := map[string]string{"DATABASE_URL": dbURL}
	ctx := context.Background()
	old, err := db.CreateAPIKey(ctx, "old", nil)
	if err != nil {
		t.Fatal(err)
	}
	base := serveOnFreePort(t, dbURL)
	if code, body := statusWithKey(t, base, "/avs", old); code != http.StatusOK {
		t.Fatalf("GET /avs with a key made before serve started: %d %s", code, body)
	}

	// A key created while serve runs works at once.
	r := stakegraph(t, env, "keys", "create", "--name", "new")
	if r.code != 0 {
		t.Fatalf("keys create: exit %d\n%s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	fresh := lines[len(lines)-1]
	if code, body := statusWithKey(t, base, "/avs", fresh); code != http.StatusOK {
		t.Errorf("GET /avs with a key created a moment ago: %d %s", code, body)
	}
	if code := graphqlStatusWithKey(t, base, fresh); code != http.StatusOK {
		t.Errorf("POST /graphql with a key created a moment ago: %d", code)
	}

	// A revoked key stops working within the check interval.
	if r := stakegraph(t, env, "keys", "revoke", "old"); r.code != 0 {
		t.Fatalf("keys revoke: exit %d\n%s", r.code, r.stderr)
	}
	revoked := time.Now()
	for {
		sent := time.Now()
		code, body := statusWithKey(t, base, "/avs", old)
		if code == http.StatusUnauthorized {
			if !strings.Contains(body, old[:11]+"… is unknown or revoked") || strings.Contains(body, old) {
				t.Errorf("401 body %s: want the key named by its prefix only", body)
			}
			t.Logf("the revoked key was refused %v after keys revoke returned", sent.Sub(revoked).Round(time.Millisecond))
			break
		}
		if code != http.StatusOK {
			t.Fatalf("GET /avs with a key being revoked: %d %s", code, body)
		}
		if since := sent.Sub(revoked); since > apikey.DefaultCheckInterval {
			t.Fatalf("the revoked key still answered 200 to a request sent %v after keys revoke returned", since)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, _ := statusWithKey(t, base, "/avs", old); code != http.StatusUnauthorized {
		t.Errorf("GET /avs with the revoked key, again: %d", code)
	}
	if code := graphqlStatusWithKey(t, base, old); code != http.StatusUnauthorized {
		t.Errorf("POST /graphql with the revoked key: %d", code)
	}
	if code, body := statusWithKey(t, base, "/avs", fresh); code != http.StatusOK {
		t.Errorf("GET /avs with the other key after the revocation: %d %s", code, body)
	}
}

// serveAdmin runs serve with the environment env (DATABASE_URL and the
// listen addresses are added) and the given flags until the test ends, and
// returns the admin listener's base URL once it answers.
func serveAdmin(t *testing.T, env map[string]string, flags ...string) string {
	t.Helper()
	admin := fmt.Sprintf("127.0.0.1:%d", freeport.Get(t))
	e := map[string]string{
		"DATABASE_URL":          storetest.NewURL(t),
		"STAKEGRAPH_ADDR":       fmt.Sprintf("127.0.0.1:%d", freeport.Get(t)),
		"STAKEGRAPH_ADMIN_ADDR": admin,
		"STAKEGRAPH_LOG_LEVEL":  "warn",
	}
	for k, v := range env {
		e[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncbuffer.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"serve"}, flags...), func(k string) string { return e[k] }, &stdout, &stderr)
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
		if res, err := http.Get("http://" + admin + "/healthz"); err == nil {
			res.Body.Close()
			return "http://" + admin
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited with %d:\n%s", code, stderr.String())
		default:
		}
	}
	t.Fatalf("serve's admin listener never answered:\n%s", stderr.String())
	return ""
}

// TestServePprof checks that serve's admin listener serves pprof only with
// --pprof or STAKEGRAPH_PPROF=true, and never the command line, which
// holds --database-url.
func TestServePprof(t *testing.T) {
	get := func(url string) (int, string) {
		t.Helper()
		res, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(body)
	}
	for _, tc := range []struct {
		name  string
		env   map[string]string
		flags []string
		pprof bool
	}{
		{"default", nil, nil, false},
		{"flag", nil, []string{"--pprof"}, true},
		{"env", map[string]string{"STAKEGRAPH_PPROF": "true"}, nil, true},
		{"flag overrides env", map[string]string{"STAKEGRAPH_PPROF": "true"}, []string{"--pprof=false"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			admin := serveAdmin(t, tc.env, tc.flags...)
			code, body := get(admin + "/debug/pprof/")
			switch {
			case tc.pprof && (code != http.StatusOK || !strings.Contains(body, "goroutine")):
				t.Errorf("/debug/pprof/ = %d %.200s; want the index", code, body)
			case !tc.pprof && code != http.StatusNotFound:
				t.Errorf("/debug/pprof/ = %d; want 404", code)
			}
			if code, body := get(admin + "/debug/pprof/cmdline"); code != http.StatusNotFound || strings.Contains(body, "postgres") {
				t.Errorf("/debug/pprof/cmdline = %d %.200s; want 404", code, body)
			}
			if code, _ := get(admin + "/metrics"); code != http.StatusOK {
				t.Errorf("/metrics = %d", code)
			}
		})
	}
}
