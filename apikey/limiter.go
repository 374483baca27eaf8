package apikey

import (
	"sync"
	"time"
)

// window is the period a rate limit is stated over.
const window = time.Minute

// limiter is a per-key rate limiter using the generic cell rate algorithm:
// a key with a limit of n requests per minute may spend n requests at once
// and then one every minute/n. It keeps one timestamp per key.
type limiter struct {
	mu sync.Mutex
	// tat is each key's theoretical arrival time: when its bucket will be
	// full again if no more requests come.
	tat map[int64]time.Time
}

func newLimiter() *limiter { return &limiter{tat: make(map[int64]time.Time)} }

// Decision is the outcome of one request against a key's limit.
type Decision struct {
	Allowed   bool
	Limit     int           // requests per minute
	Remaining int           // requests that could be made right now
	Reset     time.Duration // until the full limit is available again
	// RetryAfter is how long to wait before the next request is allowed;
	// zero when Allowed.
	RetryAfter time.Duration
}

// allow records one request of the key with the given id and limit per
// minute at time now, unless the key is over its limit.
func (l *limiter) allow(id int64, limit int, now time.Time) Decision {
	if limit < 1 {
		limit = 1
	}
	interval := window / time.Duration(limit)
	l.mu.Lock()
	defer l.mu.Unlock()

	tat := l.tat[id]
	if tat.Before(now) {
		tat = now
	}
	newTAT := tat.Add(interval)
	// The bucket holds at most one window's worth of requests.
	if over := newTAT.Sub(now) - window; over > 0 {
		return Decision{
			Limit:      limit,
			Remaining:  0,
			Reset:      tat.Sub(now),
			RetryAfter: over,
		}
	}
	l.tat[id] = newTAT
	return Decision{
		Allowed:   true,
		Limit:     limit,
		Remaining: int((window - newTAT.Sub(now)) / interval),
		Reset:     newTAT.Sub(now),
	}
}
