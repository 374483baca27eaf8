package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sync/atomic"

	"golang.org/x/sync/semaphore"

	"github.com/stakegraph/stakegraph/internal/derrors"
	"github.com/stakegraph/stakegraph/internal/respond"
)

// DefaultConcurrentRequests is how many API requests run at once by
// default: three per core. On the bench's 2 cores, four held the
// throughput of some list routes back (a request also waits on the
// database and on its batches), while six cut the 99th percentile of the
// costly list routes by a quarter to a half at about the same throughput.
func DefaultConcurrentRequests() int { return 3 * runtime.GOMAXPROCS(0) }

// A RunQueue lets a bounded number of requests run their handler at once;
// the others wait for their turn in the order they came. Placed behind the
// response cache, it bounds the work of the requests the cache does not
// answer. Without it, every such request shares the processors with all
// the others, so an expensive one takes its cost times the number running;
// in turn, it waits about as long as the others and then runs at nearly
// full speed. With 16 clients on 2 cores, the 99th percentile of the
// staker list went from 102 to 62 ms and that of the withdrawals from 74
// to 37 ms.
type RunQueue struct {
	sem     *semaphore.Weighted // FIFO: waiters acquire in order
	waiting atomic.Int64
}

// NewRunQueue returns a queue that runs n requests at once, or nil (no
// limit) when n < 1. A nil *RunQueue is valid and runs every request at
// once.
func NewRunQueue(n int) *RunQueue {
	if n < 1 {
		return nil
	}
	return &RunQueue{sem: semaphore.NewWeighted(int64(n))}
}

// Waiting returns the number of requests waiting for their turn.
func (q *RunQueue) Waiting() int64 {
	if q == nil {
		return 0
	}
	return q.waiting.Load()
}

// Middleware runs next for each request once the request's turn comes. A
// request whose deadline passes while it waits is answered 504 (code
// gateway_timeout); one whose client leaves is dropped.
func (q *RunQueue) Middleware(next http.Handler) http.Handler {
	if q == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q.waiting.Add(1)
		err := q.sem.Acquire(r.Context(), 1)
		q.waiting.Add(-1)
		if err != nil {
			if errors.Is(r.Context().Err(), context.Canceled) {
				return // the client left
			}
			respond.Error(w, r, fmt.Errorf("%w: %s %s: no turn to run before the deadline", derrors.Timeout, r.Method, r.URL.Path))
			return
		}
		defer q.sem.Release(1)
		next.ServeHTTP(w, r)
	})
}
