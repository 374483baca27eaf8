// Package redistest runs a real Redis server (Debian's redis-server) for
// tests, on a Unix socket of the test's own, without persistence.
package redistest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/internal/redisproc"
)

// Server is a redis-server process of one test.
type Server struct {
	t      testing.TB
	socket string
	proc   *redisproc.Process // nil while stopped
}

// Start starts a Redis server that the test's cleanup stops. It skips the
// test when redis-server is not installed (Debian: apt-get install
// redis-server; `make test` installs it).
func Start(t testing.TB) *Server {
	t.Helper()
	if !redisproc.Installed() {
		t.Skip("no redis-server found (Debian: apt-get install redis-server)")
	}
	// A short directory: a Unix socket path is limited to about 100 bytes.
	dir, err := os.MkdirTemp("", "redis")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	s := &Server{t: t, socket: filepath.Join(dir, "redis.sock")}
	s.start()
	t.Cleanup(s.Stop)
	return s
}

// URL returns the server's URL for a Redis client (unix://).
func (s *Server) URL() string { return "unix://" + s.socket }

// Stop kills the server (SIGKILL, as a crash would); the socket then
// refuses connections. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	if s.proc != nil {
		s.proc.Stop()
		s.proc = nil
	}
}

// Restart starts the stopped server again on the same socket, empty.
func (s *Server) Restart() {
	s.t.Helper()
	if s.proc != nil {
		s.t.Fatal("redistest: Restart of a running server")
	}
	s.start()
}

func (s *Server) start() {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	proc, err := redisproc.Start(ctx, s.socket)
	if err != nil {
		s.t.Fatalf("redistest: %v", err)
	}
	s.proc = proc
}
