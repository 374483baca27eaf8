// Package server builds stakegraph's two HTTP listeners.
//
// The API listener serves the health probes (/healthz, /readyz) and every
// route that other packages mount through Deps.Mounts (the GraphQL endpoint
// and the REST API), behind the middleware all routes share: request IDs,
// one log line per request, Prometheus metrics by route and status, a
// recoverer that answers a panic with a JSON 500, and a deadline and a cap
// on database connections for each request (Config.RequestTimeout and
// Config.ConnsPerRequest).
//
// The admin listener serves /metrics in the Prometheus text format (request
// counts and latencies by route, SQL statements, cache and indexer figures,
// Go runtime and process metrics) and the same probes; with Config.Pprof,
// also net/http/pprof's CPU, heap, goroutine and other profiles, symbols
// and execution traces under /debug/pprof/, but never /debug/pprof/cmdline,
// which would show the command line with --database-url and its password.
// It has no authentication and its profiles are costly to take and reveal
// the program's internals: it must not be exposed publicly. Keep it on a
// loopback or otherwise private address (the default is 127.0.0.1:9091).
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stakegraph/stakegraph/internal/derrors"
	"github.com/stakegraph/stakegraph/internal/respond"
	"github.com/stakegraph/stakegraph/internal/version"
	"github.com/stakegraph/stakegraph/store"
)

// Default listen addresses.
const (
	DefaultAddr      = "127.0.0.1:8080"
	DefaultAdminAddr = "127.0.0.1:9091"
)

// Defaults of the limits on each request of the API listener.
const (
	// DefaultRequestTimeout is how long a request may take.
	DefaultRequestTimeout = 10 * time.Second
	// DefaultConnsPerRequest is how many database connections one request
	// may use at once: a quarter of store.DefaultPool, so that a request
	// fanning out many queries leaves connections for the others.
	DefaultConnsPerRequest = 4
)

// Config configures the listeners.
type Config struct {
	// Addr is the API listener's address; empty means DefaultAddr.
	Addr string
	// AdminAddr is the admin listener's address; empty disables it.
	AdminAddr string
	// Pprof serves net/http/pprof's profiles on the admin listener under
	// /debug/pprof/, except the process's command line, which may hold the
	// database password. Off by default.
	Pprof bool
	// ShutdownTimeout bounds the graceful shutdown; zero means 15 s.
	ShutdownTimeout time.Duration
	// RequestTimeout is the deadline of each API request, from its start:
	// past it, the request's database work is cancelled and it is answered
	// 504 (code gateway_timeout). Zero means DefaultRequestTimeout;
	// negative means no deadline.
	RequestTimeout time.Duration
	// ConnsPerRequest is how many database connections one API request may
	// use at once (store.WithConnLimit). Zero means DefaultConnsPerRequest;
	// negative means no limit.
	ConnsPerRequest int
	// Logger logs requests and the server's life; nil means slog.Default().
	Logger *slog.Logger
}

// Deps are what the server serves.
type Deps struct {
	// DB answers /readyz.
	DB *store.DB
	// Databases, when set, answers /readyz instead of DB: whether reads
	// can be served and the state of each database ("ok" or
	// "unreachable"), which /readyz lists.
	Databases func() (ready bool, states map[string]string)
	// Registry collects the Prometheus metrics served on the admin
	// listener; nil means a new registry. Packages that record metrics of
	// their own register them on it.
	Registry *prometheus.Registry
	// Mounts add routes to the API router, in order, after the health
	// probes and behind the shared middleware: for example
	//
	//	func(r chi.Router) { r.Handle("/graphql", graphqlHandler) }
	//	func(r chi.Router) { r.Mount("/", restHandler) }
	//
	// The probes' exact paths win over a handler mounted at "/".
	Mounts []func(chi.Router)
}

// Server is the pair of HTTP listeners of `stakegraph serve`.
type Server struct {
	cfg    Config
	logger *slog.Logger
	db     *store.DB
	// databases is Deps.Databases.
	databases func() (bool, map[string]string)
	registry  *prometheus.Registry
	handler   http.Handler
	admin     http.Handler
	draining  atomic.Bool
}

// New builds the server's routers. It panics when deps.DB is nil or a
// metric cannot be registered, both programming errors.
func New(cfg Config, deps Deps) *Server {
	if deps.DB == nil {
		panic("server.New: Deps.DB is nil")
	}
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = 15 * time.Second
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.ConnsPerRequest == 0 {
		cfg.ConnsPerRequest = DefaultConnsPerRequest
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	registry := deps.Registry
	if registry == nil {
		registry = prometheus.NewRegistry()
	}
	s := &Server{cfg: cfg, logger: logger, db: deps.DB, databases: deps.Databases, registry: registry}
	metrics := newHTTPMetrics(registry)

	r := chi.NewRouter()
	r.Use(requestID, logRequests(logger), metrics.middleware, recoverPanics(logger),
		limitRequests(cfg.RequestTimeout, cfg.ConnsPerRequest))
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		respond.Error(w, r, fmt.Errorf("%w: no route %s", derrors.NotFound, r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		respond.Error(w, r, fmt.Errorf("%w: %s is not allowed on %s", derrors.MethodNotAllowed, r.Method, r.URL.Path))
	})
	s.probes(r)
	for _, mount := range deps.Mounts {
		mount(r)
	}
	s.handler = r

	a := chi.NewRouter()
	a.Use(recoverPanics(logger))
	a.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelError)}))
	s.probes(a)
	if cfg.Pprof {
		// pprof.Cmdline is left out: the command line may carry
		// --database-url with its password. The index links to it all the
		// same; it answers 404.
		a.HandleFunc("/debug/pprof/*", pprof.Index)
		a.HandleFunc("/debug/pprof/cmdline", http.NotFound)
		a.HandleFunc("/debug/pprof/profile", pprof.Profile)
		a.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		a.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	s.admin = a
	return s
}

// probes mounts /healthz and /readyz on r.
func (s *Server) probes(r chi.Router) {
	// Liveness: the process serves HTTP.
	r.Get("/healthz", func(w http.ResponseWriter, r *http.Request) {
		respond.JSON(w, r, http.StatusOK, map[string]string{"status": "ok"})
	})
	// Readiness: the database answers and the server is not shutting down.
	r.Get("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if s.draining.Load() {
			respond.JSON(w, r, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "shutting down"})
			return
		}
		if s.databases != nil {
			ready, states := s.databases()
			status, code := "ok", http.StatusOK
			if !ready {
				status, code = "unavailable", http.StatusServiceUnavailable
			}
			respond.JSON(w, r, code, map[string]any{"status": status, "databases": states})
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.db.Ping(ctx); err != nil {
			s.logger.WarnContext(r.Context(), "readiness check failed", "error", err)
			respond.JSON(w, r, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": "database unreachable"})
			return
		}
		respond.JSON(w, r, http.StatusOK, map[string]string{"status": "ok"})
	})
}

// Handler returns the API router.
func (s *Server) Handler() http.Handler { return s.handler }

// AdminHandler returns the admin router.
func (s *Server) AdminHandler() http.Handler { return s.admin }

// Registry returns the Prometheus registry served on the admin listener.
func (s *Server) Registry() *prometheus.Registry { return s.registry }

// Run listens on the configured addresses and serves until ctx ends, then
// shuts down gracefully.
func (s *Server) Run(ctx context.Context) error {
	api, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.Addr, err)
	}
	var admin net.Listener
	if s.cfg.AdminAddr != "" {
		admin, err = net.Listen("tcp", s.cfg.AdminAddr)
		if err != nil {
			api.Close()
			return fmt.Errorf("listen on %s (admin): %w", s.cfg.AdminAddr, err)
		}
	}
	return s.Serve(ctx, api, admin)
}

// Serve serves the API on api and, unless it is nil, the admin router on
// admin, until ctx ends; then it stops accepting connections, fails
// readiness, and waits up to the shutdown timeout for requests in flight.
func (s *Server) Serve(ctx context.Context, api, admin net.Listener) error {
	servers := []*http.Server{s.httpServer(s.handler)}
	listeners := []net.Listener{api}
	if admin != nil {
		servers = append(servers, s.httpServer(s.admin))
		listeners = append(listeners, admin)
	}
	errc := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { errc <- srv.Serve(listeners[i]) }()
	}
	attrs := []any{"addr", api.Addr().String(), "version", version.Version}
	if admin != nil {
		attrs = append(attrs, "admin_addr", admin.Addr().String())
	}
	s.logger.Info("serving", attrs...)

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	s.draining.Store(true)
	s.logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	for _, srv := range servers {
		if err := srv.Shutdown(shutdownCtx); err != nil {
			srv.Close()
			if serveErr == nil {
				serveErr = fmt.Errorf("shutdown: %w", err)
			}
		}
	}
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return serveErr
}

func (s *Server) httpServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      max(60*time.Second, s.cfg.RequestTimeout+10*time.Second), // time to answer at the deadline
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
}

// httpMetrics are the request metrics of the API listener.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge
}

func newHTTPMetrics(reg *prometheus.Registry) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stakegraph_http_requests_total",
			Help: "HTTP requests answered by the API, by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "stakegraph_http_request_duration_seconds",
			Help:    "Time to answer API requests, by route pattern and method.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "method"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "stakegraph_http_requests_in_flight",
			Help: "API requests being answered.",
		}),
	}
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stakegraph_build_info",
		Help: "Always 1; the labels describe the build.",
	}, []string{"version"})
	build.WithLabelValues(version.Version).Set(1)
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.inFlight, build} {
		reg.MustRegister(c)
	}
	// The runtime collectors may already be registered by the caller.
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
			panic(err)
		}
	}
	return m
}
