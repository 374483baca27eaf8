package server

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/stakegraph/stakegraph/internal/respond"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// limitsServer serves, over real HTTP, routes that read the avs table
// (/avs once, /fanout eight times at once) and the stakers table (/other),
// and one that never answers (/silent), behind the server's middleware.
func limitsServer(t *testing.T, db *store.DB, cfg Config) string {
	t.Helper()
	answer := func(w http.ResponseWriter, r *http.Request, err error) {
		if err != nil {
			respond.Error(w, r, err)
			return
		}
		respond.JSON(w, r, http.StatusOK, map[string]string{"status": "ok"})
	}
	addr := []string{"0x0000000000000000000000000000000000000001"}
	mount := func(r chi.Router) {
		r.Get("/avs", func(w http.ResponseWriter, r *http.Request) {
			_, err := db.AVSByAddresses(r.Context(), addr)
			answer(w, r, err)
		})
		r.Get("/other", func(w http.ResponseWriter, r *http.Request) {
			_, err := db.StakersByAddresses(r.Context(), addr)
			answer(w, r, err)
		})
		r.Get("/fanout", func(w http.ResponseWriter, r *http.Request) {
			var wg sync.WaitGroup
			errs := make([]error, 8)
			for i := range errs {
				wg.Go(func() { _, errs[i] = db.AVSByAddresses(r.Context(), addr) })
			}
			wg.Wait()
			answer(w, r, errors.Join(errs...))
		})
		r.Get("/silent", func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		})
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	s := New(cfg, Deps{DB: db, Mounts: []func(chi.Router){mount}})
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv.URL
}

// timedGet gets url and returns the status, the decoded error body (if
// any) and how long the answer took.
func timedGet(t *testing.T, url string) (int, respond.ErrorDetail, time.Duration) {
	t.Helper()
	start := time.Now()
	res, err := http.Get(url)
	if err != nil {
		t.Errorf("GET %s: %v", url, err)
		return 0, respond.ErrorDetail{}, time.Since(start)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	elapsed := time.Since(start)
	var e respond.ErrorBody
	if res.StatusCode != http.StatusOK {
		if err := json.Unmarshal(body, &e); err != nil {
			t.Errorf("GET %s: %d with a body that is not the JSON error: %q", url, res.StatusCode, body)
		}
	}
	return res.StatusCode, e.Error, elapsed
}

// TestRequestDeadline checks that a request blocked on a locked table is
// answered 504 gateway_timeout once its deadline passes, while a request
// reading another table is served at once, and that a handler that never
// answers gets the 504 from the middleware.
func TestRequestDeadline(t *testing.T) {
	const deadline = 300 * time.Millisecond
	db := storetest.New(t)
	base := limitsServer(t, db, Config{RequestTimeout: deadline})
	storetest.LockTables(t, db, "avs")

	var wg sync.WaitGroup
	wg.Go(func() {
		time.Sleep(50 * time.Millisecond) // while /avs waits for the lock
		if status, e, elapsed := timedGet(t, base+"/other"); status != http.StatusOK {
			t.Errorf("GET /other beside a blocked request: %d %+v after %v; want 200", status, e, elapsed)
		}
	})
	for _, path := range []string{"/avs", "/silent"} {
		status, e, elapsed := timedGet(t, base+path)
		if status != http.StatusGatewayTimeout || e.Code != "gateway_timeout" || e.Message != respond.TimeoutMessage {
			t.Errorf("GET %s past the deadline: %d %+v; want 504 gateway_timeout", path, status, e)
		}
		// The 504 shows the deadline fired (the table stays locked and
		// /silent never answers); the answer cannot come before it.
		if elapsed < deadline {
			t.Errorf("GET %s answered after %v, before the %v deadline", path, elapsed, deadline)
		}
	}
	wg.Wait()
	if n := storetest.LockWaiters(t, db); n != 0 {
		t.Errorf("%d statements of timed-out requests still wait on the server", n)
	}
}

// TestConnsPerRequest checks that the middleware gives each request its
// connection limit: a request running eight queries at once on a locked
// table holds no more than two connections, and completes once the lock
// is released.
func TestConnsPerRequest(t *testing.T) {
	db := storetest.New(t)
	base := limitsServer(t, db, Config{RequestTimeout: 20 * time.Second, ConnsPerRequest: 2})
	release := storetest.LockTables(t, db, "avs")

	done := make(chan int, 1)
	go func() {
		status, e, _ := timedGet(t, base+"/fanout")
		if status != http.StatusOK {
			t.Errorf("GET /fanout: %d %+v", status, e)
		}
		done <- status
	}()
	reached := false
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end) && !reached; time.Sleep(20 * time.Millisecond) {
		reached = storetest.LockWaiters(t, db) >= 2
	}
	if !reached {
		t.Fatalf("the request's queries never reached the lock")
	}
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if n := storetest.LockWaiters(t, db); n > 2 {
			t.Fatalf("one request holds %d connections at once; want at most 2", n)
		}
	}
	release()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("GET /fanout did not finish after the lock was released")
	}
}
