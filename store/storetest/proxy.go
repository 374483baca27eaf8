package storetest

import (
	"io"
	"net"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
)

// DBProxy forwards TCP connections to a PostgreSQL server until it is cut,
// which breaks every open connection and refuses new ones, as a database
// outage would.
type DBProxy struct {
	ln      net.Listener
	network string // of the server: "tcp" or "unix"
	addr    string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]bool
}

// NewDBProxy starts a proxy in front of the server of dbURL and returns it
// with the URL of the same database through the proxy.
func NewDBProxy(t testing.TB, dbURL string) (*DBProxy, string) {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	p := &DBProxy{network: "tcp", addr: u.Host, conns: map[net.Conn]bool{}}
	q := u.Query()
	if host := q.Get("host"); u.Host == "" && host != "" {
		p.network, p.addr = "unix", filepath.Join(host, ".s.PGSQL."+q.Get("port"))
	}
	if p.ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.ln.Close()
		p.Cut(true)
	})
	go p.serve()
	q.Del("host")
	q.Del("port")
	u.Host = p.ln.Addr().String()
	u.RawQuery = q.Encode()
	return p, u.String()
}

func (p *DBProxy) serve() {
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

// Cut sets whether the database is unreachable, breaking open connections
// when it becomes so.
func (p *DBProxy) Cut(down bool) {
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
