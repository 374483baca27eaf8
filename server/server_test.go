package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/stakegraph/stakegraph/internal/syncbuffer"
	"github.com/stakegraph/stakegraph/localpg"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

func newTestServer(t *testing.T, db *store.DB, mounts ...func(chi.Router)) (*Server, *syncbuffer.Buffer) {
	t.Helper()
	logs := &syncbuffer.Buffer{}
	logger := slog.New(LogHandler(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	return New(Config{Logger: logger}, Deps{DB: db, Mounts: mounts}), logs
}

func get(t *testing.T, h http.Handler, path string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func decode(t *testing.T, w *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	if ct := w.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	var m map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
		t.Fatalf("body %q: %v", w.Body.String(), err)
	}
	return m
}

func TestProbes(t *testing.T) {
	s, _ := newTestServer(t, storetest.New(t))
	for _, h := range []http.Handler{s.Handler(), s.AdminHandler()} {
		w := get(t, h, "/healthz")
		if w.Code != 200 || decode(t, w)["status"] != "ok" {
			t.Errorf("/healthz = %d %s", w.Code, w.Body)
		}
		w = get(t, h, "/readyz")
		if w.Code != 200 || decode(t, w)["status"] != "ok" {
			t.Errorf("/readyz = %d %s", w.Code, w.Body)
		}
	}
}

// TestReadyzDatabaseDown stops the database under a running server.
func TestReadyzDatabaseDown(t *testing.T) {
	ctx := context.Background()
	base, err := os.MkdirTemp("", "server-test-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(base, 0o755) // the postgres OS user must reach it when we are root
	t.Cleanup(func() { os.RemoveAll(base) })
	cluster, err := localpg.Start(ctx, localpg.Options{Dir: filepath.Join(base, "pg"), SocketOnly: true, Fast: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cluster.Stop(context.Background()) })
	db, err := store.Open(ctx, cluster.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, logs := newTestServer(t, db)

	if w := get(t, s.Handler(), "/readyz"); w.Code != 200 {
		t.Fatalf("/readyz with the database up = %d %s", w.Code, w.Body)
	}
	if err := cluster.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	w := get(t, s.Handler(), "/readyz")
	if w.Code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz with the database down = %d %s, want 503", w.Code, w.Body)
	}
	if body := decode(t, w); body["status"] != "unavailable" || body["reason"] != "database unreachable" {
		t.Errorf("/readyz body = %v", body)
	}
	if !strings.Contains(logs.String(), "readiness check failed") {
		t.Error("the failed readiness check was not logged")
	}
	// Liveness does not depend on the database.
	if w := get(t, s.Handler(), "/healthz"); w.Code != 200 {
		t.Errorf("/healthz with the database down = %d", w.Code)
	}
}

func TestMiddleware(t *testing.T) {
	s, logs := newTestServer(t, storetest.New(t), func(r chi.Router) {
		r.Get("/boom/{id}", func(http.ResponseWriter, *http.Request) { panic("kaboom") })
		r.Get("/hello", func(w http.ResponseWriter, r *http.Request) {
			slog.New(LogHandler(slog.NewJSONHandler(io.Discard, nil))).InfoContext(r.Context(), "inside")
			w.Write([]byte("hi"))
		})
	})
	h := s.Handler()

	const secret = "sg_0123456789abcdef0123456789abcdef01234567"
	w := get(t, h, "/hello?api_key=hush&page=2", "X-API-Token", secret, RequestIDHeader, "abc-123")
	if w.Code != 200 || w.Body.String() != "hi" {
		t.Fatalf("/hello = %d %q", w.Code, w.Body)
	}
	if id := w.Header().Get(RequestIDHeader); id != "abc-123" {
		t.Errorf("request ID = %q, want the client's abc-123", id)
	}
	if id := get(t, h, "/hello", RequestIDHeader, "bad id with spaces").Header().Get(RequestIDHeader); !requestIDRE.MatchString(id) || id == "bad id with spaces" {
		t.Errorf("request ID for a bad client ID = %q", id)
	}

	w = get(t, h, "/boom/7")
	if w.Code != 500 {
		t.Fatalf("panicking route = %d, want 500", w.Code)
	}
	if body := decode(t, w); body["error"].(map[string]any)["code"] != "internal_server_error" || strings.Contains(w.Body.String(), "kaboom") {
		t.Errorf("panic body = %s", w.Body)
	}

	w = get(t, h, "/nowhere")
	if w.Code != 404 || decode(t, w)["error"].(map[string]any)["code"] != "not_found" {
		t.Errorf("/nowhere = %d %s", w.Code, w.Body)
	}
	req := httptest.NewRequest("POST", "/healthz", nil)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != 405 || decode(t, w)["error"].(map[string]any)["code"] != "method_not_allowed" {
		t.Errorf("POST /healthz = %d %s", w.Code, w.Body)
	}

	out := logs.String()
	if strings.Contains(out, secret) || strings.Contains(out, "hush") {
		t.Errorf("logs leak a secret:\n%s", out)
	}
	if !strings.Contains(out, "kaboom") || !strings.Contains(out, "panic serving request") {
		t.Errorf("the panic was not logged:\n%s", out)
	}
	var requests []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if rec["msg"] == "request" {
			requests = append(requests, rec)
		}
	}
	if len(requests) != 5 {
		t.Fatalf("%d request log lines for 5 requests:\n%s", len(requests), out)
	}
	first := requests[0]["http"].(map[string]any)
	if first["route"] != "/hello" || first["status"] != float64(200) || first["path"] != "/hello" || first["query"] != "api_key=REDACTED&page=2" {
		t.Errorf("request log = %v", first)
	}
	if requests[0]["request_id"] != "abc-123" {
		t.Errorf("request log lacks the request ID: %v", requests[0])
	}
	if boom := requests[2]["http"].(map[string]any); boom["route"] != "/boom/{id}" || boom["status"] != float64(500) {
		t.Errorf("panic request log = %v", boom)
	}

	metrics := get(t, s.AdminHandler(), "/metrics").Body.String()
	for _, want := range []string{
		`stakegraph_http_requests_total{method="GET",route="/hello",status="200"} 2`,
		`stakegraph_http_requests_total{method="GET",route="/boom/{id}",status="500"} 1`,
		`stakegraph_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`stakegraph_http_request_duration_seconds_count{method="GET",route="/hello"} 2`,
		`stakegraph_build_info{version="dev"} 1`,
		`go_goroutines`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestServeAndShutdown(t *testing.T) {
	s, _ := newTestServer(t, storetest.New(t), func(r chi.Router) {
		r.Get("/slow", func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(300 * time.Millisecond)
			w.Write([]byte("done"))
		})
	})
	api, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	admin, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, api, admin) }()

	resp, err := http.Get("http://" + api.Addr().String() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/healthz over HTTP = %d", resp.StatusCode)
	}
	resp, err = http.Get("http://" + admin.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `stakegraph_http_requests_total{method="GET",route="/healthz",status="200"} 1`) {
		t.Errorf("admin /metrics:\n%s", body)
	}

	// A request in flight when shutdown starts is answered.
	slow := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + api.Addr().String() + "/slow")
		if err != nil {
			slow <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		slow <- string(b)
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if got := <-slow; got != "done" {
		t.Errorf("in-flight request got %q, want done", got)
	}
	if _, err := http.Get("http://" + api.Addr().String() + "/healthz"); err == nil {
		t.Error("server still accepts connections after shutdown")
	}
}

func TestRunBadAddress(t *testing.T) {
	s := New(Config{Addr: "127.0.0.1:notaport"}, Deps{DB: storetest.New(t)})
	err := s.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "listen on 127.0.0.1:notaport") {
		t.Errorf("Run with a bad address = %v", err)
	}
}
