package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/demo/demotest"
	"github.com/stakegraph/stakegraph/graph"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// testNow is the time the demo history ends at and the clock of the API
// under test, so that default date ranges are deterministic.
var testNow = demotest.Now

// demoDB returns a fresh copy of the demo data set as of testNow.
func demoDB(t *testing.T) *store.DB {
	t.Helper()
	return demotest.DB(t)
}

// testOptions are the handler options of the tests: the demo's clock, and a
// batch window generous enough that a loaded test machine does not split
// batches (which would make statement counts vary).
func testOptions() graph.Options {
	return graph.Options{Now: func() time.Time { return testNow }, BatchWait: 20 * time.Millisecond}
}

// fewestStatements returns the fewest SQL statements of up to tries calls
// of run (each returns the statements of one request), calling it again
// only while the fewest so far exceed want. A batch gathers the keys that
// arrive within the batch window, so a machine too loaded to schedule a
// level's resolvers within it splits the batch in two: such a split is
// transient, while statements that grow with the items come back on every
// call.
func fewestStatements(tries int, want int64, run func() int64) int64 {
	least := run()
	for i := 1; i < tries && least > want; i++ {
		least = min(least, run())
	}
	return least
}

// client posts GraphQL requests to a test server.
type client struct {
	t   *testing.T
	url string
}

func newClient(t *testing.T, db *store.DB, opts graph.Options) *client {
	t.Helper()
	srv := httptest.NewServer(graph.NewHandler(db, opts))
	t.Cleanup(srv.Close)
	return &client{t: t, url: srv.URL + "/graphql"}
}

// gqlError is an error of a GraphQL response.
type gqlError struct {
	Message    string                `json:"message"`
	Path       []any                 `json:"path"`
	Extensions struct{ Code string } `json:"extensions"`
}

type response struct {
	Data   json.RawMessage `json:"data"`
	Errors []gqlError      `json:"errors"`
}

// post sends one request and decodes the response.
func (c *client) post(query string, vars map[string]any) response {
	c.t.Helper()
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		c.t.Fatal(err)
	}
	res, err := http.Post(c.url, "application/json", bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	var r response
	if err := json.Unmarshal(raw, &r); err != nil {
		c.t.Fatalf("response %d is not GraphQL JSON: %v\n%s", res.StatusCode, err, raw)
	}
	return r
}

// query runs query, fails the test on any error, and decodes the data into
// a value of type T.
func query[T any](c *client, query string, vars map[string]any) T {
	c.t.Helper()
	r := c.post(query, vars)
	if len(r.Errors) > 0 {
		c.t.Fatalf("query failed: %+v\n%s", r.Errors, query)
	}
	var out T
	if err := json.Unmarshal(r.Data, &out); err != nil {
		c.t.Fatalf("decode %s: %v", r.Data, err)
	}
	return out
}

// queryError runs query, which must fail, and returns its first error.
func (c *client) queryError(query string, vars map[string]any) gqlError {
	c.t.Helper()
	r := c.post(query, vars)
	if len(r.Errors) == 0 {
		c.t.Fatalf("query succeeded, want an error: %s\n%s", r.Data, query)
	}
	return r.Errors[0]
}

// expectCode runs query and checks that it fails with code.
func (c *client) expectCode(code, query string, vars map[string]any) gqlError {
	c.t.Helper()
	e := c.queryError(query, vars)
	if e.Extensions.Code != code {
		c.t.Errorf("error code %q (%s), want %q\n%s", e.Extensions.Code, e.Message, code, query)
	}
	return e
}

// sqlInt runs a query returning one integer.
func sqlInt(t *testing.T, db *store.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := storetest.SQL(t, db).GetContext(context.Background(), &n, query, args...); err != nil {
		t.Fatalf("%v\n%s", err, query)
	}
	return n
}

// sqlString runs a query returning one text value.
func sqlString(t *testing.T, db *store.DB, query string, args ...any) string {
	t.Helper()
	var s string
	if err := storetest.SQL(t, db).GetContext(context.Background(), &s, query, args...); err != nil {
		t.Fatalf("%v\n%s", err, query)
	}
	return s
}

// meta is the paging information of a page.
type meta struct {
	Total, Skip, Take int
}

// checkMeta checks a page's paging information and length.
func checkMeta(t *testing.T, what string, m meta, n, wantTotal, skip, take int) {
	t.Helper()
	if m.Total != wantTotal || m.Skip != skip || m.Take != take {
		t.Errorf("%s: meta %+v, want total %d skip %d take %d", what, m, wantTotal, skip, take)
	}
	if want := min(take, max(wantTotal-skip, 0)); n != want {
		t.Errorf("%s: %d records, want %d", what, n, want)
	}
}

// near reports whether two floats agree to 9 significant digits.
func near(a, b float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	scale := max(abs(a), abs(b), 1e-12)
	return d/scale < 1e-9
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// ordered checks that values are sorted in the given direction.
func ordered[T int | float64 | string](t *testing.T, what string, values []T, desc bool) {
	t.Helper()
	for i := 1; i < len(values); i++ {
		if (desc && values[i] > values[i-1]) || (!desc && values[i] < values[i-1]) {
			t.Errorf("%s not sorted %s at %d: %v", what, map[bool]string{true: "desc", false: "asc"}[desc], i, values)
			return
		}
	}
}

func lower(s string) string { return strings.ToLower(s) }
