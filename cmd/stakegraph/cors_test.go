package main

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// exposedHeaders is the Access-Control-Expose-Headers of every response.
const exposedHeaders = "Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, ETag, X-Cache, X-Request-Id"

// answer is a response as the tests read it.
type answer struct {
	status int
	header http.Header
	body   string
}

// send sends a request to the server under test, with header given as
// name, value pairs.
func send(t *testing.T, method, url, body string, header ...string) answer {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return answer{status: res.StatusCode, header: res.Header, body: string(b)}
}

// varies reports whether the Vary header of h names field.
func varies(h http.Header, field string) bool {
	for _, v := range h.Values("Vary") {
		for name := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(name), field) {
				return true
			}
		}
	}
	return false
}

// TestServeCORS checks that /graphql answers browsers exactly as the REST
// API does: preflights without a key, headers a page may read on every
// answer, HEAD and OPTIONS handled.
func TestServeCORS(t *testing.T) {
	dbURL, db := emptyMainnetDB(t)
	ctx := context.Background()
	key, err := db.CreateAPIKey(ctx, "cors-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	base := serveOnFreePort(t, dbURL)
	const origin = "https://frontend.example"

	t.Run("preflight", func(t *testing.T) {
		for path, methods := range map[string]string{
			"/graphql": "GET, HEAD, POST, OPTIONS",
			"/avs":     "GET, HEAD, OPTIONS",
			"/metrics": "GET, HEAD, OPTIONS",
		} {
			// No key: a browser never sends one with a preflight.
			r := send(t, http.MethodOptions, base+path, "",
				"Origin", origin,
				"Access-Control-Request-Method", "POST",
				"Access-Control-Request-Headers", "content-type,x-api-token")
			if r.status != http.StatusNoContent || r.body != "" {
				t.Errorf("OPTIONS %s: %d %q; want 204 and no body", path, r.status, r.body)
			}
			for name, want := range map[string]string{
				"Access-Control-Allow-Origin":   "*",
				"Access-Control-Allow-Methods":  methods,
				"Access-Control-Allow-Headers":  "X-API-Token, Content-Type",
				"Access-Control-Expose-Headers": exposedHeaders,
				"Access-Control-Max-Age":        "86400",
				"Allow":                         methods,
			} {
				if got := r.header.Get(name); got != want {
					t.Errorf("OPTIONS %s: %s = %q; want %q", path, name, got, want)
				}
			}
		}
		// An OPTIONS request that is not a preflight is answered alike.
		if r := send(t, http.MethodOptions, base+"/graphql", ""); r.status != http.StatusNoContent || r.header.Get("Allow") != "GET, HEAD, POST, OPTIONS" {
			t.Errorf("OPTIONS /graphql without CORS headers: %d, Allow %q", r.status, r.header.Get("Allow"))
		}
	})

	t.Run("answers", func(t *testing.T) {
		const query = `{"query":"{ metrics { totalStakers } }"}`
		for _, c := range []struct {
			name, method, path, body, key string
			status                        int
		}{
			{"GraphQL POST", http.MethodPost, "/graphql", query, key, http.StatusOK},
			{"GraphQL GET", http.MethodGet, "/graphql?query=%7B%20metrics%20%7B%20totalStakers%20%7D%20%7D", "", key, http.StatusOK},
			{"GraphQL without a key", http.MethodPost, "/graphql", query, "", http.StatusUnauthorized},
			{"REST", http.MethodGet, "/metrics", "", key, http.StatusOK},
			{"REST without a key", http.MethodGet, "/metrics", "", "", http.StatusUnauthorized},
		} {
			header := []string{"Origin", origin, "Content-Type", "application/json"}
			if c.key != "" {
				header = append(header, "X-API-Token", c.key)
			}
			r := send(t, c.method, base+c.path, c.body, header...)
			if r.status != c.status {
				t.Errorf("%s: %d; want %d (%s)", c.name, r.status, c.status, r.body)
			}
			if got := r.header.Get("Access-Control-Allow-Origin"); got != "*" {
				t.Errorf("%s: Access-Control-Allow-Origin = %q", c.name, got)
			}
			if got := r.header.Get("Access-Control-Expose-Headers"); got != exposedHeaders {
				t.Errorf("%s: Access-Control-Expose-Headers = %q", c.name, got)
			}
			if c.key != "" {
				// The headers it exposes are there to read.
				for _, name := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "X-Request-Id", "X-Cache"} {
					if r.header.Get(name) == "" {
						t.Errorf("%s: no %s header", c.name, name)
					}
				}
			}
		}
	})

	t.Run("HEAD", func(t *testing.T) {
		get := send(t, http.MethodGet, base+"/graphql?query=%7Bmetrics%7BtotalStakers%7D%7D", "", "X-API-Token", key, "Accept", "application/json")
		head := send(t, http.MethodHead, base+"/graphql?query=%7Bmetrics%7BtotalStakers%7D%7D", "", "X-API-Token", key, "Accept", "application/json")
		if get.status != http.StatusOK || head.status != http.StatusOK || head.body != "" {
			t.Errorf("GET then HEAD of a GraphQL query: %d, %d %q; want 200, 200 and no body", get.status, head.status, head.body)
		}
		if ct := head.header.Get("Content-Type"); ct != get.header.Get("Content-Type") || !strings.HasPrefix(ct, "application/json") {
			t.Errorf("HEAD Content-Type %q; GET's %q", ct, get.header.Get("Content-Type"))
		}
		if !varies(head.header, "Accept") || head.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("HEAD: Vary %q, Access-Control-Allow-Origin %q", head.header.Values("Vary"), head.header.Get("Access-Control-Allow-Origin"))
		}
		// A browser's HEAD of the playground page, which needs no key.
		page := send(t, http.MethodHead, base+"/graphql", "", "Accept", "text/html")
		if page.status != http.StatusOK || !strings.HasPrefix(page.header.Get("Content-Type"), "text/html") || page.body != "" {
			t.Errorf("HEAD of the playground: %d %q %q", page.status, page.header.Get("Content-Type"), page.body)
		}
		// Methods the endpoint does not serve are listed with OPTIONS.
		put := send(t, http.MethodPut, base+"/graphql", "", "X-API-Token", key)
		if put.status != http.StatusMethodNotAllowed || put.header.Get("Allow") != "GET, HEAD, POST, OPTIONS" {
			t.Errorf("PUT /graphql: %d, Allow %q; want 405 and GET, HEAD, POST, OPTIONS", put.status, put.header.Get("Allow"))
		}
	})
}

// TestServeCacheByMediaType checks that the response cache keeps GraphQL
// answers apart by the media type negotiated from Accept, and says so
// with Vary: Accept.
func TestServeCacheByMediaType(t *testing.T) {
	dbURL, db := emptyMainnetDB(t)
	ctx := context.Background()
	key, err := db.CreateAPIKey(ctx, "vary-test", nil)
	if err != nil {
		t.Fatal(err)
	}
	base := serveOnFreePort(t, dbURL)
	// The cache reads the data version within a second of starting.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if send(t, http.MethodGet, base+"/metrics/total-stakers", "", "X-API-Token", key).header.Get("X-Cache") != "BYPASS" || time.Now().After(deadline) {
			break
		}
	}

	const graphqlResponse = "application/graphql-response+json"
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		t.Run(method, func(t *testing.T) {
			// Each method asks for its own fields, so that the two runs do
			// not share entries.
			field := "totalStakers"
			if method == http.MethodGet {
				field = "totalOperators"
			}
			query := "{ metrics { " + field + " } }"
			ask := func(accept string) answer {
				t.Helper()
				if method == http.MethodGet {
					return send(t, method, base+"/graphql?query="+strings.ReplaceAll(query, " ", "%20"), "", "X-API-Token", key, "Accept", accept)
				}
				return send(t, method, base+"/graphql", `{"query":"`+query+`"}`, "X-API-Token", key, "Accept", accept, "Content-Type", "application/json")
			}
			var bodies []string
			for i, c := range []struct{ accept, wantType, wantCache string }{
				{"application/json", "application/json", "MISS"},
				// Asked with the other media type first, it is not
				// served from the entry of the first.
				{graphqlResponse, graphqlResponse, "MISS"},
				{"application/json", "application/json", "HIT"},
				{graphqlResponse, graphqlResponse, "HIT"},
				// The same choices spelled otherwise share the entries.
				{graphqlResponse + ", application/json;q=0.9", graphqlResponse, "HIT"},
				{"application/json, " + graphqlResponse, "application/json", "HIT"},
			} {
				r := ask(c.accept)
				if r.status != http.StatusOK {
					t.Fatalf("request %d (Accept %q): %d %s", i, c.accept, r.status, r.body)
				}
				if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, c.wantType) {
					t.Errorf("request %d (Accept %q): Content-Type %q; want %s", i, c.accept, ct, c.wantType)
				}
				if x := r.header.Get("X-Cache"); x != c.wantCache {
					t.Errorf("request %d (Accept %q): X-Cache %q; want %s", i, c.accept, x, c.wantCache)
				}
				if !varies(r.header, "Accept") {
					t.Errorf("request %d (Accept %q): Vary %q does not name Accept", i, c.accept, r.header.Values("Vary"))
				}
				if names := strings.Split(strings.ReplaceAll(strings.Join(r.header.Values("Vary"), ","), " ", ""), ","); len(slices.Compact(slices.Sorted(slices.Values(names)))) != len(names) {
					t.Errorf("request %d: Vary repeats a field: %q", i, r.header.Values("Vary"))
				}
				bodies = append(bodies, r.body)
			}
			for i, b := range bodies {
				if b != bodies[0] || !strings.Contains(b, field) {
					t.Errorf("body %d: %s; want %s", i, b, bodies[0])
				}
			}
			// Each representation has its own validator.
			plain, graphql := ask("application/json"), ask(graphqlResponse)
			if plain.header.Get("ETag") == "" || plain.header.Get("ETag") == graphql.header.Get("ETag") {
				t.Errorf("ETags %q and %q; want two different tags", plain.header.Get("ETag"), graphql.header.Get("ETag"))
			}
		})
	}
}
