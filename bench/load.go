// Package bench measures a running stakegraph server over loopback HTTP.
//
// It drives every documented REST route with realistic parameter mixes and
// four GraphQL operations a frontend sends (an AVS page, an operator page,
// a staker page and an operator set page), each from a fixed number of
// closed-loop clients, and reports per operation the requests per second,
// latency percentiles, SQL statements per request (from the server's
// stakegraph_sql_statements_total counter) and the server's peak resident
// memory. It also runs the resilience checks: a long soak over the mixed
// workload, and a PostgreSQL restart under load. The numbers go to a
// Markdown report (bench/RESULTS.md); nothing here asserts on them.
//
// The command is bench/cmd/stakebench, which `make bench` and `make soak`
// run.
package bench

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// Request is one HTTP request of a workload.
type Request struct {
	// Method is GET or POST.
	Method string
	// Target is the path and query string, such as "/avs?take=12".
	Target string
	// Body is the JSON body of a POST.
	Body []byte
}

// Client sends authenticated requests to one stakegraph server. Responses
// are requested gzip-compressed, as browsers do, and read to the end but
// not decompressed.
//
// The measured requests (Do) go through fasthttp, which sends a request
// and reads its response on the caller's goroutine. net/http's transport
// hands each request to a connection's writer and reader goroutines and
// back, and the load generator shares the machine with the server it
// measures: on GET /avs/{address}/stakers it took 21% of a core, a
// quarter of it switching between goroutines.
type Client struct {
	// bases are the servers' base URLs, which requests take in turn, and
	// hosts their connection pools.
	bases []string
	hosts []*fasthttp.HostClient
	next  atomic.Uint64
	key   string
	// http serves Fetch, which reads the bench data's samples.
	http *http.Client
}

// NewClient returns a client of the server at base (such as
// "http://127.0.0.1:8080") sending key in X-API-Token, keeping up to conns
// connections open.
func NewClient(base, key string, conns int) *Client {
	return NewBalancedClient([]string{base}, key, conns)
}

// NewBalancedClient returns a client that sends its requests to the
// servers at bases in turn, as a round-robin load balancer in front of
// them would.
func NewBalancedClient(bases []string, key string, conns int) *Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // Accept-Encoding is set per request
	}
	c := &Client{key: key, http: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
	for _, b := range bases {
		b = strings.TrimSuffix(b, "/")
		c.bases = append(c.bases, b)
		c.hosts = append(c.hosts, &fasthttp.HostClient{
			Addr:                     strings.TrimPrefix(b, "http://"),
			MaxConns:                 conns,
			MaxConnWaitTimeout:       requestTimeout,
			MaxIdleConnDuration:      90 * time.Second,
			NoDefaultUserAgentHeader: true,
			// The targets go as written: some carry malformed escapes
			// on purpose.
			DisablePathNormalizing: true,
		})
	}
	return c
}

// requestTimeout bounds each measured request.
const requestTimeout = 30 * time.Second

// server returns the index of the next request's server.
func (c *Client) server() int {
	if len(c.bases) == 1 {
		return 0
	}
	return int(c.next.Add(1) % uint64(len(c.bases)))
}

// base returns the base URL of the next request's server.
func (c *Client) base() string { return c.bases[c.server()] }

// Close closes the client's idle connections.
func (c *Client) Close() {
	c.http.CloseIdleConnections()
	for _, h := range c.hosts {
		h.CloseIdleConnections()
	}
}

// Outcome is the result of one request.
type Outcome struct {
	Status   int           // 0 when the request failed in transport
	Latency  time.Duration // until the last byte of the body was read
	CacheHit bool          // the server answered from its response cache
	Err      error         // a transport error
	// GraphQLError says that a GraphQL response carried errors, whatever
	// its status (GraphQL answers errors of execution with 200).
	GraphQLError bool
	// GraphQLUnavailable says that every error of a GraphQL response with
	// errors is coded internal_server_error (the database is unavailable),
	// read from the whole body: a partial answer (records the entity cache
	// held, errors for the rest) has one error per failed field, far more
	// than Snippet holds.
	GraphQLUnavailable bool
	// Snippet is the start of the body of a response with a status of 400
	// or more, or with GraphQL errors, for error reports.
	Snippet string
}

// Do sends req and reads the whole response. A request still unanswered
// when ctx's deadline passes fails with ctx's error; cancelling ctx
// otherwise does not interrupt a request (requestTimeout bounds it).
func (c *Client) Do(ctx context.Context, req Request) Outcome {
	i := c.server()
	hr, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(hr)
	defer fasthttp.ReleaseResponse(res)
	hr.SetRequestURI(c.bases[i] + req.Target)
	hr.Header.SetMethod(req.Method)
	hr.Header.Set("X-API-Token", c.key)
	hr.Header.Set("Accept-Encoding", "gzip")
	if req.Body != nil {
		hr.Header.SetContentType("application/json")
		hr.SetBody(req.Body)
	}
	start := time.Now()
	deadline, ctxDeadline := start.Add(requestTimeout), false
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline, ctxDeadline = d, true
	}
	if err := c.hosts[i].DoDeadline(hr, res, deadline); err != nil {
		if ctxDeadline && !time.Now().Before(deadline) {
			// Cut off by ctx's deadline, whether fasthttp's timer or the
			// connection's read deadline said so first (ErrTimeout or an
			// i/o timeout): ctx's own timer is due.
			<-ctx.Done()
		}
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return Outcome{Latency: time.Since(start), Err: err}
	}
	status := res.StatusCode()
	out := Outcome{
		Status:   status,
		Latency:  time.Since(start),
		CacheHit: string(res.Header.Peek("X-Cache")) == "HIT",
	}
	// Error bodies, and GraphQL bodies (which say whether they hold
	// errors), are looked at.
	if read := res.Body(); len(read) > 0 && (status >= 400 || req.Method == http.MethodPost) {
		encoding := string(res.Header.ContentEncoding())
		out.GraphQLError = req.Method == http.MethodPost && startsWithErrors(read, encoding)
		if status >= 400 || out.GraphQLError {
			plain := decompressed(read, encoding)
			out.GraphQLUnavailable = out.GraphQLError && isGraphQLUnavailable(plain)
			out.Snippet = snippet(plain)
		}
	}
	return out
}

// errorsFirst is how a GraphQL response with errors starts: the servers
// measured write the errors member before data.
var errorsFirst = []byte(`{"errors"`)

// gzipReaders keeps gzip readers for startsWithErrors, whose state is
// tens of kilobytes.
var gzipReaders sync.Pool

// startsWithErrors reports whether a GraphQL response body, compressed
// as encoding says, starts with its errors (after any whitespace). Only
// the body's first bytes are decompressed: decompressing every page had
// been about a fifth of the load generator's CPU on the GraphQL
// operations, taken from the server under test on the same machine.
func startsWithErrors(body []byte, encoding string) bool {
	whole := func() bool { return bytes.HasPrefix(bytes.TrimSpace(decompressed(body, encoding)), errorsFirst) }
	if encoding != "gzip" {
		return whole()
	}
	zr, _ := gzipReaders.Get().(*gzip.Reader)
	var err error
	if zr == nil {
		zr, err = gzip.NewReader(bytes.NewReader(body))
	} else {
		err = zr.Reset(bytes.NewReader(body))
	}
	if err != nil {
		return whole()
	}
	defer gzipReaders.Put(zr)
	var head [64]byte
	n, _ := io.ReadFull(zr, head[:])
	start := bytes.TrimLeft(head[:n], " \t\r\n")
	if n == len(head) && len(start) < len(errorsFirst) {
		// Whitespace fills the head: look at the whole body.
		return whole()
	}
	return bytes.HasPrefix(start, errorsFirst)
}

// decompressed returns body, gunzipped when encoding says gzip.
func decompressed(body []byte, encoding string) []byte {
	if encoding != "gzip" {
		return body
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		return body
	}
	plain, err := io.ReadAll(zr)
	if err != nil && len(plain) == 0 {
		return body
	}
	return plain
}

// snippet returns the start of a body, for error reports.
func snippet(body []byte) string {
	if len(body) > 300 {
		body = body[:300]
	}
	return strings.TrimSpace(string(body))
}

// Stats summarizes the outcomes of a load run.
type Stats struct {
	Requests        int
	Statuses        map[int]int
	TransportErrors int
	// GraphQLErrors counts GraphQL responses with errors under a 2xx
	// status (GraphQL's way to answer failed execution); they count in
	// Statuses too.
	GraphQLErrors int
	CacheHits     int
	Elapsed       time.Duration
	// FirstErrors are up to five distinct descriptions of failed requests.
	FirstErrors []string

	latencies []time.Duration // sorted once finished
}

func newStats() *Stats { return &Stats{Statuses: map[int]int{}} }

func (s *Stats) add(req Request, o Outcome) {
	s.Requests++
	s.latencies = append(s.latencies, o.Latency)
	if o.CacheHit {
		s.CacheHits++
	}
	var desc string
	switch {
	case o.Err != nil:
		s.TransportErrors++
		desc = fmt.Sprintf("%s %s: %v", req.Method, req.Target, o.Err)
	default:
		s.Statuses[o.Status]++
		if o.GraphQLError && o.Status >= 200 && o.Status <= 299 {
			s.GraphQLErrors++
		}
		if o.Status >= 400 || o.GraphQLError {
			desc = fmt.Sprintf("%s %s: %d %s", req.Method, req.Target, o.Status, o.Snippet)
		}
	}
	if desc != "" && len(s.FirstErrors) < 5 {
		s.FirstErrors = append(s.FirstErrors, desc)
	}
}

func (s *Stats) merge(o *Stats) {
	s.Requests += o.Requests
	s.TransportErrors += o.TransportErrors
	s.GraphQLErrors += o.GraphQLErrors
	s.CacheHits += o.CacheHits
	for k, v := range o.Statuses {
		s.Statuses[k] += v
	}
	s.latencies = append(s.latencies, o.latencies...)
	for _, e := range o.FirstErrors {
		if len(s.FirstErrors) < 5 {
			s.FirstErrors = append(s.FirstErrors, e)
		}
	}
}

// finish sorts the latencies.
func (s *Stats) finish(elapsed time.Duration) {
	s.Elapsed = elapsed
	slices.Sort(s.latencies)
}

// RPS is the rate of answered requests, transport errors included.
func (s *Stats) RPS() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Requests) / s.Elapsed.Seconds()
}

// Percentile returns the latency below which the fraction p (0 to 1) of the
// requests were answered, by the nearest-rank method.
func (s *Stats) Percentile(p float64) time.Duration {
	n := len(s.latencies)
	if n == 0 {
		return 0
	}
	rank := int(p*float64(n)+0.999999999) - 1
	return s.latencies[min(max(rank, 0), n-1)]
}

// Max returns the largest latency.
func (s *Stats) Max() time.Duration { return s.Percentile(1) }

// Count5xx returns the number of responses with a 5xx status.
func (s *Stats) Count5xx() int {
	n := 0
	for status, c := range s.Statuses {
		if status >= 500 {
			n += c
		}
	}
	return n
}

// CountNon2xx returns the number of responses whose status is not 2xx or
// 304.
func (s *Stats) CountNon2xx() int {
	n := 0
	for status, c := range s.Statuses {
		if (status < 200 || status > 299) && status != http.StatusNotModified {
			n += c
		}
	}
	return n
}

// CountFailed returns the number of requests that failed: a status other
// than 2xx or 304, GraphQL errors under a 2xx status, or a transport error.
func (s *Stats) CountFailed() int {
	return s.CountNon2xx() + s.GraphQLErrors + s.TransportErrors
}

// StatusSummary lists the statuses and their counts, such as "200×950
// 503×50".
func (s *Stats) StatusSummary() string {
	codes := make([]int, 0, len(s.Statuses))
	for c := range s.Statuses {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	parts := make([]string, 0, len(codes)+1)
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d×%d", c, s.Statuses[c]))
	}
	if s.GraphQLErrors > 0 {
		parts = append(parts, fmt.Sprintf("(of the 2xx, with GraphQL errors×%d)", s.GraphQLErrors))
	}
	if s.TransportErrors > 0 {
		parts = append(parts, fmt.Sprintf("transport errors×%d", s.TransportErrors))
	}
	return strings.Join(parts, " ")
}

// Load runs clients closed-loop clients for duration (or until ctx ends):
// each sends a request made by next, waits for the whole response, and
// sends the next one. Each client draws its requests from its own random
// source, seeded from seed. observe, when not nil, sees every outcome as it
// arrives (from several goroutines at once).
func Load(ctx context.Context, c *Client, clients int, duration time.Duration, seed uint64,
	next func(*rand.Rand) Request, observe func(Request, Outcome)) *Stats {
	// The run's start is read before its deadline is set, so that the
	// elapsed time is never shorter than duration: read after, a pause of
	// the goroutine between the two had made a 300 ms run last 297.7 ms.
	start := time.Now()
	ctx, cancel := context.WithDeadline(ctx, start.Add(duration))
	defer cancel()
	per := make([]*Stats, clients)
	var wg sync.WaitGroup
	for i := range clients {
		per[i] = newStats()
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			for ctx.Err() == nil {
				req := next(rng)
				o := c.Do(ctx, req)
				if ctx.Err() != nil && (errors.Is(o.Err, context.DeadlineExceeded) || errors.Is(o.Err, context.Canceled)) {
					return // cut off by the end of the run, not a failure
				}
				per[i].add(req, o)
				if observe != nil {
					observe(req, o)
				}
			}
		}()
	}
	wg.Wait()
	total := newStats()
	for _, s := range per {
		total.merge(s)
	}
	total.finish(time.Since(start))
	return total
}
