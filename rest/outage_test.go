package rest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/apikey"
	"github.com/stakegraph/stakegraph/graph"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// TestDatabaseOutage checks that requests made while the database is down
// are answered 503 with the error body, and that the server answers again
// once the database is back.
func TestDatabaseOutage(t *testing.T) {
	direct := storetest.NewURL(t)
	proxy, proxied := storetest.NewDBProxy(t, direct)
	ctx := context.Background()
	db, err := store.Open(ctx, proxied, store.PoolConfig{MaxOpenConns: 4, MaxIdleConns: 4, ConnMaxLifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.EnsureNetwork(ctx, "mainnet"); err != nil {
		t.Fatal(err)
	}
	key, err := db.CreateAPIKey(ctx, "outage", nil)
	if err != nil {
		t.Fatal(err)
	}
	exec := graph.NewExecutor(db, graph.Options{Now: func() time.Time { return demoNow }})
	auth := apikey.New(db, apikey.Options{})
	srv := httptest.NewServer(NewHandler(Config{Executor: exec, Authenticate: auth.Middleware, Version: "test"}))
	t.Cleanup(srv.Close)
	c := &client{db: db, srv: srv, key: key}

	targets := []string{"/withdrawals", "/avs", "/metrics/total-stakers", "/stakers/0x000000000000000000000000000000000000dead/events/delegation"}
	for _, target := range targets {
		if r := c.get(t, target); r.Status != http.StatusOK {
			t.Fatalf("GET %s before the outage: %d %s", target, r.Status, r.Body)
		}
	}

	proxy.Cut(true)
	for _, target := range targets {
		c.fails(t, target, http.StatusServiceUnavailable, "internal_server_error")
	}
	// Public routes do not need the database.
	if r := c.getWithKey(t, "/health", ""); r.Status != http.StatusOK {
		t.Errorf("/health during the outage: %d", r.Status)
	}

	proxy.Cut(false)
	deadline := time.Now().Add(10 * time.Second)
	for _, target := range targets {
		for {
			r := c.get(t, target)
			if r.Status == http.StatusOK {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET %s after the outage: %d %s", target, r.Status, r.Body)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}
