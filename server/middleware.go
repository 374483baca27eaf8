package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/stakegraph/stakegraph/internal/derrors"
	"github.com/stakegraph/stakegraph/internal/respond"
	"github.com/stakegraph/stakegraph/store"
)

// RequestIDHeader carries a request's ID, taken from the request when it
// has a sane one and set on every response.
const RequestIDHeader = "X-Request-Id"

type requestIDKey struct{}

// RequestID returns the ID of the request ctx belongs to, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

var requestIDRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

func requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !requestIDRE.MatchString(id) {
			var b [8]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set(RequestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestIDKey{}, id)))
	})
}

// LogHandler wraps h so that records logged with a request's context carry
// its request_id.
func LogHandler(h slog.Handler) slog.Handler { return requestIDHandler{h} }

type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, rec slog.Record) error {
	if id := RequestID(ctx); id != "" {
		rec.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, rec)
}

func (h requestIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(attrs)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}

// logRequests logs one line per request. Headers are never logged (the API
// key travels in one), and query parameters whose names suggest a secret
// are redacted.
func logRequests(logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
			next.ServeHTTP(ww, r)
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
			}
			level := slog.LevelInfo
			switch {
			case status >= 500:
				level = slog.LevelWarn
			case r.URL.Path == "/healthz" || r.URL.Path == "/readyz":
				level = slog.LevelDebug
			}
			if !logger.Enabled(r.Context(), level) {
				return
			}
			// GroupValue takes the attributes as they are; slog.Group
			// would box each one in an interface first.
			logger.LogAttrs(r.Context(), level, "request",
				slog.Attr{Key: "http", Value: slog.GroupValue(
					slog.String("method", r.Method),
					slog.String("path", r.URL.Path),
					slog.String("query", redactQuery(r.URL.RawQuery)),
					slog.String("route", routePattern(r)),
					slog.Int("status", status),
					slog.Int("bytes", ww.BytesWritten()),
					slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
					slog.String("remote", r.RemoteAddr),
					slog.String("user_agent", r.UserAgent()),
				)})
		})
	}
}

// redactQuery hides the values of query parameters that may hold secrets
// and cuts a long query string.
func redactQuery(raw string) string {
	if raw == "" {
		return ""
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return "(unparsable)"
	}
	for name := range q {
		lower := strings.ToLower(name)
		if strings.Contains(lower, "token") || strings.Contains(lower, "key") || strings.Contains(lower, "secret") || strings.Contains(lower, "password") {
			q[name] = []string{"REDACTED"}
		}
	}
	enc := q.Encode()
	if len(enc) > maxLoggedQuery {
		// A GraphQL GET carries its whole query; the log keeps its start.
		enc = fmt.Sprintf("%s… (%d bytes)", strings.ToValidUTF8(enc[:maxLoggedQuery], ""), len(enc))
	}
	return enc
}

// maxLoggedQuery is how much of a query string a request's log line keeps.
const maxLoggedQuery = 512

// routePattern returns the pattern of the route that served r, or
// "unmatched", so that metrics get a bounded set of labels.
func routePattern(r *http.Request) string {
	if rctx := chi.RouteContext(r.Context()); rctx != nil {
		if p := rctx.RoutePattern(); p != "" {
			return p
		}
	}
	return "unmatched"
}

func (m *httpMetrics) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		m.inFlight.Inc()
		defer m.inFlight.Dec()
		ww, ok := w.(middleware.WrapResponseWriter)
		if !ok {
			ww = middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		}
		defer func() {
			// Recorded even when a panic passes through, which the
			// recoverer below turns into a 500 first.
			status := ww.Status()
			if status == 0 {
				status = http.StatusOK
			}
			route := routePattern(r)
			m.requests.WithLabelValues(route, r.Method, strconv.Itoa(status)).Inc()
			m.duration.WithLabelValues(route, r.Method).Observe(time.Since(start).Seconds())
		}()
		next.ServeHTTP(ww, r)
	})
}

// limitRequests gives each request a deadline, timeout from its start
// (none when timeout is not positive), and a share of the database pool:
// the store's methods use at most conns connections at once for it (no
// limit when conns is not positive; see store.WithConnLimit). Work that
// honours the request's context stops at the deadline: lib/pq cancels the
// statement running on the server, a query waiting for a connection gives
// up, and the handler answers with the error that wraps derrors.Timeout
// (504). Should a handler return after the deadline without having
// answered, the 504 is written here.
func limitRequests(timeout time.Duration, conns int) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := store.WithConnLimit(r.Context(), conns)
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			next.ServeHTTP(w, r.WithContext(ctx))
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return
			}
			if ww, ok := w.(middleware.WrapResponseWriter); ok && ww.Status() == 0 {
				respond.Error(w, r, fmt.Errorf("%w: %s %s: no answer within %v", derrors.Timeout, r.Method, r.URL.Path, timeout))
			}
		})
	}
}

// recoverPanics answers a panicking handler with a JSON 500 (unless it
// already started its response) and logs the panic with its stack.
func recoverPanics(logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer func() {
				v := recover()
				if v == nil {
					return
				}
				if v == http.ErrAbortHandler {
					panic(v) // the handler's way to abort the response
				}
				logger.ErrorContext(r.Context(), "panic serving request",
					"panic", fmt.Sprint(v), "method", r.Method, "path", r.URL.Path, "stack", string(debug.Stack()))
				if ww, ok := w.(middleware.WrapResponseWriter); ok && ww.Status() != 0 {
					return // too late for a clean error response
				}
				status, detail := respond.Describe(fmt.Errorf("panic: %v", v))
				respond.JSON(w, r, status, respond.ErrorBody{Error: detail})
			}()
			next.ServeHTTP(w, r)
		})
	}
}
