package graph_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/graph"
)

// The tests of this file check the limits that keep one request from
// taking the service down: each hostile request is answered with a clear
// error, within bounds of work that do not depend on the machine's speed
// (database statements, tokens, fields, complexity, bytes), while other
// clients are served. They log how long the answers took but assert no
// time: on a busy machine a parse of 10,000 aliases under the race
// detector took 7 s. TestMeasureProbes (STAKEGRAPH_MEASURE_PROBES=1)
// reports their times.

// TestAbuseProbes sends each probe of abuseProbes to the handler with its
// default limits, while another client sends simple requests, and checks
// that the probe is rejected with its error without reading the database
// past the statement budget, and that the other client is served.
func TestAbuseProbes(t *testing.T) {
	db := demoDB(t)
	srv := newProbeServer(t, db, graph.Options{Now: func() time.Time { return testNow }, Logger: discardLogger()})
	want := map[string]struct {
		status         int
		code, message  string
		mostStatements int64
	}{
		"10k aliased pages":         {http.StatusRequestEntityTooLarge, "bad_request", "larger than the limit of 262144 bytes", 0},
		"5k duplicate fields":       {http.StatusUnprocessableEntity, "unprocessable_entity", "more than 15000 tokens", 0},
		"40k typename aliases":      {http.StatusRequestEntityTooLarge, "bad_request", "larger than the limit", 0},
		"1k aliased introspections": {http.StatusUnprocessableEntity, "unprocessable_entity", "more than 15000 tokens", 0},
		"150 aliased pages":         {http.StatusUnprocessableEntity, "unprocessable_entity", "more than 200 database statements", 200},
		"300 MB body":               {http.StatusRequestEntityTooLarge, "bad_request", "larger than the limit", 0},
		"10 MB malformed JSON":      {http.StatusRequestEntityTooLarge, "bad_request", "larger than the limit", 0},
	}
	for _, p := range abuseProbes() {
		t.Run(p.name, func(t *testing.T) {
			w, ok := want[p.name]
			if !ok {
				t.Fatalf("no expectation for probe %q", p.name)
			}
			r := runProbe(t, db, srv, p)
			t.Logf("status %d in %v, %d statements, peak heap +%d KiB, slowest concurrent request %v",
				r.status, r.elapsed, r.statements, r.peakHeap>>10, r.concurrent)
			if r.err != nil {
				t.Fatalf("probe failed: %v", r.err)
			}
			e := singleError(t, r.status, r.body)
			if r.status != w.status || e.Extensions.Code != w.code || !strings.Contains(e.Message, w.message) {
				t.Errorf("answer %d %s %q, want %d %s and a message with %q", r.status, e.Extensions.Code, e.Message, w.status, w.code, w.message)
			}
			if r.simpleFailed > 0 {
				t.Errorf("%d of another client's %d requests failed meanwhile", r.simpleFailed, r.simple)
			}
			if r.statements > w.mostStatements {
				t.Errorf("%d SQL statements, want at most %d", r.statements, w.mostStatements)
			}
			if len(r.body) > 1024 {
				t.Errorf("%d bytes of answer: %.200s", len(r.body), r.body)
			}
		})
	}
}

// singleError decodes body, a GraphQL response of one error and no data.
func singleError(t *testing.T, status int, body []byte) gqlError {
	t.Helper()
	var r struct {
		Data   *json.RawMessage `json:"data"`
		Errors []gqlError       `json:"errors"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("status %d, the body is not a GraphQL response (%v): %.300s", status, err, body)
	}
	if len(r.Errors) != 1 || r.Data != nil {
		t.Fatalf("status %d, want one error and no data: %.300s", status, body)
	}
	return r.Errors[0]
}

// send posts body with contentType to url and returns the status and body
// of the answer.
func send(t *testing.T, method, url, contentType string, body io.Reader) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, res.Header, raw
}

// TestRequestErrors checks the answers to requests that are not GraphQL
// requests the endpoint can run: JSON GraphQL errors with a code and the
// fitting status, which quote little of the request.
func TestRequestErrors(t *testing.T) {
	db := demoDB(t)
	opts := testOptions()
	opts.BodyLimit = 64 << 10
	srv := newProbeServer(t, db, opts)
	long := strings.Repeat("y", 50000)

	for _, tc := range []struct {
		name, method, contentType, body string
		status                          int
		code, message                   string
	}{
		{"PUT", http.MethodPut, "application/json", `{"query":"{ strategies { symbol } }"}`, 405, "method_not_allowed", "method PUT"},
		{"DELETE", http.MethodDelete, "", "", 405, "method_not_allowed", "GET or POST"},
		{"text", http.MethodPost, "text/plain", `{"query":"{ strategies { symbol } }"}`, 415, "bad_request", "application/json"},
		{"no content type", http.MethodPost, "", `{"query":"{ strategies { symbol } }"}`, 415, "bad_request", "application/json"},
		{"form", http.MethodPost, "application/x-www-form-urlencoded", `query=x`, 415, "bad_request", "application/json"},
		{"not JSON", http.MethodPost, "application/json", `{"query": ` + long, 400, "bad_request", "not a GraphQL request in JSON"},
		{"malformed JSON", http.MethodPost, "application/json", `{"query": "x", "v": [` + strings.Repeat("{", 50000), 400, "bad_request", "invalid character"},
		{"empty", http.MethodPost, "application/json", ``, 400, "bad_request", "empty"},
		{"query a number", http.MethodPost, "application/json", `{"query": 5}`, 400, "bad_request", "query is a JSON number"},
		{"array", http.MethodPost, "application/json", `[{"query": "{ strategies { symbol } }"}]`, 400, "bad_request", "JSON array"},
		{"trailing data", http.MethodPost, "application/json", `{"query": "{ strategies { symbol } }"} {"query": "x"}`, 400, "bad_request", "data follows"},
		{"too large", http.MethodPost, "application/json", `{"query": "` + strings.Repeat("x", 70000) + `"}`, 413, "bad_request", "larger than the limit of 65536 bytes"},
		{"no query", http.MethodPost, "application/json", `{"qeury": "{ strategies { symbol } }"}`, 400, "bad_request", "no query"},
		{"GET no query", http.MethodGet, "", "", 400, "bad_request", "no query"},
		// Errors of the document are answered 200 with application/json
		// (see TestGraphQLOverHTTP).
		{"unknown field name", http.MethodPost, "application/json", string(graphQLBody(`{ ` + long + ` }`)), 200, "bad_request", "Cannot query field"},
		{"unknown operation", http.MethodPost, "application/json", `{"query": "{ strategies { symbol } }", "operationName": "` + long + `"}`, 200, "bad_request", "not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, header, body := send(t, tc.method, srv, tc.contentType, strings.NewReader(tc.body))
			e := singleError(t, status, body)
			if status != tc.status || e.Extensions.Code != tc.code || !strings.Contains(e.Message, tc.message) {
				t.Errorf("answer %d %s %q, want %d %s and a message with %q", status, e.Extensions.Code, e.Message, tc.status, tc.code, tc.message)
			}
			if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q", ct)
			}
			if status == http.StatusMethodNotAllowed && header.Get("Allow") != "GET, HEAD, POST, OPTIONS" {
				t.Errorf("Allow %q", header.Get("Allow"))
			}
			// No answer quotes the request at length.
			if len(body) > 1024 || strings.Contains(string(body), strings.Repeat("y", 101)) || strings.Contains(string(body), strings.Repeat("{", 101)) {
				t.Errorf("%d bytes of answer: %.300s", len(body), body)
			}
		})
	}

	t.Run("long value", func(t *testing.T) {
		status, _, body := send(t, http.MethodPost, srv, "application/json", bytes.NewReader(graphQLBody(`{ avs(address: "`+long+`") { address } }`)))
		r := decodeResponse(t, body)
		if status != http.StatusOK || len(r.Errors) != 1 || r.Errors[0].Extensions.Code != "unprocessable_entity" || len(body) > 1024 {
			t.Errorf("answer %d: %.300s", status, body)
		}
	})
	t.Run("chunked body too large", func(t *testing.T) {
		// Without a Content-Length the endpoint reads up to the limit.
		status, _, body := send(t, http.MethodPost, srv, "application/json",
			&repeatReader{open: []byte(`{"query":"`), fill: 'x', n: 1 << 30})
		if e := singleError(t, status, body); status != http.StatusRequestEntityTooLarge || e.Extensions.Code != "bad_request" {
			t.Errorf("answer %d %+v", status, e)
		}
	})
	t.Run("GET query string too large", func(t *testing.T) {
		q := url.Values{"query": {"{ strategies { symbol } " + strings.Repeat(" ", 70000) + "}"}}
		status, _, body := send(t, http.MethodGet, srv+"?"+q.Encode(), "", nil)
		if e := singleError(t, status, body); status != http.StatusRequestURITooLong || e.Extensions.Code != "bad_request" {
			t.Errorf("answer %d %+v", status, e)
		}
	})
	t.Run("GET variables", func(t *testing.T) {
		q := url.Values{"query": {"query($n: Int) { avsList(take: $n) { meta { total } } }"}, "variables": {`{"n": ` + long}}
		status, _, body := send(t, http.MethodGet, srv+"?"+q.Encode(), "", nil)
		if e := singleError(t, status, body); status != http.StatusBadRequest || e.Extensions.Code != "bad_request" || !strings.Contains(e.Message, "variables") {
			t.Errorf("answer %d %+v", status, e)
		}
	})
	t.Run("HEAD", func(t *testing.T) {
		q := url.Values{"query": {"{ strategies { symbol } }"}}
		status, _, _ := send(t, http.MethodHead, srv+"?"+q.Encode(), "", nil)
		if status != http.StatusOK {
			t.Errorf("HEAD: %d", status)
		}
	})
	t.Run("graphql-response+json", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, srv, bytes.NewReader(graphQLBody(`{ strategies { nothing } }`)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/graphql-response+json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest || res.Header.Get("Content-Type") != "application/graphql-response+json" {
			t.Errorf("invalid document: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
		}
	})
}

// TestDocumentLimits checks each limit on documents on its own, the others
// raised out of the way, with documents just over and just under it.
func TestDocumentLimits(t *testing.T) {
	db := demoDB(t)
	raised := func() graph.Options {
		opts := testOptions()
		opts.BodyLimit, opts.TokenLimit, opts.FieldLimit, opts.DuplicateFieldLimit = 64<<20, 10_000_000, 10_000_000, 10_000_000
		opts.ComplexityLimit = 1 << 40
		return opts
	}
	introspection, err := os.ReadFile("testdata/introspection.graphql")
	if err != nil {
		t.Fatal(err)
	}
	// A full introspection costs about 38,000, and selects 181 fields.
	fullIntrospection := fixed("__schema { queryType { name } types { ...FullType } directives { name description locations args { ...InputValue } } }")
	addresses := func(i int) string { return fmt.Sprintf(`avs(address: "0x%040x") { address }`, i) }

	for _, tc := range []struct {
		name  string
		set   func(*graph.Options)
		query string
		// message is in the error's, or the query must succeed when it is
		// empty.
		message string
	}{
		{"tokens", func(o *graph.Options) { o.TokenLimit = 100 }, aliases(40, fixed("__typename"), ""), "more than 100 tokens"},
		{"tokens under", func(o *graph.Options) { o.TokenLimit = 100 }, aliases(20, fixed("__typename"), ""), ""},
		{"fields", func(o *graph.Options) { o.FieldLimit = 100 }, aliases(101, fixed("__typename"), ""), "more than 100 fields"},
		{"fields under", func(o *graph.Options) { o.FieldLimit = 100 }, aliases(100, fixed("__typename"), ""), ""},
		{"fields of nested", func(o *graph.Options) { o.FieldLimit = 100 }, aliases(34, fixed("metrics { restakingTvl { tvl } }"), ""), "more than 100 fields"},
		{"fields of spreads", func(o *graph.Options) { o.FieldLimit = 100 },
			aliases(11, fixed("metrics { ...M }"), " fragment M on Metrics { "+strings.Repeat("restakingTvl { tvl } ", 4)+" a: totalStakers }"), "more than 100 fields"},
		{"fields of nested spreads", func(o *graph.Options) { o.FieldLimit = 1000 },
			"{ ...A } fragment A on Query { ...B ...B } fragment B on Query { ...C ...C } fragment C on Query { ...D ...D } " +
				"fragment D on Query { ...E ...E } fragment E on Query { ...F ...F } fragment F on Query { ...G ...G } " +
				"fragment G on Query { ...H ...H } fragment H on Query { ...I ...I } fragment I on Query { ...J ...J } " +
				"fragment J on Query { ...K ...K } fragment K on Query { __typename }", "more than 1000 fields"},
		{"duplicates", func(o *graph.Options) { o.DuplicateFieldLimit = 20 }, "{" + strings.Repeat(" metrics { restakingTvl { tvl } }", 21) + " }", `"metrics" is selected 21 times`},
		{"duplicates under", func(o *graph.Options) { o.DuplicateFieldLimit = 20 }, "{" + strings.Repeat(" metrics { restakingTvl { tvl } }", 20) + " }", ""},
		{"duplicates merged", func(o *graph.Options) { o.DuplicateFieldLimit = 20 },
			"{" + strings.Repeat(" metrics { restakingTvl { tvl tvl tvl tvl tvl } }", 5) + " }", `"tvl" is selected 25 times`},
		{"duplicates of spreads", func(o *graph.Options) { o.DuplicateFieldLimit = 20 },
			"{ metrics { restakingTvl { tvl } }" + strings.Repeat(" ...M", 20) + " } fragment M on Query { metrics { restakingTvl { tvl } } }", `"metrics" is selected 21 times`},
		{"duplicates of unused fragment", func(o *graph.Options) { o.DuplicateFieldLimit = 20 },
			"{ __typename } fragment M on Query {" + strings.Repeat(" metrics { restakingTvl { tvl } }", 21) + " }", `"metrics" is selected 21 times`},
		{"fragment cycle", func(*graph.Options) {}, "{ ...A } fragment A on Query { ...B } fragment B on Query { ...A __typename }", "Cannot spread fragment"},
		{"introspection costs", func(o *graph.Options) { o.ComplexityLimit = 200000 }, aliases(6, fullIntrospection, introspectionFragments), "complexity"},
		{"one introspection", func(o *graph.Options) { o.ComplexityLimit = 200000 }, string(introspection), ""},
		{"aliased lookups", func(o *graph.Options) { o.ComplexityLimit = 200000 }, aliases(10000, addresses, ""), "complexity"},
		{"defaults: introspection", func(o *graph.Options) { *o = testOptions() }, string(introspection), ""},
		{"defaults: 5 introspections", func(o *graph.Options) { *o = testOptions() }, aliases(5, fullIntrospection, introspectionFragments), ""},
		{"defaults: 6 introspections", func(o *graph.Options) { *o = testOptions() }, aliases(6, fullIntrospection, introspectionFragments), "more than 1000 fields"},
		{"defaults: 999 fields", func(o *graph.Options) { *o = testOptions() }, aliases(999, fixed("__typename"), ""), ""},
		{"defaults: 1001 fields", func(o *graph.Options) { *o = testOptions() }, aliases(1001, fixed("__typename"), ""), "more than 1000 fields"},
		{"defaults: 3000 aliased lookups", func(o *graph.Options) { *o = testOptions() }, aliases(3000, addresses, ""), "tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := raised()
			tc.set(&opts)
			srv := newProbeServer(t, db, opts)
			start := time.Now()
			status, _, body := send(t, http.MethodPost, srv, "application/json", bytes.NewReader(graphQLBody(tc.query)))
			t.Logf("answered %d in %v", status, time.Since(start))
			var r response
			if err := json.Unmarshal(body, &r); err != nil {
				t.Fatalf("status %d, not a GraphQL response: %.300s", status, body)
			}
			if tc.message == "" {
				if status != http.StatusOK || len(r.Errors) > 0 {
					t.Fatalf("status %d, errors %+v", status, r.Errors)
				}
				return
			}
			if len(r.Errors) == 0 || !strings.Contains(r.Errors[0].Message, tc.message) {
				t.Fatalf("status %d, errors %+v, want one with %q", status, r.Errors, tc.message)
			}
			// A limit is answered 422; a document that is not valid
			// (a fragment cycle) 200, as GraphQL over HTTP asks with
			// application/json.
			code := r.Errors[0].Extensions.Code
			if (code != "unprocessable_entity" || status != http.StatusUnprocessableEntity) && (code != "bad_request" || status != http.StatusOK) {
				t.Errorf("status %d, code %s", status, code)
			}
		})
	}
}

// TestPersistedQueryLimits checks that a query registered as an automatic
// persisted query meets the document limits when it is run by its hash.
func TestPersistedQueryLimits(t *testing.T) {
	db := demoDB(t)
	opts := testOptions()
	opts.FieldLimit = 10
	srv := newProbeServer(t, db, opts)
	q := aliases(11, fixed("__typename"), "")
	sum := sha256.Sum256([]byte(q))
	ext := fmt.Sprintf(`{"persistedQuery":{"version":1,"sha256Hash":%q}}`, hex.EncodeToString(sum[:]))
	for _, params := range []url.Values{{"query": {q}, "extensions": {ext}}, {"extensions": {ext}}} {
		status, _, body := send(t, http.MethodGet, srv+"?"+params.Encode(), "", nil)
		if e := singleError(t, status, body); status != http.StatusUnprocessableEntity || !strings.Contains(e.Message, "more than 10 fields") {
			t.Errorf("%v: answer %d %+v", params, status, e)
		}
	}
}

// TestStatementBudget checks that a request that would read the database
// more often than its budget allows is stopped and answered with the
// budget's error alone, and that one within it is served.
func TestStatementBudget(t *testing.T) {
	db := demoDB(t)
	opts := testOptions()
	opts.StatementLimit = 10
	srv := newProbeServer(t, db, opts)

	// Each page reads its rows and its count.
	status, _, body := send(t, http.MethodPost, srv, "application/json", bytes.NewReader(graphQLBody(aliases(5, page, ""))))
	if r := decodeResponse(t, body); status != http.StatusOK || len(r.Errors) > 0 {
		t.Fatalf("5 pages: %d %+v", status, r.Errors)
	}

	before := db.StatementCount()
	status, _, body = send(t, http.MethodPost, srv, "application/json", bytes.NewReader(graphQLBody(aliases(40, page, ""))))
	statements := db.StatementCount() - before
	e := singleError(t, status, body)
	if status != http.StatusUnprocessableEntity || e.Extensions.Code != "unprocessable_entity" || !strings.Contains(e.Message, "more than 10 database statements") {
		t.Errorf("40 pages: %d %+v", status, e)
	}
	if statements > 10 {
		t.Errorf("40 pages: %d statements", statements)
	}

	// Nested pages spend the budget through the dataloaders.
	nested := `{ avsList(take: 1) { data ` + aliases(20, func(i int) string {
		return fmt.Sprintf("operators(skip: %d, take: 1) { meta { total } }", i)
	}, "") + ` } }`
	status, _, body = send(t, http.MethodPost, srv, "application/json", bytes.NewReader(graphQLBody(nested)))
	if e := singleError(t, status, body); status != http.StatusUnprocessableEntity || !strings.Contains(e.Message, "database statements") {
		t.Errorf("nested pages: %d %+v", status, e)
	}
}

// decodeResponse decodes a GraphQL response.
func decodeResponse(t *testing.T, body []byte) response {
	t.Helper()
	var r response
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("not a GraphQL response (%v): %.300s", err, body)
	}
	return r
}
