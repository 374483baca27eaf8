package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Server is a `stakegraph serve` process started by the bench.
type Server struct {
	// URL is the API's base URL, AdminURL the admin listener's.
	URL, AdminURL string

	cmd  *exec.Cmd
	done chan error
}

// ServerConfig says how to start a server.
type ServerConfig struct {
	// Binary is the stakegraph executable.
	Binary string
	// Args are the arguments after "serve", such as the listen addresses.
	Args []string
	// Env is added to the process's environment.
	Env []string
	// Addr and AdminAddr are the API and admin listen addresses, which
	// Args must set (--addr, --admin-addr).
	Addr, AdminAddr string
	// Log receives the server's standard error (its log).
	Log io.Writer
}

// StartServer starts `stakegraph serve` and waits until it answers
// /readyz.
func StartServer(ctx context.Context, cfg ServerConfig) (*Server, error) {
	cmd := exec.Command(cfg.Binary, append([]string{"serve"}, cfg.Args...)...)
	cmd.Env = append(os.Environ(), cfg.Env...)
	cmd.Stdout = cfg.Log
	cmd.Stderr = cfg.Log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s serve: %w", cfg.Binary, err)
	}
	s := &Server{
		URL:      "http://" + cfg.Addr,
		AdminURL: "http://" + cfg.AdminAddr,
		cmd:      cmd,
		done:     make(chan error, 1),
	}
	go func() { s.done <- cmd.Wait() }()
	if err := waitReady(ctx, "stakegraph serve", s.done, 2*time.Minute, func() bool {
		ok, _ := probe(ctx, s.URL+"/readyz")
		return ok
	}); err != nil {
		if !errors.Is(err, errExitedEarly) {
			s.Stop()
		}
		return nil, err
	}
	return s, nil
}

// errExitedEarly is the error of waitReady when the process ended first.
var errExitedEarly = errors.New("exited before it was ready")

// waitReady polls ready every 200 ms until it reports true, and fails when
// the process named name ends first (done, which then holds its exit),
// after within, or when ctx ends.
func waitReady(ctx context.Context, name string, done <-chan error, within time.Duration, ready func() bool) error {
	deadline := time.Now().Add(within)
	for {
		select {
		case err := <-done:
			return fmt.Errorf("%s %w: %v", name, errExitedEarly, err)
		default:
		}
		if ready() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not become ready within %s", name, within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// probe reports whether GET url answers 200.
func probe(ctx context.Context, url string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode == http.StatusOK, nil
}

// PID returns the server's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Stop asks the server to shut down (SIGTERM) and waits for it, killing it
// after 30 seconds.
func (s *Server) Stop() error {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signaled() {
			return nil
		}
		return err
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
		return errors.New("stakegraph serve did not stop within 30 s; killed")
	}
}

// Memory is a process's resident set size now and at its peak, in bytes.
type Memory struct {
	RSS, Peak int64
}

// ReadMemory reads the memory of process pid from /proc (Linux only).
func ReadMemory(pid int) (Memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	defer f.Close()
	var m Memory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		fields := strings.Fields(value) // "123456 kB"
		if len(fields) != 2 || fields[1] != "kB" {
			return Memory{}, fmt.Errorf("/proc/%d/status: unexpected %s line %q", pid, name, sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return Memory{}, err
		}
		if name == "VmRSS" {
			m.RSS = kb << 10
		} else {
			m.Peak = kb << 10
		}
	}
	return m, sc.Err()
}

// MemorySampler records the largest resident set size of a process seen by
// samples taken at a fixed interval, and every sample.
type MemorySampler struct {
	pid      int
	interval time.Duration
	stop     chan struct{}
	done     chan struct{}

	max     int64
	samples []MemorySample
}

// MemorySample is one reading of a MemorySampler.
type MemorySample struct {
	At  time.Duration // since the sampler started
	RSS int64
}

// SampleMemory starts sampling the memory of pid every interval until Stop.
func SampleMemory(pid int, interval time.Duration) *MemorySampler {
	m := &MemorySampler{pid: pid, interval: interval, stop: make(chan struct{}), done: make(chan struct{})}
	start := time.Now()
	go func() {
		defer close(m.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if mem, err := ReadMemory(pid); err == nil {
				m.max = max(m.max, mem.RSS)
				m.samples = append(m.samples, MemorySample{At: time.Since(start), RSS: mem.RSS})
			}
			select {
			case <-m.stop:
				return
			case <-t.C:
			}
		}
	}()
	return m
}

// Stop ends the sampling and returns the largest RSS seen and the samples.
func (m *MemorySampler) Stop() (int64, []MemorySample) {
	close(m.stop)
	<-m.done
	return m.max, m.samples
}

// ScrapeCounter reads the value of a counter or gauge without labels from
// a Prometheus text-format endpoint.
func ScrapeCounter(ctx context.Context, url, name string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, res.Status)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(rest), 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s has no metric %s", url, name)
}
