// Package redisproc runs a redis-server process of this machine (Debian's
// redis-server) on a Unix socket, without persistence, for the tests and
// the benchmark's local cluster.
package redisproc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/redis/go-redis/v9"
)

// Process is a running redis-server.
type Process struct {
	socket string
	cmd    *exec.Cmd
	done   chan struct{}
}

// Installed reports whether redis-server is on the PATH.
func Installed() bool {
	_, err := exec.LookPath("redis-server")
	return err == nil
}

// Start starts redis-server listening on the Unix socket at path (no TCP
// port) and waits, until ctx ends, for it to answer. Its output (start-up
// warnings about the kernel's settings) is discarded.
func Start(ctx context.Context, socket string) (*Process, error) {
	p := &Process{socket: socket, done: make(chan struct{})}
	p.cmd = exec.Command("redis-server", "--port", "0", "--unixsocket", socket, "--unixsocketperm", "700",
		"--save", "", "--appendonly", "no", "--loglevel", "warning")
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	client := redis.NewClient(&redis.Options{Network: "unix", Addr: socket})
	defer client.Close()
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		err := client.Ping(pctx).Err()
		cancel()
		if err == nil {
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("redis-server exited at start")
		case <-ctx.Done():
			p.Stop()
			return nil, fmt.Errorf("redis-server did not answer: %w", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// URL returns the URL of the server for a Redis client (unix://).
func (p *Process) URL() string { return "unix://" + p.socket }

// Stop kills the server (SIGKILL, as a crash would), waits for it and
// removes its socket.
func (p *Process) Stop() {
	_ = p.cmd.Process.Kill()
	<-p.done
	os.Remove(p.socket)
}
