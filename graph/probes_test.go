package graph_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/graph"
	"github.com/stakegraph/stakegraph/store"
)

// This file holds the abusive requests that a hostile client of a public
// endpoint would send (see TestAbuseProbes), and the means to run one
// against a server while measuring what it costs the server. Set
// STAKEGRAPH_MEASURE_PROBES=1 to have TestMeasureProbes log the figures of
// every probe, or to part of a probe's name to measure that one only:
//
//	STAKEGRAPH_MEASURE_PROBES=1 go test ./graph -run TestMeasureProbes -v
//
// The file uses only what NewHandler has always had, so that it can
// measure an older version of the package too.

// abuseProbe is one abusive request.
type abuseProbe struct {
	name string
	// body returns the request body; a body of unknown length (no
	// Content-Length) when size is negative.
	body func() io.Reader
	size int64
	// contentType is that of the request; application/json when empty.
	contentType string
}

// aliases returns a document of n aliased fields, field(i) for the i-th,
// followed by fragments.
func aliases(n int, field func(i int) string, fragments string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		fmt.Fprintf(&b, " a%d: %s", i, field(i))
	}
	b.WriteString(" }")
	b.WriteString(fragments)
	return b.String()
}

// fixed returns a field func that is always s.
func fixed(s string) func(int) string { return func(int) string { return s } }

// page returns the field of a page of one withdrawal, the i-th.
func page(i int) string { return fmt.Sprintf("withdrawals(skip: %d, take: 1) { meta { total } }", i) }

// graphQLBody returns the JSON body of a request for query.
func graphQLBody(query string) []byte {
	body, err := json.Marshal(map[string]any{"query": query})
	if err != nil {
		panic(err)
	}
	return body
}

// introspectionFragments are the fragments of the usual introspection
// query, which aliasedIntrospection selects under many aliases.
const introspectionFragments = `
fragment FullType on __Type { kind name description
  fields(includeDeprecated: true) { name description args { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason }
  inputFields { ...InputValue } interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
  possibleTypes { ...TypeRef } }
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue }
fragment TypeRef on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } } }`

// fixedBody returns a probe body of fixed bytes.
func fixedBody(b []byte) (func() io.Reader, int64) {
	return func() io.Reader { return bytes.NewReader(b) }, int64(len(b))
}

// repeatReader yields n bytes: open, then fill repeated.
type repeatReader struct {
	open []byte
	fill byte
	n    int64
	read int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.read >= r.n {
		return 0, io.EOF
	}
	k := 0
	for k < len(p) && r.read < r.n {
		if r.read < int64(len(r.open)) {
			p[k] = r.open[r.read]
		} else {
			p[k] = r.fill
		}
		k++
		r.read++
	}
	return k, nil
}

// abuseProbes are the probes of the hardening issue: the GraphQL ones of
// its table, and one of many small pages, which no document limit stops
// but the statement budget does.
func abuseProbes() []abuseProbe {
	probe := func(name string, body []byte) abuseProbe {
		f, n := fixedBody(body)
		return abuseProbe{name: name, body: f, size: n}
	}
	return []abuseProbe{
		probe("10k aliased pages", graphQLBody(aliases(10000, page, ""))),
		probe("5k duplicate fields", graphQLBody("{"+strings.Repeat(" metrics { tvl }", 5000)+" }")),
		probe("40k typename aliases", graphQLBody(aliases(40000, fixed("__typename"), ""))),
		probe("1k aliased introspections", graphQLBody(aliases(1000,
			fixed("__schema { queryType { name } types { ...FullType } directives { name description locations args { ...InputValue } } }"),
			introspectionFragments))),
		probe("150 aliased pages", graphQLBody(aliases(150, page, ""))),
		{name: "300 MB body", body: func() io.Reader {
			return &repeatReader{open: []byte(`{"query":"{ strategies { symbol } }","variables":{"pad":"`), fill: 'x', n: 300 << 20}
		}, size: -1},
		{name: "10 MB malformed JSON", body: func() io.Reader {
			return &repeatReader{open: []byte(`{"query": "{ strategies { symbol } }", "x": [`), fill: '{', n: 10 << 20}
		}, size: 10 << 20},
	}
}

// boundaryProbes are requests just within the default limits, the most
// costly ones a client can have served; TestMeasureProbes measures them
// too.
func boundaryProbes() []abuseProbe {
	probe := func(name string, body []byte) abuseProbe {
		f, n := fixedBody(body)
		return abuseProbe{name: name, body: f, size: n}
	}
	// The same AVS 20 times, each with 49 aliases: validation compares the
	// 190 pairs of AVS, and 49 pairs of fields in each.
	nested := "{" + strings.Repeat(` avs(address: "0x0000000000000000000000000000000000000001") `+aliases(49, fixed("address"), ""), 20) + " }"
	return []abuseProbe{
		probe("within: 999 typename", graphQLBody(aliases(999, fixed("__typename"), ""))),
		probe("within: 5 introspections", graphQLBody(aliases(5,
			fixed("__schema { queryType { name } types { ...FullType } directives { name description locations args { ...InputValue } } }"),
			introspectionFragments))),
		probe("within: 100 aliased pages", graphQLBody(aliases(100, page, ""))),
		probe("within: 20 dup x 49", graphQLBody(nested)),
		probe("within: 1000 operators", graphQLBody(`{ operators(take: 1000) { data { address tvl { tvl } shares { shares } avsRegistrations { avsAddress } stakers(take: 1) { meta { total } } } } }`)),
	}
}

// probeResult is what a probe cost and got.
type probeResult struct {
	status     int
	body       []byte
	err        error
	elapsed    time.Duration
	statements int64
	// peakHeap is the most heap in use while the probe ran, less what was
	// in use before.
	peakHeap uint64
	// concurrent is the longest time a simple request took while the
	// probe ran, and simple the number of them, which read one statement
	// each (not counted in statements); simpleFailed is the number of them
	// that were not answered 200.
	concurrent   time.Duration
	simple       int64
	simpleFailed int64
}

// runProbe sends p to url, while another client sends simple requests,
// and measures both.
func runProbe(t *testing.T, db *store.DB, url string, p abuseProbe) probeResult {
	t.Helper()
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the heap, sampled
		defer wg.Done()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > base.HeapInuse && m.HeapInuse-base.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse - base.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	var slowest, simple, simpleFailed atomic.Int64
	go func() { // another client's simple requests
		defer wg.Done()
		body := graphQLBody(`{ strategies { symbol } }`)
		for {
			start := time.Now()
			res, err := http.Post(url, "application/json", bytes.NewReader(body))
			if err == nil {
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
			if err != nil || res.StatusCode != http.StatusOK {
				simpleFailed.Add(1)
			}
			simple.Add(1)
			if d := int64(time.Since(start)); d > slowest.Load() {
				slowest.Store(d)
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()

	before := db.StatementCount()
	start := time.Now()
	req, err := http.NewRequest(http.MethodPost, url, p.body())
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = p.size
	req.Header.Set("Content-Type", "application/json")
	if p.contentType != "" {
		req.Header.Set("Content-Type", p.contentType)
	}
	client := &http.Client{Timeout: 90 * time.Second}
	var r probeResult
	res, err := client.Do(req)
	if err == nil {
		r.status = res.StatusCode
		r.body, err = io.ReadAll(res.Body)
		res.Body.Close()
	}
	r.err = err
	r.elapsed = time.Since(start)
	close(done)
	wg.Wait()
	r.simple = simple.Load()
	r.statements = db.StatementCount() - before - r.simple
	r.peakHeap = peak.Load()
	r.concurrent = time.Duration(slowest.Load())
	r.simpleFailed = simpleFailed.Load()
	return r
}

// newProbeServer serves the GraphQL handler over db with opts and returns
// its URL.
func newProbeServer(t *testing.T, db *store.DB, opts graph.Options) string {
	t.Helper()
	srv := httptest.NewServer(graph.NewHandler(db, opts))
	t.Cleanup(srv.Close)
	return srv.URL + "/graphql"
}

// discardLogger logs nothing.
func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestMeasureProbes logs what each probe costs the handler with its
// default limits, when STAKEGRAPH_MEASURE_PROBES is set.
func TestMeasureProbes(t *testing.T) {
	if os.Getenv("STAKEGRAPH_MEASURE_PROBES") == "" {
		t.Skip("set STAKEGRAPH_MEASURE_PROBES=1 to measure the abuse probes")
	}
	db := demoDB(t)
	srv := newProbeServer(t, db, graph.Options{Now: func() time.Time { return testNow }, Logger: discardLogger()})
	only := os.Getenv("STAKEGRAPH_MEASURE_PROBES")
	for _, p := range append(abuseProbes(), boundaryProbes()...) {
		if only != "1" && !strings.Contains(p.name, only) {
			continue
		}
		r := runProbe(t, db, srv, p)
		head := r.body
		if len(head) > 160 {
			head = head[:160]
		}
		t.Logf("%-26s status %d, %7.3fs, %5d statements, response %9d bytes, peak heap +%4d MiB, concurrent request %6.3fs, err %v: %s",
			p.name, r.status, r.elapsed.Seconds(), r.statements, len(r.body), r.peakHeap>>20, r.concurrent.Seconds(), r.err, head)
	}
}
