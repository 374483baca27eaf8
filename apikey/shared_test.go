package apikey

import (
	"net/http"
	"testing"

	"github.com/stakegraph/stakegraph/internal/redistest"
)

// sharedFixture returns two Authenticators on one key store that share
// their rate limits through the Redis server redis, each with a client of
// its own, as two instances of the API would.
func sharedFixture(t *testing.T, redis *redistest.Server) (*fixture, *fixture) {
	t.Helper()
	f := newFixture(t, Options{})
	second := *f
	for _, x := range []*fixture{f, &second} {
		client, err := NewRedisClient(redis.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close() })
		x.auth = New(f.src, Options{Now: f.clock.Now, Shared: NewRedisLimiter(client)})
		x.h = x.auth.Middleware(echoIdentity)
	}
	return f, &second
}

func TestSharedRateLimitHoldsAcrossInstances(t *testing.T) {
	a, b := sharedFixture(t, redistest.Start(t))
	three := 3
	limited := a.createKey(t, "limited", &three)
	other := a.createKey(t, "other", nil)

	ok, remaining := 0, []string{}
	for i := 0; i < 8; i++ {
		f := []*fixture{a, b}[i%2]
		w := f.get("X-API-Token", limited)
		switch w.Code {
		case http.StatusOK:
			ok++
			remaining = append(remaining, w.Header().Get("X-RateLimit-Remaining"))
		case http.StatusTooManyRequests:
			wantError(t, w, http.StatusTooManyRequests, "rate_limit_exceeded")
			h := w.Header()
			if h.Get("Retry-After") == "" || h.Get("X-RateLimit-Remaining") != "0" || h.Get("X-RateLimit-Limit") != "3" {
				t.Errorf("429 headers: Retry-After %q remaining %q limit %q", h.Get("Retry-After"), h.Get("X-RateLimit-Remaining"), h.Get("X-RateLimit-Limit"))
			}
		default:
			t.Fatalf("request %d: %d %s", i+1, w.Code, w.Body)
		}
	}
	// One limit for both instances: three successes, not three each.
	if ok != 3 || len(remaining) != 3 || remaining[0] != "2" || remaining[1] != "1" || remaining[2] != "0" {
		t.Errorf("%d successes with X-RateLimit-Remaining %v across two instances; want 3 with 2, 1, 0", ok, remaining)
	}
	if w := b.get("X-API-Token", other); w.Code != http.StatusOK {
		t.Errorf("another key is limited too: %d", w.Code)
	}
	for _, f := range []*fixture{a, b} {
		if !f.auth.SharedLimiterUp() || f.auth.SharedFallbacks() != 0 {
			t.Errorf("shared limiter up %v, fallbacks %d; want up and none", f.auth.SharedLimiterUp(), f.auth.SharedFallbacks())
		}
	}
}

func TestSharedRateLimitFallsBackWhileRedisIsDown(t *testing.T) {
	redis := redistest.Start(t)
	a, _ := sharedFixture(t, redis)
	two := 2
	key := a.createKey(t, "limited", &two)
	if w := a.get("X-API-Token", key); w.Code != http.StatusOK {
		t.Fatalf("with Redis up: %d", w.Code)
	}

	// Redis goes down: requests are still served, limited in memory.
	redis.Stop()
	for i := 0; i < 2; i++ {
		if w := a.get("X-API-Token", key); w.Code != http.StatusOK {
			t.Fatalf("request %d with Redis down: %d %s", i+1, w.Code, w.Body)
		}
	}
	wantError(t, a.get("X-API-Token", key), http.StatusTooManyRequests, "rate_limit_exceeded")
	if a.auth.SharedLimiterUp() || a.auth.SharedFallbacks() != 3 {
		t.Errorf("with Redis down: shared limiter up %v, fallbacks %d; want down and 3", a.auth.SharedLimiterUp(), a.auth.SharedFallbacks())
	}

	// Redis is back (empty): once the retry interval has passed, the
	// shared limiter is used again.
	redis.Restart()
	a.clock.Advance(sharedRetryInterval)
	if w := a.get("X-API-Token", key); w.Code != http.StatusOK || w.Header().Get("X-RateLimit-Remaining") != "1" {
		t.Errorf("with Redis back: %d, remaining %q; want 200 and 1 (a fresh shared count)", w.Code, w.Header().Get("X-RateLimit-Remaining"))
	}
	if !a.auth.SharedLimiterUp() || a.auth.SharedFallbacks() != 3 {
		t.Errorf("with Redis back: shared limiter up %v, fallbacks %d; want up and still 3", a.auth.SharedLimiterUp(), a.auth.SharedFallbacks())
	}
}
