package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/internal/respond"
)

// waitFor yields until cond holds. It fails the test if cond still does
// not hold after a minute, a guard against a hang, not a measure of speed.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	give := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(give) {
			t.Fatal("condition never held")
		}
		runtime.Gosched()
	}
}

// TestRunQueueBound checks that a queue of two runs at most two requests
// at once, counts the others as waiting, and runs each of them when a
// turn frees.
func TestRunQueueBound(t *testing.T) {
	q := NewRunQueue(2)
	var (
		mu      sync.Mutex
		running int
		most    int
		ran     int
	)
	release := make(chan struct{})
	h := q.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		<-release
		mu.Lock()
		running--
		ran++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	const n = 5
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Go(func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/x", nil))
			codes[i] = rec.Code
		})
	}
	isRunning := func(k int) func() bool {
		return func() bool {
			mu.Lock()
			defer mu.Unlock()
			return running == k
		}
	}
	waitFor(t, func() bool { return isRunning(2)() && q.Waiting() == n-2 })
	for done := 1; done <= n; done++ {
		release <- struct{}{}
		waitFor(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return ran == done
		})
		waitFor(t, isRunning(min(2, n-done)))
		if w := q.Waiting(); w != int64(max(n-done-2, 0)) {
			t.Errorf("after %d finished, %d waiting; want %d", done, w, max(n-done-2, 0))
		}
	}
	wg.Wait()
	if most != 2 {
		t.Errorf("%d requests ran at once, want 2", most)
	}
	for i, c := range codes {
		if c != http.StatusNoContent {
			t.Errorf("request %d: status %d", i, c)
		}
	}
}

// TestRunQueueDeadline checks that a request whose deadline passes while
// it waits gets the API's JSON 504, and that one whose client leaves is
// dropped without an answer; neither runs the handler.
func TestRunQueueDeadline(t *testing.T) {
	q := NewRunQueue(1)
	hold := make(chan struct{})
	var ran sync.WaitGroup
	ran.Add(1)
	calls := 0
	h := q.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		ran.Done()
		<-hold
	}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/first", nil))
	}()
	ran.Wait()

	for _, tc := range []struct {
		name   string
		cancel func(ctx context.Context) (context.Context, context.CancelFunc)
		status int
	}{
		{"deadline", func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithDeadline(ctx, time.Unix(1, 0))
		}, http.StatusGatewayTimeout},
		{"client left", context.WithCancel, 0},
	} {
		ctx, cancel := tc.cancel(context.Background())
		rec := httptest.NewRecorder()
		served := make(chan struct{})
		go func() {
			defer close(served)
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/late", nil).WithContext(ctx))
		}()
		if tc.status == 0 {
			waitFor(t, func() bool { return q.Waiting() == 1 })
		}
		cancel()
		<-served
		if tc.status == 0 {
			if rec.Body.Len() != 0 {
				t.Errorf("%s: answered %d %q, want no answer", tc.name, rec.Code, rec.Body.String())
			}
			continue
		}
		var body respond.ErrorBody
		if rec.Code != tc.status || json.Unmarshal(rec.Body.Bytes(), &body) != nil || body.Error.Code != "gateway_timeout" {
			t.Errorf("%s: answered %d %q, want %d with code gateway_timeout", tc.name, rec.Code, rec.Body.String(), tc.status)
		}
	}
	close(hold)
	<-done
	if calls != 1 {
		t.Errorf("the handler ran %d times, want once", calls)
	}
}

// TestRunQueueNil checks that no queue runs every request at once.
func TestRunQueueNil(t *testing.T) {
	q := NewRunQueue(0)
	if q != nil {
		t.Fatal("NewRunQueue(0) made a queue")
	}
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	if h := q.Middleware(next); h == nil {
		t.Fatal("nil queue returned no handler")
	}
	if q.Waiting() != 0 {
		t.Error("nil queue has waiting requests")
	}
}
