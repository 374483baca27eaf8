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

// waitFor yields until cond holds; the test's own deadline bounds it.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		if t.Context().Err() != nil {
			t.Fatal("condition never held")
		}
		runtime.Gosched()
	}
}

// TestRunQueueOrder checks that a queue of one runs one request at a time,
// the waiting ones in the order they came.
func TestRunQueueOrder(t *testing.T) {
	q := NewRunQueue(1)
	var (
		mu      sync.Mutex
		started []string
		running int
		most    int
	)
	release := map[string]chan struct{}{}
	for _, id := range []string{"a", "b", "c", "d"} {
		release[id] = make(chan struct{})
	}
	h := q.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		mu.Lock()
		started = append(started, id)
		running++
		most = max(most, running)
		mu.Unlock()
		<-release[id]
		mu.Lock()
		running--
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	var wg sync.WaitGroup
	codes := make([]int, 4)
	for i, id := range []string{"a", "b", "c", "d"} {
		wg.Go(func() {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/x?id="+id, nil))
			codes[i] = rec.Code
		})
		// Each request is running or waiting before the next comes.
		waitFor(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return int64(len(started))+q.Waiting() == int64(i+1)
		})
	}
	for _, id := range []string{"a", "b", "c", "d"} {
		waitFor(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(started) > 0 && started[len(started)-1] == id
		})
		close(release[id])
	}
	wg.Wait()
	if got := started; len(got) != 4 || got[0] != "a" || got[1] != "b" || got[2] != "c" || got[3] != "d" {
		t.Errorf("requests ran in the order %v, want a b c d", got)
	}
	if most != 1 {
		t.Errorf("%d requests ran at once, want 1", most)
	}
	for i, c := range codes {
		if c != http.StatusNoContent {
			t.Errorf("request %d: status %d", i, c)
		}
	}
	if n := q.Waiting(); n != 0 {
		t.Errorf("%d requests still counted as waiting", n)
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
