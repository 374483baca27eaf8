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

// countingSource counts loads and version checks, can be made to fail, and
// can hold version checks until a channel is closed.
type countingSource struct {
	Source
	loads  atomic.Int64
	checks atomic.Int64
	fail   atomic.Bool
	hold   atomic.Pointer[chan struct{}]
}

func (s *countingSource) ActiveAPIKeys(ctx context.Context) (map[[32]byte]store.APIKey, error) {
	s.loads.Add(1)
	if s.fail.Load() {
		return nil, fmt.Errorf("load API keys: %w: connection refused", derrors.Unavailable)
	}
	return s.Source.ActiveAPIKeys(ctx)
}

func (s *countingSource) APIKeysVersion(ctx context.Context) (int64, error) {
	s.checks.Add(1)
	if hold := s.hold.Load(); hold != nil {
		<-*hold
	}
	if s.fail.Load() {
		return 0, fmt.Errorf("read API keys version: %w: connection refused", derrors.Unavailable)
	}
	return s.Source.APIKeysVersion(ctx)
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

// wellFormed returns a well-formed key that no one was given.
func wellFormed(i int) string { return fmt.Sprintf("sg_%040x", i) }

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
	if n, c := f.src.loads.Load(), f.src.checks.Load(); n != 1 || c != 1 {
		t.Errorf("%d key loads and %d version checks for three requests, want 1 and 1 (cached)", n, c)
	}

	wantError(t, f.get("", ""), http.StatusUnauthorized, "unauthorized")
	wantError(t, f.get("X-API-Token", key+"0"), http.StatusUnauthorized, "unauthorized")
	wantError(t, f.get("X-API-Token", strings.ToUpper(key)), http.StatusUnauthorized, "unauthorized")
	wantError(t, f.get("X-API-Token", wellFormed(1)), http.StatusUnauthorized, "unauthorized")
}

// errorMessage returns the message of an error response.
func errorMessage(t *testing.T, w *httptest.ResponseRecorder) string {
	t.Helper()
	var body struct{ Error struct{ Message string } }
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatalf("body %q: %v", w.Body, err)
	}
	return body.Error.Message
}

// TestErrorMessages checks that a malformed token is quoted as sent (up to
// 100 bytes) and that a well-formed but unknown key is named by its display
// prefix only.
func TestErrorMessages(t *testing.T) {
	f := newFixture(t, Options{})
	key := f.createKey(t, "dev", nil)
	long := "sg_" + strings.Repeat("Z", 997)
	for _, tc := range []struct {
		token string
		want  []string
		not   []string
	}{
		{"abc", []string{`X-API-Token header "abc" is not an API key`, "sg_ followed by 40"}, nil},
		{strings.ToUpper(key), []string{`"` + strings.ToUpper(key) + `"`}, nil},
		{key + "0", []string{`"` + key + `0"`}, nil},
		{"Bearer \x00é\xff", []string{`"Bearer \x00é\xff"`}, nil},
		{long, []string{`"` + long[:100] + `"… (1000 bytes)`}, []string{long[:101]}},
		{wellFormed(7), []string{"sg_00000000… is unknown or revoked"}, []string{wellFormed(7)}},
	} {
		msg := errorMessage(t, f.get("X-API-Token", tc.token))
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("token %.20q: message %q lacks %q", tc.token, msg, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(msg, n) {
				t.Errorf("token %.20q: message %q contains %.20q", tc.token, msg, n)
			}
		}
	}
	// The unknown well-formed key caused the first load, which its miss
	// shares; malformed keys need none.
	if n := f.src.checks.Load(); n != 1 {
		t.Errorf("%d version checks, want 1", n)
	}
}

// TestNewKeyWorksAtOnce checks that an unknown key causes a check of the
// keys version, at most once per miss interval, and that a key created
// since is then accepted.
func TestNewKeyWorksAtOnce(t *testing.T) {
	f := newFixture(t, Options{MissInterval: 250 * time.Millisecond, CheckInterval: time.Second})
	wantError(t, f.get("X-API-Token", wellFormed(1)), http.StatusUnauthorized, "unauthorized")
	loads, checks := f.src.loads.Load(), f.src.checks.Load()

	key := f.createKey(t, "fresh", nil)
	f.clock.Advance(250 * time.Millisecond)
	if w := f.get("X-API-Token", key); w.Code != http.StatusOK {
		t.Fatalf("new key: %d %s", w.Code, w.Body)
	}
	if n, c := f.src.loads.Load()-loads, f.src.checks.Load()-checks; n != 1 || c != 1 {
		t.Errorf("the new key caused %d loads and %d checks, want 1 and 1", n, c)
	}

	// Within the miss interval, unknown keys cause no check, so random keys
	// cannot hammer the database, and a key created meanwhile is not known
	// yet.
	loads, checks = f.src.loads.Load(), f.src.checks.Load()
	second := f.createKey(t, "second", nil)
	for i := range 20 {
		wantError(t, f.get("X-API-Token", wellFormed(100+i)), http.StatusUnauthorized, "unauthorized")
	}
	wantError(t, f.get("X-API-Token", second), http.StatusUnauthorized, "unauthorized")
	if n, c := f.src.loads.Load()-loads, f.src.checks.Load()-checks; n != 0 || c != 0 {
		t.Errorf("%d loads and %d checks within the miss interval, want none", n, c)
	}
	f.clock.Advance(250 * time.Millisecond)
	if w := f.get("X-API-Token", second); w.Code != http.StatusOK {
		t.Fatalf("second new key after the miss interval: %d %s", w.Code, w.Body)
	}
}

// TestRevokedKeyStopsWithinCheckInterval checks that a revocation is seen
// by the first request one check interval later, and that checks reload
// the keys only when the keys version changed.
func TestRevokedKeyStopsWithinCheckInterval(t *testing.T) {
	f := newFixture(t, Options{CheckInterval: time.Second, RefreshInterval: time.Hour})
	key := f.createKey(t, "soon-revoked", nil)
	other := f.createKey(t, "stays", nil)
	if w := f.get("X-API-Token", key); w.Code != http.StatusOK {
		t.Fatalf("before revocation: %d", w.Code)
	}
	// Checks without a change read the version only.
	for range 3 {
		f.clock.Advance(time.Second)
		if w := f.get("X-API-Token", key); w.Code != http.StatusOK {
			t.Fatalf("before revocation: %d", w.Code)
		}
	}
	if n, c := f.src.loads.Load(), f.src.checks.Load(); n != 1 || c != 4 {
		t.Errorf("%d loads and %d checks, want 1 load and 4 checks", n, c)
	}

	if err := f.db.RevokeAPIKey(context.Background(), "soon-revoked"); err != nil {
		t.Fatal(err)
	}
	// Within the check interval the cached keys answer.
	if w := f.get("X-API-Token", key); w.Code != http.StatusOK {
		t.Errorf("right after revocation, within the check interval: %d", w.Code)
	}
	f.clock.Advance(time.Second)
	w := f.get("X-API-Token", key)
	wantError(t, w, http.StatusUnauthorized, "unauthorized")
	if msg := errorMessage(t, w); !strings.Contains(msg, key[:11]+"… is unknown or revoked") || strings.Contains(msg, key) {
		t.Errorf("message %q: want the key's prefix only", msg)
	}
	if w := f.get("X-API-Token", other); w.Code != http.StatusOK {
		t.Errorf("another key after the revocation: %d", w.Code)
	}
	if n := f.src.loads.Load(); n != 2 {
		t.Errorf("%d loads, want 2: the first and the one after the revocation", n)
	}
}

func TestKeysChangedChecksAtOnce(t *testing.T) {
	f := newFixture(t, Options{CheckInterval: time.Hour, RefreshInterval: time.Hour})
	key := f.createKey(t, "revoked", nil)
	if w := f.get("X-API-Token", key); w.Code != http.StatusOK {
		t.Fatalf("before revocation: %d", w.Code)
	}
	if err := f.db.RevokeAPIKey(context.Background(), "revoked"); err != nil {
		t.Fatal(err)
	}
	// The clock stands still: only the announcement can reveal the change.
	if w := f.get("X-API-Token", key); w.Code != http.StatusOK {
		t.Fatalf("before the announcement: %d", w.Code)
	}
	f.auth.KeysChanged(context.Background())
	wantError(t, f.get("X-API-Token", key), http.StatusUnauthorized, "unauthorized")
}

// TestCheckAhead checks that a request made between half a check interval
// and a whole one starts a check in the background and does not wait for
// it, while a request made a whole interval after the last check does.
func TestCheckAhead(t *testing.T) {
	f := newFixture(t, Options{CheckInterval: time.Second})
	key := f.createKey(t, "busy", nil)
	if w := f.get("X-API-Token", key); w.Code != http.StatusOK {
		t.Fatalf("first request: %d", w.Code)
	}
	hold := make(chan struct{})
	f.src.hold.Store(&hold)
	f.clock.Advance(600 * time.Millisecond)
	for range 3 {
		if w := f.get("X-API-Token", key); w.Code != http.StatusOK {
			t.Fatalf("request while a check runs: %d", w.Code)
		}
	}
	waitFor(t, "the background check to start", func() bool { return f.src.checks.Load() == 2 })

	// A request a whole interval after the last successful check waits
	// for the check under way.
	f.clock.Advance(500 * time.Millisecond)
	answered := make(chan int, 1)
	go func() { answered <- f.get("X-API-Token", key).Code }()
	// Give the request time to finish if it wrongly did not wait; a slow
	// machine can only make this miss the mistake, never fail.
	time.Sleep(50 * time.Millisecond)
	select {
	case code := <-answered:
		t.Fatalf("the request did not wait for the check: %d", code)
	default:
	}
	close(hold)
	select {
	case code := <-answered:
		if code != http.StatusOK {
			t.Errorf("after the check: %d", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the request never finished")
	}
	if n := f.src.checks.Load(); n != 2 {
		t.Errorf("%d checks, want 2: the waiting request shares the background one", n)
	}
}

// waitFor polls cond until it holds, failing the test after a generous
// deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
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
	f := newFixture(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)), CheckInterval: time.Second})
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

	// Down again, past the check interval: cached keys keep working, and
	// failed checks are not retried more than once per check interval, not
	// even for unknown keys.
	f.src.fail.Store(true)
	f.clock.Advance(time.Minute)
	checks := f.src.checks.Load()
	for i := 0; i < 10; i++ {
		if w := f.get("X-API-Token", key); w.Code != http.StatusOK {
			t.Fatalf("cached key while the database is down: %d", w.Code)
		}
		wantError(t, f.get("X-API-Token", wellFormed(i)), http.StatusUnauthorized, "unauthorized")
	}
	if n := f.src.checks.Load() - checks; n != 1 {
		t.Errorf("%d check attempts while down, want 1", n)
	}
	// A check interval later, the next check runs in the background: the
	// request does not wait for it, though it hangs.
	hold := make(chan struct{})
	f.src.hold.Store(&hold)
	f.clock.Advance(time.Second)
	if w := f.get("X-API-Token", key); w.Code != http.StatusOK {
		t.Fatalf("cached key while a check hangs: %d", w.Code)
	}
	waitFor(t, "the second check attempt", func() bool { return f.src.checks.Load()-checks == 2 })
	close(hold)
	waitFor(t, "the check to end", func() bool {
		f.auth.mu.Lock()
		defer f.auth.mu.Unlock()
		return f.auth.checking == nil
	})
	if strings.Contains(logs.String(), key) {
		t.Errorf("the key was logged: %s", logs.String())
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
	if n, c := f.src.loads.Load(), f.src.checks.Load(); n != 1 || c != 1 {
		t.Errorf("%d loads and %d checks for concurrent first requests, want 1 and 1", n, c)
	}
}
