// Package apikey authenticates requests by their X-API-Token header and
// limits each key's request rate.
//
// Keys are looked up by their SHA-256 hash in an in-memory copy of the
// store's active keys. The copy is reloaded when it is older than the
// refresh interval, and also when an unknown key arrives, but then at most
// once per miss interval, so that a key created a moment ago works at once
// while random keys cannot make every request query the database. The key
// itself is never logged or kept: only its hash is compared.
package apikey

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/stakegraph/stakegraph/internal/derrors"
	"github.com/stakegraph/stakegraph/internal/respond"
	"github.com/stakegraph/stakegraph/store"
)

// Header is the request header that carries the API key. Go matches header
// names without regard to case.
const Header = "X-API-Token"

// Source loads the active (not revoked) API keys, keyed by the SHA-256 hash
// of the key. *store.DB is a Source.
type Source interface {
	ActiveAPIKeys(ctx context.Context) (map[[32]byte]store.APIKey, error)
}

// Options tune an Authenticator. Zero values select the defaults.
type Options struct {
	// DefaultRateLimit is the number of requests per minute allowed to a
	// key that has no limit of its own. Default 100.
	DefaultRateLimit int
	// RefreshInterval is the age after which the key cache is reloaded.
	// Default 30 s.
	RefreshInterval time.Duration
	// MissInterval is the least time between two reloads caused by unknown
	// keys. Default 2 s.
	MissInterval time.Duration
	// Now returns the current time; tests set it. Default time.Now.
	Now func() time.Time
	// Logger receives reload failures. Default slog.Default().
	Logger *slog.Logger
}

// Authenticator checks API keys and applies per-key rate limits. It is safe
// for concurrent use.
type Authenticator struct {
	src     Source
	opts    Options
	limiter *limiter

	mu       sync.Mutex
	keys     map[[32]byte]store.APIKey // nil until the first successful load
	loadedAt time.Time                 // when keys was loaded
	tried    time.Time                 // when the last load started
	loading  chan struct{}             // non-nil while a load runs; closed when it ends
	loadErr  error                     // the outcome of the last load
}

// New returns an Authenticator reading keys from src.
func New(src Source, opts Options) *Authenticator {
	if opts.DefaultRateLimit <= 0 {
		opts.DefaultRateLimit = 100
	}
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = 30 * time.Second
	}
	if opts.MissInterval <= 0 {
		opts.MissInterval = 2 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Authenticator{src: src, opts: opts, limiter: newLimiter()}
}

type contextKey struct{}

// FromContext returns the API key that authenticated the request whose
// context is ctx.
func FromContext(ctx context.Context) (store.APIKey, bool) {
	k, ok := ctx.Value(contextKey{}).(store.APIKey)
	return k, ok
}

// NewContext returns a copy of ctx carrying key as the request's identity.
func NewContext(ctx context.Context, key store.APIKey) context.Context {
	return context.WithValue(ctx, contextKey{}, key)
}

// Middleware admits requests that carry a known key and are within the
// key's rate limit, with the key's identity in their context. Others get
// 401 unauthorized or 429 rate_limit_exceeded. Every admitted or limited
// response carries X-RateLimit-Limit, X-RateLimit-Remaining and
// X-RateLimit-Reset (seconds until the full limit is available again); a
// 429 also carries Retry-After (seconds).
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := r.Header.Get(Header)
		if token == "" {
			respond.Error(w, r, fmt.Errorf("%w: the %s header is required", derrors.Unauthorized, Header))
			return
		}
		key, err := a.Authenticate(r.Context(), token)
		if err != nil {
			respond.Error(w, r, err)
			return
		}
		limit := a.opts.DefaultRateLimit
		if key.RateLimitPerMinute != nil && *key.RateLimitPerMinute > 0 {
			limit = *key.RateLimitPerMinute
		}
		d := a.limiter.allow(key.ID, limit, a.opts.Now())
		h := w.Header()
		h.Set("X-RateLimit-Limit", strconv.Itoa(d.Limit))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(d.Remaining))
		h.Set("X-RateLimit-Reset", strconv.Itoa(ceilSeconds(d.Reset)))
		if !d.Allowed {
			h.Set("Retry-After", strconv.Itoa(ceilSeconds(d.RetryAfter)))
			respond.Error(w, r, fmt.Errorf("%w: at most %d requests per minute are allowed for this key", derrors.RateLimited, d.Limit))
			return
		}
		next.ServeHTTP(w, r.WithContext(NewContext(r.Context(), key)))
	})
}

// Authenticate returns the active key whose value is token. An unknown or
// revoked key is a derrors.Unauthorized error; when the keys cannot be
// loaded at all, the error is the store's (derrors.Unavailable when the
// database is down).
func (a *Authenticator) Authenticate(ctx context.Context, token string) (store.APIKey, error) {
	hash := store.HashAPIKey(token)
	now := a.opts.Now()

	a.mu.Lock()
	stale := a.keys == nil || now.Sub(a.loadedAt) >= a.opts.RefreshInterval
	// After a failed load, wait a miss interval before trying again.
	stale = stale && (a.tried.IsZero() || now.Sub(a.tried) >= a.opts.MissInterval || a.loadErr == nil)
	// Requests that find the cache being reloaded use the current keys
	// rather than wait, unless there are none yet.
	wait := a.keys == nil
	a.mu.Unlock()
	if stale {
		a.load(ctx, wait)
	}

	a.mu.Lock()
	key, found := a.keys[hash]
	loaded := a.keys != nil
	missReload := !found && loaded && now.Sub(a.tried) >= a.opts.MissInterval
	loadErr := a.loadErr
	a.mu.Unlock()
	if !loaded {
		return store.APIKey{}, fmt.Errorf("load API keys: %w", loadErr)
	}
	if missReload {
		a.load(ctx, true)
		a.mu.Lock()
		key, found = a.keys[hash]
		a.mu.Unlock()
	}
	if !found {
		return store.APIKey{}, fmt.Errorf("%w: the API key is not valid", derrors.Unauthorized)
	}
	return key, nil
}

// load reloads the key cache. When a reload is already under way, load
// waits for it if wait is set and otherwise returns at once. A failed reload
// keeps the previous keys.
func (a *Authenticator) load(ctx context.Context, wait bool) {
	a.mu.Lock()
	if done := a.loading; done != nil {
		a.mu.Unlock()
		if !wait {
			return
		}
		select {
		case <-done:
		case <-ctx.Done():
		}
		return
	}
	done := make(chan struct{})
	a.loading = done
	a.tried = a.opts.Now()
	a.mu.Unlock()

	// The load outlives a cancelled request so that waiting requests still
	// get its result.
	loadCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	keys, err := a.src.ActiveAPIKeys(loadCtx)
	cancel()

	a.mu.Lock()
	a.loadErr = err
	if err == nil {
		a.keys = keys
		if a.keys == nil {
			a.keys = map[[32]byte]store.APIKey{}
		}
		a.loadedAt = a.opts.Now()
	}
	a.loading = nil
	a.mu.Unlock()
	close(done)
	if err != nil {
		a.opts.Logger.WarnContext(ctx, "reload API keys", "error", err)
	}
}

func ceilSeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int(math.Ceil(d.Seconds()))
}
