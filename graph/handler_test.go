package graph_test

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/graph"
	"github.com/stakegraph/stakegraph/internal/derrors"
)

func TestInvalidQueries(t *testing.T) {
	db := demoDB(t)
	c := newClient(t, db, testOptions())

	for _, tc := range []struct {
		name, code, query string
		vars              map[string]any
	}{
		{"address", "unprocessable_entity", `{ avs(address: "0x1234") { address } }`, nil},
		{"address variable", "unprocessable_entity", `query($a: Address!) { avs(address: $a) { address } }`, map[string]any{"a": "vitalik.eth"}},
		{"take 0", "unprocessable_entity", `{ avsList(take: 0) { meta { total } } }`, nil},
		{"take 1001", "unprocessable_entity", `{ operators(take: 1001) { meta { total } } }`, nil},
		{"nested take", "unprocessable_entity", `{ avsList(take: 1) { data { operators(take: 5000) { meta { total } } } } }`, nil},
		{"negative skip", "unprocessable_entity", `{ withdrawals(skip: -5) { meta { total } } }`, nil},
		{"two sorts", "unprocessable_entity", `{ avsList(sortByApy: desc, sortByTvl: asc) { meta { total } } }`, nil},
		{"enum variable", "bad_request", `query($s: SortOrder) { avsList(sortByTvl: $s) { meta { total } } }`, map[string]any{"s": "sideways"}},
		{"int variable", "bad_request", `query($n: Int) { avsList(take: $n) { meta { total } } }`, map[string]any{"n": "twelve"}},
		{"missing variable", "bad_request", `query($a: Address!) { avs(address: $a) { address } }`, nil},
		{"syntax", "bad_request", `{ avsList { data { address }`, nil},
		{"unknown field", "bad_request", `{ avsList { data { ticker } } }`, nil},
		{"enum literal", "bad_request", `{ avsList(sortByTvl: sideways) { meta { total } } }`, nil},
		{"complexity", "unprocessable_entity", `{ operators(take: 1000) { data { stakers(take: 1000) { data { address } } } } }`, nil},
		{"depth", "unprocessable_entity", `{ avs(address: "0x0000000000000000000000000000000000000001") ` +
			strings.Repeat(`{ operators { data { avs `, 4) + `{ address }` + strings.Repeat(` } } }`, 4) + ` }`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := c.expectCode(tc.code, tc.query, tc.vars)
			if e.Message == "" || strings.Contains(e.Message, "internal") {
				t.Errorf("message %q", e.Message)
			}
			switch tc.name {
			case "complexity":
				if !strings.Contains(e.Message, "complexity") {
					t.Errorf("message %q does not name the complexity", e.Message)
				}
			case "depth":
				if !strings.Contains(e.Message, "depth") {
					t.Errorf("message %q does not name the depth", e.Message)
				}
			}
		})
	}
}

// TestTransports checks GET and POST, introspection and automatic persisted
// queries.
func TestTransports(t *testing.T) {
	db := demoDB(t)
	c := newClient(t, db, testOptions())
	get := func(params url.Values) response {
		t.Helper()
		res, err := http.Get(c.url + "?" + params.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var r response
		if err := json.NewDecoder(res.Body).Decode(&r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	q := `{ strategies { symbol } }`
	r := get(url.Values{"query": {q}})
	if len(r.Errors) > 0 || !strings.Contains(string(r.Data), `"stETH"`) {
		t.Errorf("GET: %s %+v", r.Data, r.Errors)
	}

	schema := query[struct {
		Schema struct {
			Types []struct{ Name, Description string }
		} `json:"__schema"`
	}](c, `{ __schema { types { name description } } }`, nil)
	documented := 0
	for _, ty := range schema.Schema.Types {
		if ty.Name == "Avs" || ty.Name == "Address" {
			if ty.Description == "" {
				t.Errorf("type %s has no description", ty.Name)
			}
			documented++
		}
	}
	if documented != 2 {
		t.Errorf("introspection lists %d of Avs and Address", documented)
	}

	sum := sha256.Sum256([]byte(q))
	ext := fmt.Sprintf(`{"persistedQuery":{"version":1,"sha256Hash":%q}}`, hex.EncodeToString(sum[:]))
	r = get(url.Values{"extensions": {ext}})
	if len(r.Errors) != 1 || r.Errors[0].Message != "PersistedQueryNotFound" || r.Errors[0].Extensions.Code != "not_found" {
		t.Errorf("unknown persisted query: %+v", r.Errors)
	}
	r = get(url.Values{"extensions": {ext}, "query": {q}})
	if len(r.Errors) > 0 {
		t.Errorf("registering a persisted query: %+v", r.Errors)
	}
	r = get(url.Values{"extensions": {ext}})
	if len(r.Errors) > 0 || !strings.Contains(string(r.Data), `"stETH"`) {
		t.Errorf("persisted query by hash: %s %+v", r.Data, r.Errors)
	}
}

// TestPlaygroundAndAuthentication checks that a browser gets the offline
// playground without a key while GraphQL requests need one.
func TestPlaygroundAndAuthentication(t *testing.T) {
	db := demoDB(t)
	opts := testOptions()
	opts.Authenticate = func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-API-Token") != "secret" {
				http.Error(w, `{"error":{"code":"unauthorized","message":"no key"}}`, http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	srv := httptest.NewServer(graph.NewHandler(db, opts))
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/graphql", nil)
	req.Header.Set("Accept", "text/html,application/xhtml+xml")
	req.Header.Set("Accept-Encoding", "gzip")
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") ||
		res.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("playground: %d %v", res.StatusCode, res.Header)
	}
	zr, err := gzip.NewReader(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	page, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	if !strings.Contains(html, `<div id="root">`) || !strings.Contains(html, "X-API-Token") || !strings.Contains(html, "graphiql") {
		t.Errorf("the page is not the playground: %.200s", html)
	}
	// Everything is inline: no script, style sheet or font from elsewhere.
	for _, external := range []string{"<script src", "<link", `src="http`, `href="http`, "url(http", `url("http`, "@import"} {
		if strings.Contains(html, external) {
			t.Errorf("the playground loads %q from elsewhere", external)
		}
	}
	req.Header.Set("If-None-Match", res.Header.Get("ETag"))
	if res2, err := http.DefaultTransport.RoundTrip(req); err != nil || res2.StatusCode != http.StatusNotModified {
		t.Errorf("revalidation: %v %v", res2, err)
	}

	post := func(key string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/graphql", strings.NewReader(`{"query":"{ strategies { symbol } }"}`))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("X-API-Token", key)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := post(""); code != http.StatusUnauthorized {
		t.Errorf("query without a key: %d", code)
	}
	if code := post("secret"); code != http.StatusOK {
		t.Errorf("query with the key: %d", code)
	}
}

func TestExecutor(t *testing.T) {
	db := demoDB(t)
	ex := graph.NewExecutor(db, testOptions())
	ctx := context.Background()

	data, err := ex.Execute(ctx, `query($take: Int!) { result: avsList(take: $take) { data { address } meta { total skip take } } }`,
		map[string]any{"take": 2})
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Result struct {
			Data []struct{ Address string }
			Meta meta
		}
	}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Result.Data) != 2 || out.Result.Meta.Take != 2 || out.Result.Meta.Total == 0 {
		t.Errorf("Execute: %s", data)
	}

	data, err = ex.Execute(ctx, `query($a: Address!) { avs(address: $a) { address } }`,
		map[string]any{"a": "0x000000000000000000000000000000000000dead"})
	if err != nil || string(data) != `{"avs":null}` {
		t.Errorf("unknown AVS: %s, %v", data, err)
	}

	for _, tc := range []struct {
		query  string
		vars   map[string]any
		status int
		code   string
	}{
		{`query($a: Address!) { avs(address: $a) { address } }`, map[string]any{"a": "nope"}, 422, "unprocessable_entity"},
		{`{ staker(address: "0x0000000000000000000000000000000000000001") { delegationEvents(startAt: "2020-01-01", endAt: "2021-01-01") { meta { total } } } }`, nil, 422, "unprocessable_entity"},
		{`{ avsList { `, nil, 400, "bad_request"},
		{`{ nothing }`, nil, 400, "bad_request"},
	} {
		_, err := ex.Execute(ctx, tc.query, tc.vars)
		var gerr *graph.Error
		if !errors.As(err, &gerr) || gerr.Code != tc.code {
			t.Errorf("%s: error %v, want code %s", tc.query, err, tc.code)
			continue
		}
		if status, code := derrors.Status(err); status != tc.status || code != tc.code {
			t.Errorf("%s: derrors.Status = %d %s, want %d %s", tc.query, status, code, tc.status, tc.code)
		}
	}
}

// TestStatementsDoNotGrowWithItems runs a query that walks four levels of
// relations (AVS → their operators → each operator's AVS registrations →
// each registration's AVS, with curated metadata, TVL, rewards and counts on
// the way) for 3 and for 12 AVS, and checks that both cost the same, small,
// number of SQL statements: every relation is loaded by one batched
// statement per level, never one per item.
func TestStatementsDoNotGrowWithItems(t *testing.T) {
	db := demoDB(t)
	// A batch collects the keys that resolvers running concurrently load
	// within its window. Under the race detector on a busy machine,
	// hundreds of resolver goroutines can take longer than the production
	// window of 2ms to be scheduled, which would split a batch; a wide
	// window keeps the count about the query's shape.
	opts := testOptions()
	opts.BatchWait = 250 * time.Millisecond
	c := newClient(t, db, opts)
	const q = `query($n: Int!) {
		avsList(take: $n, includeInvisible: true) {
			data {
				address
				curatedMetadata { tags }
				tvl { tvl }
				operators(take: 5) {
					data {
						address
						tvl { tvl }
						avsRegistrations {
							avsAddress
							avs { address metadataName curatedMetadata { isVisible } }
						}
						operator { stakers(take: 2) { data { address delegatedTo { address } } meta { total } } }
					}
					meta { total }
				}
				rewards { totalSubmissions submissions(take: 2) { strategies { strategy { symbol } } } }
			}
			meta { total }
		}
	}`
	type result struct {
		AvsList struct {
			Data []struct {
				Operators struct {
					Data []struct {
						AvsRegistrations []struct{ Avs *struct{ Address string } }
					}
				}
			}
		}
	}
	run := func(n int) (statements int64, registrations int) {
		before := db.StatementCount()
		got := query[result](c, q, map[string]any{"n": n})
		statements = db.StatementCount() - before
		if len(got.AvsList.Data) != n {
			t.Fatalf("%d AVS, want %d", len(got.AvsList.Data), n)
		}
		for _, a := range got.AvsList.Data {
			for _, o := range a.Operators.Data {
				registrations += len(o.AvsRegistrations)
			}
		}
		return statements, registrations
	}
	small, smallRegs := run(3)
	large, largeRegs := run(12)
	if large != small {
		small = min(small, fewestStatements(5, 0, func() int64 { n, _ := run(3); return n }))
		large = min(large, fewestStatements(5, small, func() int64 { n, _ := run(12); return n }))
	}
	t.Logf("3 AVS (%d registrations): %d statements; 12 AVS (%d registrations): %d statements", smallRegs, small, largeRegs, large)
	if largeRegs <= smallRegs {
		t.Fatalf("the larger query walks no more registrations (%d vs %d)", largeRegs, smallRegs)
	}
	if large != small {
		t.Errorf("statements grew with the number of items: %d for 3 AVS, %d for 12", small, large)
	}
	// About one statement per list, relation and count of the query.
	if large > 18 {
		t.Errorf("%d statements for one query, want at most 18", large)
	}
}
