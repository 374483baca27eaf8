// Package redistest runs a real Redis server (Debian's redis-server) for
// tests, on a Unix socket of the test's own, without persistence.
package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server process of one test.
type Server struct {
	t      testing.TB
	socket string
	cmd    *exec.Cmd
	done   chan struct{}
}

// Start starts a Redis server that the test's cleanup stops. It skips the
// test when redis-server is not installed (Debian: apt-get install
// redis-server; `make test` installs it).
func Start(t testing.TB) *Server {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
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

// Stop kills the server (SIGKILL, as a crash would) and waits for it; the
// socket then refuses connections. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
	os.Remove(s.socket)
}

// Restart starts the stopped server again on the same socket, empty.
func (s *Server) Restart() {
	s.t.Helper()
	if s.cmd != nil {
		s.t.Fatal("redistest: Restart of a running server")
	}
	s.start()
}

func (s *Server) start() {
	s.t.Helper()
	s.cmd = exec.Command("redis-server", "--port", "0", "--unixsocket", s.socket, "--unixsocketperm", "700",
		"--save", "", "--appendonly", "no", "--loglevel", "warning")
	// Its output (start-up warnings about the kernel's settings) is left
	// out of the test's.
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("redistest: start redis-server: %v", err)
	}
	s.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(s.cmd, s.done)
	client := redis.NewClient(&redis.Options{Network: "unix", Addr: s.socket})
	defer client.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := client.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		select {
		case <-s.done:
			s.t.Fatalf("redistest: redis-server exited at start")
		default:
		}
		if time.Now().After(deadline) {
			s.t.Fatal(fmt.Errorf("redistest: redis-server did not answer within 30 s: %w", err))
		}
		time.Sleep(10 * time.Millisecond)
	}
}
