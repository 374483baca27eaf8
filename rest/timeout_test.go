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

// TestStatementTimeout checks that a route whose statement passes the
// statement timeout (blocked on a locked table) answers 504 with the
// gateway_timeout error body that openapi.json documents, and that another
// route is served meanwhile.
func TestStatementTimeout(t *testing.T) {
	ctx := context.Background()
	db := storetest.New(t)
	if err := db.EnsureNetwork(ctx, "mainnet"); err != nil {
		t.Fatal(err)
	}
	key, err := db.CreateAPIKey(ctx, "timeout", nil)
	if err != nil {
		t.Fatal(err)
	}
	api, err := db.NewPool(ctx, store.PoolConfig{MaxOpenConns: 4, MaxIdleConns: 4, ConnMaxLifetime: time.Hour, StatementTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	exec := graph.NewExecutor(api, graph.Options{Now: func() time.Time { return demoNow }})
	auth := apikey.New(api, apikey.Options{})
	srv := httptest.NewServer(NewHandler(Config{Executor: exec, Authenticate: auth.Middleware, Version: "test"}))
	t.Cleanup(srv.Close)
	c := &client{db: api, srv: srv, key: key}
	c.get(t, "/withdrawals") // loads the key cache before the lock

	storetest.LockTables(t, db, "avs")
	start := time.Now()
	c.fails(t, "/avs", http.StatusGatewayTimeout, "gateway_timeout")
	// The 504 shows the statement timeout fired: the lock is held until
	// the test ends. It cannot have fired before 200 ms.
	if elapsed := time.Since(start); elapsed < 200*time.Millisecond {
		t.Errorf("GET /avs on a locked table answered after %v, before the 200 ms statement timeout", elapsed)
	}
	if r := c.get(t, "/withdrawals"); r.Status != http.StatusOK {
		t.Errorf("GET /withdrawals beside the locked table: %d %s", r.Status, r.Body)
	}
}
