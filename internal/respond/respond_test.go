package respond

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stakegraph/stakegraph/internal/derrors"
)

// captureLog routes the default logger to a buffer for the test.
func captureLog(t *testing.T) *bytes.Buffer {
	var buf bytes.Buffer
	saved := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(saved) })
	return &buf
}

func TestJSON(t *testing.T) {
	w := httptest.NewRecorder()
	JSON(w, httptest.NewRequest("GET", "/x", nil), http.StatusCreated, map[string]int{"a": 1})
	if w.Code != http.StatusCreated {
		t.Errorf("status = %d", w.Code)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	if got := w.Body.String(); got != "{\"a\":1}\n" {
		t.Errorf("body = %q", got)
	}
	if cl := w.Header().Get("Content-Length"); cl != "8" {
		t.Errorf("Content-Length = %q, want 8", cl)
	}
}

func TestJSONHead(t *testing.T) {
	w := httptest.NewRecorder()
	JSON(w, httptest.NewRequest("HEAD", "/x", nil), http.StatusOK, map[string]int{"a": 1})
	if w.Code != http.StatusOK || w.Body.Len() != 0 {
		t.Errorf("HEAD: status %d, body %q; want 200 and no body", w.Code, w.Body.String())
	}
	if cl := w.Header().Get("Content-Length"); cl != "8" {
		t.Errorf("HEAD Content-Length = %q, want the GET body's 8", cl)
	}
}

func TestJSONUnencodable(t *testing.T) {
	logs := captureLog(t)
	w := httptest.NewRecorder()
	JSON(w, httptest.NewRequest("GET", "/x", nil), http.StatusOK, math.Inf(1))
	if w.Code != http.StatusInternalServerError {
		t.Errorf("status = %d, want 500", w.Code)
	}
	if !strings.Contains(logs.String(), "encode response") {
		t.Errorf("encoding failure not logged: %q", logs.String())
	}
}

func decodeError(t *testing.T, w *httptest.ResponseRecorder) ErrorDetail {
	t.Helper()
	var body ErrorBody
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("error body %q: %v", w.Body.String(), err)
	}
	return body.Error
}

func TestError(t *testing.T) {
	base := fmt.Errorf("%w: no operator 0xabc", derrors.NotFound)
	for _, tc := range []struct {
		name        string
		err         error
		status      int
		code, msg   string
		logged      bool
		notInOutput string
	}{
		{"bare sentinel", derrors.NotFound, 404, "not_found", "not found", false, ""},
		{"wrapped with context", fmt.Errorf("rest: get operator: %w", base), 404, "not_found", "not found: no operator 0xabc", false, "rest:"},
		{"sentinel at the end", fmt.Errorf("handler: %w", fmt.Errorf("bad sort field %q: %w", "x", derrors.InvalidArgument)), 422, "unprocessable_entity", `bad sort field "x": invalid argument`, false, "handler"},
		{"joined", fmt.Errorf("outer: %w", errors.Join(errors.New("other"), fmt.Errorf("%w: slow down", derrors.RateLimited))), 429, "rate_limit_exceeded", "rate limit exceeded: slow down", false, "outer"},
		{"unauthorized", fmt.Errorf("%w: missing X-API-Token header", derrors.Unauthorized), 401, "unauthorized", "unauthorized: missing X-API-Token header", false, ""},
		{"internal", fmt.Errorf("query operators: %w", errors.New("pq: relation secret_table does not exist")), 500, "internal_server_error", "internal server error", true, "secret_table"},
		{"unavailable", fmt.Errorf("%w: dial tcp 10.0.0.5:5432: connection refused", derrors.Unavailable), 503, "internal_server_error", "service unavailable, try again later", true, "10.0.0.5"},
		{"timeout", fmt.Errorf("read avs: %w", fmt.Errorf("%w: pq: canceling statement due to statement timeout", derrors.Timeout)), 504, "gateway_timeout", TimeoutMessage, true, "canceling statement"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := captureLog(t)
			w := httptest.NewRecorder()
			Error(w, httptest.NewRequest("GET", "/v1/operators", nil), tc.err)
			if w.Code != tc.status {
				t.Errorf("status = %d, want %d", w.Code, tc.status)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
				t.Errorf("Content-Type = %q", ct)
			}
			d := decodeError(t, w)
			if d.Code != tc.code || d.Message != tc.msg {
				t.Errorf("error = %+v, want code %q message %q", d, tc.code, tc.msg)
			}
			if tc.notInOutput != "" && strings.Contains(w.Body.String(), tc.notInOutput) {
				t.Errorf("body %q leaks %q", w.Body.String(), tc.notInOutput)
			}
			if logged := strings.Contains(logs.String(), "request failed"); logged != tc.logged {
				t.Errorf("logged = %v, want %v (log: %q)", logged, tc.logged, logs.String())
			}
			if tc.logged && !strings.Contains(logs.String(), tc.notInOutput) {
				t.Errorf("log %q lacks the real error", logs.String())
			}
		})
	}
}
