package rest

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/apikey"
	"github.com/stakegraph/stakegraph/graph"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// dbProxy forwards TCP connections to a PostgreSQL server until it is cut,
// which breaks every open connection and refuses new ones, as a database
// outage would.
type dbProxy struct {
	ln      net.Listener
	network string // of the server: "tcp" or "unix"
	addr    string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool
}

// newDBProxy starts a proxy in front of the server of dbURL and returns it
// with the URL of the same database through the proxy.
func newDBProxy(t *testing.T, dbURL string) (*dbProxy, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	p := &dbProxy{network: "tcp", addr: u.Host, conns: map[net.Conn]bool{}}
	q := u.Query()
	if host := q.Get("host"); u.Host == "" && host != "" {
		p.network, p.addr = "unix", filepath.Join(host, ".s.PGSQL."+q.Get("port"))
	}
	if p.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.ln.Close()
		p.cut(true)
	})
	go p.serve()
	q.Del("host")
	q.Del("port")
	u.Host = p.ln.Addr().String()
	u.RawQuery = q.Encode()
	return p, u.String()
}

func (p *dbProxy) serve() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			client.Close()
			continue
		}
		server, err := net.Dial(p.network, p.addr)
		if err != nil {
			client.Close()
			continue
		}
		p.mu.Lock()
		p.conns[client], p.conns[server] = true, true
		p.mu.Unlock()
		go func() { io.Copy(server, client); server.Close() }()
		go func() { io.Copy(client, server); client.Close() }()
	}
}

// cut sets whether the database is unreachable, breaking open connections
// when it becomes so.
func (p *dbProxy) cut(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
}

// TestDatabaseOutage checks that requests made while the database is down
// are answered 503 with the error body, and that the server answers again
// once the database is back.
func TestDatabaseOutage(t *testing.T) {
	direct := storetest.NewURL(t)
	proxy, proxied := newDBProxy(t, direct)
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

	proxy.cut(true)
	for _, target := range targets {
		c.fails(t, target, http.StatusServiceUnavailable, "internal_server_error")
	}
	// Public routes do not need the database.
	if r := c.getWithKey(t, "/health", ""); r.Status != http.StatusOK {
		t.Errorf("/health during the outage: %d", r.Status)
	}

	proxy.cut(false)
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
