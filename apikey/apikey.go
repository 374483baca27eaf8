// Package apikey authenticates requests by their X-API-Token header and
// limits each key's request rate.
//
// Keys are looked up by their SHA-256 hash in an in-memory copy of the
// store's active keys, which is kept current by checks against the store's
// keys version (store.DB.APIKeysVersion), a counter that every change to
// the keys increments in the changing transaction. A check reads the
// version and reloads the keys only when it changed (or when the copy is
// older than the refresh interval). A request finds the copy checked
// within the last check interval (DefaultCheckInterval, 1 s) or waits for
// a check; busy servers start the check in the background half an interval
// early, so that requests rarely wait. Hence a revoked key is refused, and a
// new key accepted, by every request that arrives more than one check
// interval after the change was committed.
//
// An unknown key causes a check too, at most once per miss interval
// (DefaultMissInterval), so that a key created a moment ago works at once
// while random keys cannot make every request query the database. A token
// that does not have the form of a key is refused without a check. While
// the database cannot be reached, the keys last loaded keep working, without
// waiting for checks, and a check is tried at most once per check interval.
//
// The key itself is never logged or kept: only its hash is compared, and
// messages about a well-formed key name it by its display prefix.
package apikey

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stakegraph/stakegraph/internal/derrors"
	"github.com/stakegraph/stakegraph/internal/respond"
	"github.com/stakegraph/stakegraph/store"
)

// Header is the request header that carries the API key. Go matches header
// names without regard to case.
const Header = "X-API-Token"

// Default timings of an Authenticator.
const (
	// DefaultCheckInterval is the longest time between two checks of the
	// key cache against the store's keys version, and so the revocation
	// delay: a key revoked (or created) more than this long before a
	// request arrives is refused (or accepted), as long as the database
	// answers.
	DefaultCheckInterval = time.Second
	// DefaultMissInterval is the least time between two checks caused by
	// unknown keys.
	DefaultMissInterval = 250 * time.Millisecond
	// DefaultRefreshInterval is the age after which the keys are reloaded
	// even though the keys version has not changed.
	DefaultRefreshInterval = time.Minute
)

// checkTimeout bounds one check: reading the keys version and, when it
// changed, reloading the keys.
const checkTimeout = 5 * time.Second

// Source loads the active (not revoked) API keys, keyed by the SHA-256 hash
// of the key, and the keys version that every change to the keys
// increments. *store.DB is a Source.
type Source interface {
	ActiveAPIKeys(ctx context.Context) (map[[32]byte]store.APIKey, error)
	APIKeysVersion(ctx context.Context) (int64, error)
}

// Options tune an Authenticator. Zero values select the defaults.
type Options struct {
	// DefaultRateLimit is the number of requests per minute allowed to a
	// key that has no limit of its own. Default 100.
	DefaultRateLimit int
	// CheckInterval is the longest time a request relies on the key cache
	// without a check of the keys version: the revocation delay. Default
	// DefaultCheckInterval.
	CheckInterval time.Duration
	// MissInterval is the least time between two checks caused by unknown
	// keys. Default DefaultMissInterval.
	MissInterval time.Duration
	// RefreshInterval is the age after which a check reloads the keys even
	// though the keys version has not changed. Default
	// DefaultRefreshInterval.
	RefreshInterval time.Duration
	// Now returns the current time; tests set it. Default time.Now.
	Now func() time.Time
	// Logger receives check failures. Default slog.Default().
	Logger *slog.Logger
	// Shared, when set, enforces the rate limits across processes (Redis).
	// While it fails, requests are limited in this process's memory, and
	// SharedFallbacks counts them. Default: in memory only.
	Shared SharedLimiter
}

// Authenticator checks API keys and applies per-key rate limits. It is safe
// for concurrent use.
type Authenticator struct {
	src     Source
	opts    Options
	limiter *limiter

	// sharedMu guards the state of the shared limiter.
	sharedMu sync.Mutex
	// sharedDownUntil is when the shared limiter is tried again after a
	// failure; zero while it works.
	sharedDownUntil time.Time
	sharedFallbacks atomic.Int64

	mu        sync.Mutex
	keys      map[[32]byte]store.APIKey // nil until the first successful load
	version   int64                     // the keys version read before keys was loaded
	loadedAt  time.Time                 // when the check that loaded keys started
	checkedAt time.Time                 // when the last successful check started
	tried     time.Time                 // when the last check started
	checkErr  error                     // the outcome of the last finished check
	checking  chan struct{}             // non-nil while a check runs; closed when it ends
	missAt    time.Time                 // when an unknown key last caused a check
}

// New returns an Authenticator reading keys from src.
func New(src Source, opts Options) *Authenticator {
	if opts.DefaultRateLimit <= 0 {
		opts.DefaultRateLimit = 100
	}
	if opts.CheckInterval <= 0 {
		opts.CheckInterval = DefaultCheckInterval
	}
	if opts.MissInterval <= 0 {
		opts.MissInterval = DefaultMissInterval
	}
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = DefaultRefreshInterval
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
		d := a.allow(r.Context(), key.ID, limit)
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

// allow decides on one request of the key with the given id and limit per
// minute: by the shared limiter when there is one and it works, else in
// this process's memory.
func (a *Authenticator) allow(ctx context.Context, id int64, limit int) Decision {
	now := a.opts.Now()
	if a.opts.Shared == nil {
		return a.limiter.allow(id, limit, now)
	}
	a.sharedMu.Lock()
	down := now.Before(a.sharedDownUntil)
	a.sharedMu.Unlock()
	if !down {
		d, err := a.opts.Shared.Allow(ctx, id, limit)
		a.sharedMu.Lock()
		wasDown := !a.sharedDownUntil.IsZero()
		if err == nil {
			a.sharedDownUntil = time.Time{}
		} else if ctx.Err() == nil {
			a.sharedDownUntil = now.Add(sharedRetryInterval)
		}
		a.sharedMu.Unlock()
		switch {
		case err == nil:
			if wasDown {
				a.opts.Logger.Info("the shared rate limiter works again; limits hold across instances")
			}
			return d
		case !wasDown && ctx.Err() == nil:
			a.opts.Logger.Warn("the shared rate limiter failed; limiting in this process's memory until it works again",
				"err", err, "retry", sharedRetryInterval)
		}
	}
	a.sharedFallbacks.Add(1)
	return a.limiter.allow(id, limit, now)
}

// KeysChanged checks the keys against the store at once and returns when
// done, for a server that learns of a change to the keys (an announcement
// of the database): the change takes effect without waiting for the next
// check.
func (a *Authenticator) KeysChanged(ctx context.Context) {
	// Only a check that starts after now can see the change: one that
	// started at the same instant (a coarse clock) may not.
	a.check(ctx, a.opts.Now().Add(time.Nanosecond), true)
}

// SharedFallbacks returns how many requests were rate-limited in this
// process's memory because the shared limiter failed.
func (a *Authenticator) SharedFallbacks() int64 { return a.sharedFallbacks.Load() }

// SharedLimiterUp reports whether the shared limiter worked at its last
// use; false without one.
func (a *Authenticator) SharedLimiterUp() bool {
	if a.opts.Shared == nil {
		return false
	}
	a.sharedMu.Lock()
	defer a.sharedMu.Unlock()
	return a.sharedDownUntil.IsZero()
}

// Authenticate returns the active key whose value is token. A malformed,
// unknown or revoked key is a derrors.Unauthorized error; when the keys
// cannot be loaded at all, the error is the store's (derrors.Unavailable
// when the database is down).
func (a *Authenticator) Authenticate(ctx context.Context, token string) (store.APIKey, error) {
	if !store.WellFormedAPIKey(token) {
		return store.APIKey{}, fmt.Errorf("%w: the %s header %s is not an API key: expected sg_ followed by 40 lowercase hexadecimal digits",
			derrors.Unauthorized, Header, respond.QuoteInput(token))
	}
	hash := store.HashAPIKey(token)
	now := a.opts.Now()
	interval := a.opts.CheckInterval
	// A check that started half an interval ago or later is recent enough
	// to rely on, so concurrent requests share one.
	recent := now.Add(-interval / 2)

	a.mu.Lock()
	age := now.Sub(a.checkedAt)
	due := (a.keys == nil || age >= interval) && !a.failedRecently(now)
	ahead := !due && age >= interval/2 && !a.failedRecently(now)
	// While checks fail, requests use the keys last loaded rather than
	// wait for another check that may hang on an unreachable database.
	wait := due && (a.keys == nil || a.checkErr == nil)
	a.mu.Unlock()
	if due || ahead {
		a.check(ctx, recent, wait)
	}

	a.mu.Lock()
	loaded, loadErr := a.keys != nil, a.checkErr
	key, found := a.keys[hash]
	miss := !found && loaded && now.Sub(a.missAt) >= a.opts.MissInterval && !a.failedRecently(now)
	if miss {
		a.missAt = now
	}
	a.mu.Unlock()
	if !loaded {
		if loadErr == nil {
			// The request ended while waiting for the first load.
			loadErr = fmt.Errorf("load API keys: %w: %w", derrors.Unavailable, context.Cause(ctx))
			if ctx.Err() == nil {
				loadErr = fmt.Errorf("load API keys: %w", derrors.Unavailable)
			}
		}
		return store.APIKey{}, loadErr
	}
	if miss {
		// Only a check that started after this request arrived can know a
		// key created a moment before.
		a.check(ctx, now, true)
		a.mu.Lock()
		key, found = a.keys[hash]
		a.mu.Unlock()
	}
	if !found {
		return store.APIKey{}, fmt.Errorf("%w: the API key %s… is unknown or revoked", derrors.Unauthorized, store.APIKeyPrefix(token))
	}
	return key, nil
}

// failedRecently reports whether the last check failed less than a check
// interval before now; until then no other is tried. a.mu is held.
func (a *Authenticator) failedRecently(now time.Time) bool {
	return a.checkErr != nil && now.Sub(a.tried) < a.opts.CheckInterval
}

// check makes sure that a check which started no earlier than since has
// ended, starting one when none has. With wait unset it starts the check,
// if needed, in the background and returns at once; with wait set it
// returns when the check has ended or ctx is done.
func (a *Authenticator) check(ctx context.Context, since time.Time, wait bool) {
	for {
		a.mu.Lock()
		if done := a.checking; done != nil {
			started := a.tried
			a.mu.Unlock()
			if !wait {
				return
			}
			select {
			case <-done:
			case <-ctx.Done():
				return
			}
			if !started.Before(since) {
				return
			}
			continue
		}
		if !a.tried.Before(since) {
			a.mu.Unlock()
			return
		}
		done := make(chan struct{})
		a.checking = done
		a.tried = a.opts.Now()
		start := a.tried
		a.mu.Unlock()
		// The check outlives a cancelled request so that waiting requests
		// still get its result.
		ctx := context.WithoutCancel(ctx)
		if !wait {
			go a.run(ctx, start, done)
			return
		}
		a.run(ctx, start, done)
		return
	}
}

// run is one check, started at start: it reads the keys version and, when
// the version changed or the keys are older than the refresh interval,
// reloads the keys. A failed check keeps the previous keys.
func (a *Authenticator) run(ctx context.Context, start time.Time, done chan struct{}) {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	// The version is read before the keys, so keys loaded after reading
	// version v are at least as new as v, and a later change shows as a
	// new version.
	version, err := a.src.APIKeysVersion(ctx)
	a.mu.Lock()
	reload := err == nil && (a.keys == nil || version != a.version || start.Sub(a.loadedAt) >= a.opts.RefreshInterval)
	a.mu.Unlock()
	var keys map[[32]byte]store.APIKey
	if reload {
		keys, err = a.src.ActiveAPIKeys(ctx)
	}
	if err != nil {
		a.opts.Logger.WarnContext(ctx, "check API keys", "error", err)
	}

	a.mu.Lock()
	a.checkErr = err
	if err == nil {
		a.checkedAt = start
		if reload {
			if keys == nil {
				keys = map[[32]byte]store.APIKey{}
			}
			a.keys, a.version, a.loadedAt = keys, version, start
		}
	}
	a.checking = nil
	a.mu.Unlock()
	close(done)
}

func ceilSeconds(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	return int(math.Ceil(d.Seconds()))
}
