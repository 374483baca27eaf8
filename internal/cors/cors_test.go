package cors_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stakegraph/stakegraph/internal/cors"
)

func TestPreflightIsAnsweredBeforeTheHandler(t *testing.T) {
	ran := false
	h := cors.Middleware("GET, POST, OPTIONS")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ran = true
		w.WriteHeader(http.StatusUnauthorized)
	}))
	req := httptest.NewRequest(http.MethodOptions, "/graphql", nil)
	req.Header.Set("Origin", "https://app.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type, x-api-token")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if ran {
		t.Error("the handler ran for a preflight")
	}
	if rec.Code != http.StatusNoContent {
		t.Errorf("status %d; want 204", rec.Code)
	}
	for name, want := range map[string]string{
		"Access-Control-Allow-Origin":   "*",
		"Access-Control-Allow-Methods":  "GET, POST, OPTIONS",
		"Access-Control-Allow-Headers":  "X-API-Token, Content-Type",
		"Access-Control-Expose-Headers": "Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, ETag, X-Cache, X-Request-Id",
		"Access-Control-Max-Age":        "86400",
		"Allow":                         "GET, POST, OPTIONS",
	} {
		if got := rec.Header().Get(name); got != want {
			t.Errorf("%s = %q; want %q", name, got, want)
		}
	}
}

func TestOtherRequestsReachTheHandler(t *testing.T) {
	h := cors.Middleware("GET, OPTIONS")(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	}))
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPost} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, "/avs", nil))
		if rec.Code != http.StatusUnauthorized {
			t.Errorf("%s: status %d; want the handler's 401", method, rec.Code)
		}
		if got := rec.Header().Get("Access-Control-Allow-Origin"); got != "*" {
			t.Errorf("%s: Access-Control-Allow-Origin = %q", method, got)
		}
		if got := rec.Header().Get("Access-Control-Expose-Headers"); got != cors.ExposedHeaders {
			t.Errorf("%s: Access-Control-Expose-Headers = %q", method, got)
		}
		if got := rec.Header().Get("Access-Control-Allow-Methods"); got != "" {
			t.Errorf("%s: Access-Control-Allow-Methods = %q on a request that is not a preflight", method, got)
		}
	}
}
