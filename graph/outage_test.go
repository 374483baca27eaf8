package graph_test

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/graph"
	"github.com/stakegraph/stakegraph/internal/syncbuffer"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// logLines returns the lines written to logs.
func logLines(logs *syncbuffer.Buffer) []string {
	return strings.FieldsFunc(logs.String(), func(r rune) bool { return r == '\n' })
}

// TestDatabaseUnavailable checks that a request whose fields fail because
// the database is down is answered 503 with the unavailable error in each
// failed field, and logged in one line however many fields failed.
func TestDatabaseUnavailable(t *testing.T) {
	proxy, proxied := storetest.NewDBProxy(t, storetest.NewURL(t))
	ctx := context.Background()
	db, err := store.Open(ctx, proxied, store.PoolConfig{MaxOpenConns: 4, MaxIdleConns: 4, ConnMaxLifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	logs := &syncbuffer.Buffer{}
	opts := testOptions()
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	srv := newProbeServer(t, db, opts)
	query := graphQLBody(aliases(50, page, ""))

	status, _, body := send(t, http.MethodPost, srv, "application/json", bytes.NewReader(query))
	if r := decodeResponse(t, body); status != http.StatusOK || len(r.Errors) > 0 {
		t.Fatalf("before the outage: %d %+v", status, r.Errors)
	}

	proxy.Cut(true)
	start := time.Now()
	status, header, body := send(t, http.MethodPost, srv, "application/json", bytes.NewReader(query))
	t.Logf("answered %d in %v", status, time.Since(start))
	r := decodeResponse(t, body)
	if status != http.StatusServiceUnavailable || len(r.Errors) == 0 || !strings.HasPrefix(header.Get("Content-Type"), "application/json") {
		t.Fatalf("during the outage: %d %s %.300s", status, header.Get("Content-Type"), body)
	}
	for _, e := range r.Errors {
		if e.Extensions.Code != "internal_server_error" || !strings.Contains(e.Message, "unavailable") {
			t.Errorf("error %+v", e)
		}
	}
	lines := logLines(logs)
	if len(lines) != 1 || !strings.Contains(lines[0], "level=WARN") || !strings.Contains(lines[0], "graphql: request failed") {
		t.Errorf("%d log lines for one request whose %d fields failed:\n%s", len(lines), len(r.Errors), strings.Join(lines, "\n"))
	}

	// After the outage the service recovers by itself: a pooled connection
	// cut during it may fail one more request, so wait for a clean answer.
	proxy.Cut(false)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		status, _, body = send(t, http.MethodPost, srv, "application/json", bytes.NewReader(query))
		r := decodeResponse(t, body)
		if status == http.StatusOK && len(r.Errors) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the outage: still %d %+v", status, r.Errors)
		}
	}
}

// TestRequestDeadline checks that a request whose statements wait past the
// request's deadline (here on a table another transaction locked) is
// answered promptly with a timeout: 504, code gateway_timeout.
func TestRequestDeadline(t *testing.T) {
	db := demoDB(t)
	logs := &syncbuffer.Buffer{}
	opts := testOptions()
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	h := graph.NewHandler(db, opts)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 300*time.Millisecond)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	}))
	t.Cleanup(srv.Close)

	tx, err := storetest.SQL(t, db).BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`LOCK TABLE withdrawals IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	status, _, body := send(t, http.MethodPost, srv.URL, "application/json", bytes.NewReader(graphQLBody(aliases(10, page, ""))))
	elapsed := time.Since(start)
	r := decodeResponse(t, body)
	t.Logf("answered %d in %v", status, elapsed)
	if status != http.StatusGatewayTimeout || len(r.Errors) == 0 || r.Errors[0].Extensions.Code != "gateway_timeout" {
		t.Errorf("answer %d: %.300s", status, body)
	}
	if elapsed < 300*time.Millisecond {
		t.Errorf("answered in %v, before the 300 ms deadline", elapsed)
	}
	if lines := logLines(logs); len(lines) != 1 {
		t.Errorf("%d log lines:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}
