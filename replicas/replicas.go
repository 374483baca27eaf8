// Package replicas sends the API's reads to PostgreSQL read replicas.
//
// A Router knows the primary and the replicas (hot standbys streaming from
// it). Each request is served by one database from start to end: its
// middleware picks the healthy replica with the fewest requests in flight
// (round-robin among equals) and puts it in the request's context, where
// the GraphQL executor and the caches find it. With no healthy replica
// left, reads fall back to the primary. Writes never go through a Router:
// the API keys and the indexer use the primary's own handle.
//
// Run polls every database once per interval: its data version (the
// counter every indexer commit increments), whether it answers, and for a
// replica its lag behind the primary in bytes of write-ahead log and in
// seconds. A replica whose poll fails, or whose request was answered 503
// (its database unreachable), is taken out until a poll succeeds again.
// The response cache keys on the data version of the database serving each
// request (see Target.Version), so that an answer computed on a replica
// that lags is never stored or served as the newer version's.
package replicas

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stakegraph/stakegraph/store"
)

// DefaultPollInterval is how often Run polls each database.
const DefaultPollInterval = time.Second

// Target is one database that serves reads: the primary or a replica.
type Target struct {
	// Name is "primary" or "replica1", "replica2", … in the order given.
	Name string
	// DB serves the requests.
	DB *store.DB
	// poll is a pool of its own for the polls, which never wait behind
	// requests.
	poll    *store.DB
	replica bool

	version atomic.Int64
	known   atomic.Bool // the last poll read the version
	up      atomic.Bool // serves reads: the last poll succeeded and no request failed since
	// failures counts the requests that took the target out, so that a
	// poll that started before one does not put it back.
	failures  atomic.Int64
	inFlight  atomic.Int64
	requests  atomic.Int64
	lagBytes  atomic.Int64
	lagMillis atomic.Int64
}

// Version returns the data version the last poll read from the target's
// database, and false when it is not known.
func (t *Target) Version() (int64, bool) { return t.version.Load(), t.known.Load() }

// Up reports whether the target serves reads.
func (t *Target) Up() bool { return t.up.Load() }

// Router picks the database of each request.
type Router struct {
	primary  *Target
	replicas []*Target
	next     atomic.Uint64
	interval time.Duration
	logger   *slog.Logger
	// version is the data version of the databases that serve reads now:
	// the highest among the healthy replicas, or the primary's without
	// them.
	version atomic.Int64
	known   atomic.Bool
}

// Database is a database handle for New: DB serves requests and Poll, a
// pool of one connection, the polls.
type Database struct {
	DB, Poll *store.DB
}

// New returns a Router over the primary and the replicas, polling every
// interval (DefaultPollInterval when zero). Until the first poll every
// target counts as up.
func New(primary Database, replicas []Database, interval time.Duration, logger *slog.Logger) *Router {
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	if logger == nil {
		logger = slog.Default()
	}
	r := &Router{interval: interval, logger: logger}
	r.primary = &Target{Name: "primary", DB: primary.DB, poll: primary.Poll}
	r.primary.up.Store(true)
	for i, d := range replicas {
		t := &Target{Name: fmt.Sprintf("replica%d", i+1), DB: d.DB, poll: d.Poll, replica: true}
		t.up.Store(true)
		r.replicas = append(r.replicas, t)
	}
	return r
}

// Targets returns the primary and then the replicas.
func (r *Router) Targets() []*Target { return append([]*Target{r.primary}, r.replicas...) }

// Pick returns the target of a new request: the healthy replica with the
// fewest requests in flight, or the primary when no replica is healthy.
func (r *Router) Pick() *Target {
	var best *Target
	start := int(r.next.Add(1))
	for i := range r.replicas {
		t := r.replicas[(start+i)%len(r.replicas)]
		if t.up.Load() && (best == nil || t.inFlight.Load() < best.inFlight.Load()) {
			best = t
		}
	}
	if best == nil {
		return r.primary
	}
	return best
}

type contextKey struct{}

// NewContext returns ctx carrying the target that serves its reads.
func NewContext(ctx context.Context, t *Target) context.Context {
	return context.WithValue(ctx, contextKey{}, t)
}

// FromContext returns the target that serves the reads of ctx's request.
func FromContext(ctx context.Context) (*Target, bool) {
	t, ok := ctx.Value(contextKey{}).(*Target)
	return t, ok
}

// ReadDB returns the database that serves the reads of ctx's request and
// its data version (known false when not known), or fallback with an
// unknown version when ctx carries no target.
func ReadDB(ctx context.Context, fallback *store.DB) (db *store.DB, version int64, known bool) {
	t, ok := FromContext(ctx)
	if !ok {
		return fallback, 0, false
	}
	v, known := t.Version()
	return t.DB, v, known
}

// Middleware picks the target of each request and puts it in the
// request's context. A replica whose request is answered 503 (its
// database unreachable) is taken out until its next successful poll.
func (r *Router) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		t := r.Pick()
		t.inFlight.Add(1)
		t.requests.Add(1)
		defer t.inFlight.Add(-1)
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, req.WithContext(NewContext(req.Context(), t)))
		if sw.status != http.StatusServiceUnavailable || !t.replica {
			return
		}
		t.failures.Add(1)
		if t.up.Swap(false) {
			r.logger.Warn("read replica failed a request; reading elsewhere until it answers a poll", "replica", t.Name)
			r.updateVersion()
		}
	})
}

// statusWriter records the status of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Flush sends what was written so far, for streaming responses.
func (w *statusWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// DataVersion returns the data version of the databases that serve reads
// now, as the last poll left it; the response cache polls it.
func (r *Router) DataVersion(context.Context) (int64, error) {
	if !r.known.Load() {
		return 0, fmt.Errorf("the data version of the read databases is not known yet")
	}
	return r.version.Load(), nil
}

// Run polls every database each interval until ctx ends; it polls once
// before returning when ctx has already ended.
func (r *Router) Run(ctx context.Context) {
	for {
		r.Poll(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(r.interval):
		}
	}
}

// Poll polls every database once.
func (r *Router) Poll(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, max(2*time.Second, r.interval))
	defer cancel()
	r.pollTarget(ctx, r.primary)
	for _, t := range r.replicas {
		r.pollTarget(ctx, t)
	}
	r.updateVersion()
}

func (r *Router) pollTarget(ctx context.Context, t *Target) {
	failures := t.failures.Load()
	v, err := t.poll.DataVersion(ctx)
	var lagBytes int64
	var lagSeconds float64
	if err == nil && t.replica {
		var st store.ReplicaStatus
		if st, err = t.poll.ReplicaStatus(ctx); err == nil {
			if !st.InRecovery {
				err = fmt.Errorf("%s is not a replica (not in recovery)", t.Name)
			} else {
				lagSeconds = st.LagSeconds
				// Bytes behind need the primary; unknown while it is down.
				if n, perr := r.primary.poll.WALBytesAhead(ctx, st.ReplayLSN); perr == nil {
					lagBytes = n
				} else {
					lagBytes = -1
				}
			}
		}
	}
	if err != nil {
		t.known.Store(false)
		if t.up.Swap(false) {
			r.logger.Warn("database unreachable; not reading from it until it answers", "database", t.Name, "err", err)
		}
		return
	}
	t.version.Store(v)
	t.known.Store(true)
	t.lagBytes.Store(lagBytes)
	t.lagMillis.Store(int64(math.Round(lagSeconds * 1000)))
	if t.failures.Load() != failures {
		return // a request failed on it meanwhile: the next poll decides
	}
	if !t.up.Swap(true) {
		r.logger.Info("database answers again; reading from it", "database", t.Name, "data_version", v)
	}
}

// updateVersion sets the router's data version from the targets that
// serve reads now.
func (r *Router) updateVersion() {
	var best int64
	known := false
	for _, t := range r.replicas {
		if v, ok := t.Version(); ok && t.Up() && (!known || v > best) {
			best, known = v, true
		}
	}
	if !known {
		best, known = r.primary.Version()
	}
	r.version.Store(best)
	r.known.Store(known)
}

// Collectors returns the Prometheus metrics of the databases:
// stakegraph_db_up{database}, stakegraph_db_read_requests_total{database}
// and, per replica, stakegraph_replica_lag_bytes and
// stakegraph_replica_lag_seconds.
func (r *Router) Collectors() []prometheus.Collector {
	var out []prometheus.Collector
	for _, t := range r.Targets() {
		labels := prometheus.Labels{"database": t.Name}
		out = append(out,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "stakegraph_db_up", ConstLabels: labels,
				Help: "1 while the database serves reads (its last poll succeeded and no request failed since), else 0.",
			}, func() float64 {
				if t.Up() {
					return 1
				}
				return 0
			}),
			prometheus.NewCounterFunc(prometheus.CounterOpts{
				Name: "stakegraph_db_read_requests_total", ConstLabels: labels,
				Help: "API requests routed to this database for their reads (response-cache hits, which read nothing, included).",
			}, func() float64 { return float64(t.requests.Load()) }),
		)
		if !t.replica {
			continue
		}
		out = append(out,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "stakegraph_replica_lag_bytes", ConstLabels: labels,
				Help: "Bytes of write-ahead log the primary has written past the replica's replay position, at the last poll (-1 when the primary could not be asked).",
			}, func() float64 { return float64(t.lagBytes.Load()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "stakegraph_replica_lag_seconds", ConstLabels: labels,
				Help: "Age of the last transaction the replica replayed while it has more to replay, else 0, at the last poll.",
			}, func() float64 { return float64(t.lagMillis.Load()) / 1000 }),
		)
	}
	return out
}

// Readiness returns whether reads can be served (the primary or a
// replica answers, by its last poll) and the state of each database.
func (r *Router) Readiness() (bool, map[string]string) {
	states := map[string]string{}
	ready := false
	for _, t := range r.Targets() {
		if t.Up() {
			states[t.Name] = "ok"
			ready = true
		} else {
			states[t.Name] = "unreachable"
		}
	}
	return ready, states
}
