package apikey

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/internal/derrors"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// clock is a settable time source.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2025, 1, 6, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// countingSource counts loads and can be made to fail.
type countingSource struct {
	Source
	loads atomic.Int64
	fail  atomic.Bool
}

func (s *countingSource) ActiveAPIKeys(ctx context.Context) (map[[32]byte]store.APIKey, error) {
	s.loads.Add(1)
	if s.fail.Load() {
		return nil, fmt.Errorf("load API keys: %w: connection refused", derrors.Unavailable)
	}
	return s.Source.ActiveAPIKeys(ctx)
}

// echoIdentity answers 200 with the name of the key in the context.
var echoIdentity = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	key, ok := FromContext(r.Context())
	if !ok {
		http.Error(w, "no key in context", http.StatusInternalServerError)
		return
	}
	fmt.Fprint(w, key.Name)
})

type fixture struct {
	db    *store.DB
	src   *countingSource
	clock *clock
	auth  *Authenticator
	h     http.Handler
}

func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	db := storetest.New(t)
	f := &fixture{db: db, src: &countingSource{Source: db}, clock: newClock()}
	opts.Now = f.clock.Now
	f.auth = New(f.src, opts)
	f.h = f.auth.Middleware(echoIdentity)
	return f
}

func (f *fixture) createKey(t *testing.T, name string, limit *int) string {
	t.Helper()
	key, err := f.db.CreateAPIKey(context.Background(), name, limit)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// get sends a request with the given header name and value (none when the
// name is empty).
func (f *fixture) get(header, key string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "/avs", nil)
	if header != "" {
		r.Header.Set(header, key)
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return w
}

// wantError checks an error response's status and JSON code.
func wantError(t *testing.T, w *httptest.ResponseRecorder, status int, code string) {
	t.Helper()
	if w.Code != status {
		t.Fatalf("status = %d, want %d; body %s", w.Code, status, w.Body)
	}
	var body struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("body %q: %v", w.Body, err)
	}
	if body.Error.Code != code || body.Error.Message == "" {
		t.Errorf("error = %+v, want code %q and a message", body.Error, code)
	}
}

func TestAuthenticates(t *testing.T) {
	f := newFixture(t, Options{})
	key := f.createKey(t, "dev", nil)

	for _, header := range []string{"X-API-Token", "x-api-token", "X-Api-Token"} {
		w := f.get(header, key)
		if w.Code != http.StatusOK || w.Body.String() != "dev" {
			t.Errorf("%s: %d %q, want 200 with the key's identity", header, w.Code, w.Body)
		}
		if w.Header().Get("X-RateLimit-Limit") != "100" {
			t.Errorf("X-RateLimit-Limit = %q, want the default 100", w.Header().Get("X-RateLimit-Limit"))
		}
	}
	if n := f.src.loads.Load(); n != 1 {
		t.Errorf("%d key loads for three requests, want 1 (cached)", n)
	}

	wantError(t, f.get("", ""), http.StatusUnauthorized, "unauthorized")
	wantError(t, f.get("X-API-Token", key+"0"), http.StatusUnauthorized, "unauthorized")
	wantError(t, f.get("X-API-Token", strings.ToUpper(key)), http.StatusUnauthorized, "unauthorized")
}

func TestNewKeyWorksAfterMissInterval(t *testing.T) {
	f := newFixture(t, Options{MissInterval: 2 * time.Second})
	wantError(t, f.get("X-API-Token", "sg_unknown"), http.StatusUnauthorized, "unauthorized")
	loads := f.src.loads.Load()

	key := f.createKey(t, "fresh", nil)
	// Within the miss interval, unknown keys cause no reload, so the new key
	// is not known yet and random keys cannot hammer the database.
	for i := 0; i < 20; i++ {
		wantError(t, f.get("X-API-Token", fmt.Sprintf("sg_random%d", i)), http.StatusUnauthorized, "unauthorized")
	}
	wantError(t, f.get("X-API-Token", key), http.StatusUnauthorized, "unauthorized")
	if n := f.src.loads.Load(); n != loads {
		t.Errorf("%d reloads within the miss interval, want 0", n-loads)
	}

	f.clock.Advance(2 * time.Second)
	if w := f.get("X-API-Token", key); w.Code != http.StatusOK {
		t.Fatalf("new key after the miss interval: %d %s", w.Code, w.Body)
	}
	if n := f.src.loads.Load(); n != loads+1 {
		t.Errorf("%d reloads, want 1", n-loads)
	}
}

func TestRevokedKeyStopsWorking(t *testing.T) {
	f := newFixture(t, Options{RefreshInterval: 30 * time.Second})
	key := f.createKey(t, "soon-revoked", nil)
	if w := f.get("X-API-Token", key); w.Code != http.StatusOK {
		t.Fatalf("before revocation: %d", w.Code)
	}
	if err := f.db.RevokeAPIKey(context.Background(), "soon-revoked"); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(30 * time.Second)
	wantError(t, f.get("X-API-Token", key), http.StatusUnauthorized, "unauthorized")
}

func TestRateLimit(t *testing.T) {
	f := newFixture(t, Options{})
	three := 3
	limited := f.createKey(t, "limited", &three)
	other := f.createKey(t, "other", nil)

	for i := 0; i < 3; i++ {
		w := f.get("X-API-Token", limited)
		if w.Code != http.StatusOK {
			t.Fatalf("request %d: %d", i+1, w.Code)
		}
		h := w.Header()
		if h.Get("X-RateLimit-Limit") != "3" || h.Get("X-RateLimit-Remaining") != fmt.Sprint(2-i) || h.Get("X-RateLimit-Reset") != fmt.Sprint(20*(i+1)) {
			t.Errorf("request %d: limit %s remaining %s reset %s", i+1, h.Get("X-RateLimit-Limit"), h.Get("X-RateLimit-Remaining"), h.Get("X-RateLimit-Reset"))
		}
	}
	w := f.get("X-API-Token", limited)
	wantError(t, w, http.StatusTooManyRequests, "rate_limit_exceeded")
	h := w.Header()
	if h.Get("Retry-After") != "20" || h.Get("X-RateLimit-Remaining") != "0" || h.Get("X-RateLimit-Limit") != "3" || h.Get("X-RateLimit-Reset") != "60" {
		t.Errorf("429 headers: Retry-After %q remaining %q limit %q reset %q", h.Get("Retry-After"), h.Get("X-RateLimit-Remaining"), h.Get("X-RateLimit-Limit"), h.Get("X-RateLimit-Reset"))
	}

	// Limits are per key.
	if w := f.get("X-API-Token", other); w.Code != http.StatusOK {
		t.Errorf("another key is limited too: %d", w.Code)
	}

	f.clock.Advance(20 * time.Second)
	if w := f.get("X-API-Token", limited); w.Code != http.StatusOK {
		t.Errorf("after Retry-After: %d", w.Code)
	}
	wantError(t, f.get("X-API-Token", limited), http.StatusTooManyRequests, "rate_limit_exceeded")
}

func TestDefaultRateLimit(t *testing.T) {
	f := newFixture(t, Options{DefaultRateLimit: 5})
	key := f.createKey(t, "default", nil)
	for i := 0; i < 5; i++ {
		if w := f.get("X-API-Token", key); w.Code != http.StatusOK {
			t.Fatalf("request %d: %d", i+1, w.Code)
		}
	}
	wantError(t, f.get("X-API-Token", key), http.StatusTooManyRequests, "rate_limit_exceeded")
}

func TestDatabaseDown(t *testing.T) {
	var logs bytes.Buffer
	f := newFixture(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), MissInterval: time.Second})
	key := f.createKey(t, "dev", nil)

	// No keys loaded yet and the database is down: 503, not 401.
	f.src.fail.Store(true)
	wantError(t, f.get("X-API-Token", key), http.StatusServiceUnavailable, "internal_server_error")
	if strings.Contains(logs.String(), key) {
		t.Errorf("the key was logged: %s", logs.String())
	}

	// The database returns: the key works.
	f.src.fail.Store(false)
	f.clock.Advance(time.Second)
	if w := f.get("X-API-Token", key); w.Code != http.StatusOK {
		t.Fatalf("after recovery: %d %s", w.Code, w.Body)
	}

	// Down again, past the refresh interval: cached keys keep working, and
	// failed reloads are not retried more than once per miss interval.
	f.src.fail.Store(true)
	f.clock.Advance(time.Minute)
	loads := f.src.loads.Load()
	for i := 0; i < 10; i++ {
		if w := f.get("X-API-Token", key); w.Code != http.StatusOK {
			t.Fatalf("cached key while the database is down: %d", w.Code)
		}
	}
	if n := f.src.loads.Load() - loads; n != 1 {
		t.Errorf("%d reload attempts while down, want 1", n)
	}
}

func TestAuthenticateError(t *testing.T) {
	f := newFixture(t, Options{})
	_, err := f.auth.Authenticate(context.Background(), "sg_nope")
	if !errors.Is(err, derrors.Unauthorized) {
		t.Errorf("unknown key: %v, want derrors.Unauthorized", err)
	}
}

func TestConcurrentRequests(t *testing.T) {
	f := newFixture(t, Options{DefaultRateLimit: 1000})
	key := f.createKey(t, "busy", nil)
	var wg sync.WaitGroup
	var ok atomic.Int64
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if f.get("X-API-Token", key).Code == http.StatusOK {
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 50 {
		t.Errorf("%d of 50 concurrent requests succeeded", ok.Load())
	}
	if n := f.src.loads.Load(); n != 1 {
		t.Errorf("%d loads for concurrent first requests, want 1", n)
	}
}
