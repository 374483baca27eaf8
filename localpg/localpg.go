// Package localpg runs a private PostgreSQL cluster in a directory of its
// own, with the PostgreSQL programs installed on the machine. The stakegraph
// command uses it when no DATABASE_URL is given, and the tests use it for a
// shared test server.
//
// A cluster directory holds:
//
//	lock             serialises starting and stopping across processes (flock)
//	users.lock       held shared by every process that uses the cluster
//	autostop         present while the last user's Close should stop the server
//	data/            the data directory
//	run/             the unix socket directory
//	log/postgres.log the server log
//
// Start reuses a cluster that already runs; the last user to Close a server
// that Start started stops it, unless KeepRunning says otherwise. The server answers on 127.0.0.1
// at the chosen port (unless the cluster is socket-only) and on a unix socket
// in run/. Its only role is the superuser "postgres", trusted without a
// password, so a cluster must never listen beyond the loopback interface.
//
// PostgreSQL refuses to run as root; when the process is root the programs
// run as the "postgres" OS user, which must be able to reach the directory.
package localpg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lib/pq"
)

// DefaultPort is the TCP port of a cluster whose Options leave Port zero.
const DefaultPort = 54329

// Superuser is the role Start's clusters are created with.
const Superuser = "postgres"

// startTimeout bounds how long the server may take to start or stop.
const startTimeout = 60 * time.Second

// Options configure Start.
type Options struct {
	// Dir is the cluster directory; it is created when missing.
	Dir string
	// Port is the TCP port on 127.0.0.1 (and the number in the unix socket's
	// name); zero means DefaultPort.
	Port int
	// SocketOnly makes the server listen on its unix socket only, so that
	// it cannot clash with anything else on the machine's TCP ports.
	SocketOnly bool
	// Fast turns durability off (fsync, synchronous commit, full-page
	// writes): a crash of the machine may corrupt the cluster. It also
	// turns JIT compilation off, which costs a test's large one-off
	// statements more than it saves. For test clusters.
	Fast bool
	// BinDir is the directory of the PostgreSQL programs; empty means
	// search PATH and the usual installation places.
	BinDir string
	// ReplicaOf, when set, makes a new cluster a streaming replica (a hot
	// standby, read-only) of the server at this connection URL: its data
	// directory is copied with pg_basebackup -R instead of made by initdb.
	// The primary must accept replication connections from this machine
	// (initdb's trust setup does, locally). It has no effect on a cluster
	// that exists.
	ReplicaOf string
	// Logger receives progress messages; nil discards them.
	Logger *slog.Logger
}

// Cluster is a running local PostgreSQL server.
type Cluster struct {
	dir         string
	dataDir     string
	socketDir   string
	port        int
	tcp         bool
	pid         int
	startedByUs bool
	runAs       *syscall.Credential
	logger      *slog.Logger

	mu    sync.Mutex
	users *os.File // shared lock on users.lock while the cluster is in use
}

// Start starts the cluster in opts.Dir, creating it first if needed, or
// attaches to it when it already runs. Concurrent calls from several
// processes are safe: one starts the server and the others reuse it.
// Call Close when done with it.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Dir == "" {
		return nil, errors.New("localpg: no cluster directory given")
	}
	if opts.Port == 0 {
		opts.Port = DefaultPort
	}
	if opts.Port < 1 || opts.Port > 65535 {
		return nil, fmt.Errorf("localpg: invalid port %d", opts.Port)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, fmt.Errorf("localpg: %w", err)
	}
	c := &Cluster{
		dir:       dir,
		dataDir:   filepath.Join(dir, "data"),
		socketDir: filepath.Join(dir, "run"),
		port:      opts.Port,
		tcp:       !opts.SocketOnly,
		logger:    logger,
	}
	if err := c.prepareDir(); err != nil {
		return nil, err
	}
	unlock, err := lockFile(ctx, filepath.Join(dir, "lock"), syscall.LOCK_EX)
	if err != nil {
		return nil, err
	}
	defer unlock()

	if err := c.startLocked(ctx, opts); err != nil {
		return nil, err
	}
	users, err := os.OpenFile(filepath.Join(dir, "users.lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("localpg: %w", err)
	}
	if err := syscall.Flock(int(users.Fd()), syscall.LOCK_SH); err != nil {
		users.Close()
		return nil, fmt.Errorf("localpg: lock %s: %w", users.Name(), err)
	}
	c.users = users
	return c, nil
}

// prepareDir creates the cluster directory and works out which OS user runs
// the server.
func (c *Cluster) prepareDir() error {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return fmt.Errorf("localpg: create cluster directory: %w", err)
	}
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup(Superuser)
	if err != nil {
		return errors.New("localpg: running as root needs a \"postgres\" OS user to run PostgreSQL as (install postgresql)")
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("localpg: bad uid/gid for user %s", Superuser)
	}
	c.runAs = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	// The directory is ours (root's); postgres only needs to pass through it.
	if err := os.Chmod(c.dir, 0o755); err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	return c.checkReachable()
}

// checkReachable reports an error when the postgres OS user cannot traverse
// every directory above the cluster, which initdb would report obscurely.
func (c *Cluster) checkReachable() error {
	for d := c.dir; ; d = filepath.Dir(d) {
		info, err := os.Stat(d)
		if err != nil {
			return fmt.Errorf("localpg: %w", err)
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		mode := info.Mode().Perm()
		if ok {
			canPass := mode&0o001 != 0 ||
				(st.Uid == c.runAs.Uid && mode&0o100 != 0) ||
				(st.Gid == c.runAs.Gid && mode&0o010 != 0)
			if !canPass {
				return fmt.Errorf("localpg: the postgres OS user cannot reach %s because %s has mode %o: put the cluster under a directory others may traverse (for example /tmp or /var/tmp)", c.dir, d, mode)
			}
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// startLocked does the work of Start under the cluster lock.
func (c *Cluster) startLocked(ctx context.Context, opts Options) error {
	if st, ok := readPIDFile(c.dataDir); ok && processAlive(st.pid) {
		c.adopt(st)
		if opts.Port != c.port {
			c.logger.Warn("local PostgreSQL already runs on another port; using it", "dir", c.dir, "port", c.port, "wanted_port", opts.Port)
		}
		if err := c.waitReady(ctx); err != nil {
			return fmt.Errorf("localpg: the server in %s runs (pid %d) but does not answer: %w", c.dir, st.pid, err)
		}
		c.logger.Debug("reusing local PostgreSQL", "dir", c.dir, "pid", c.pid, "url", c.URL("postgres"))
		return nil
	}

	initialized := fileExists(filepath.Join(c.dataDir, "PG_VERSION"))
	wantMajor := ""
	if initialized {
		v, err := os.ReadFile(filepath.Join(c.dataDir, "PG_VERSION"))
		if err != nil {
			return fmt.Errorf("localpg: %w", err)
		}
		wantMajor = strings.TrimSpace(string(v))
	}
	bins, err := findBinaries(ctx, opts.BinDir, wantMajor)
	if err != nil {
		return err
	}
	if err := c.makeOwnedDir(c.dataDir, 0o700); err != nil {
		return err
	}
	if err := c.makeOwnedDir(c.socketDir, 0o755); err != nil {
		return err
	}
	if err := c.makeOwnedDir(filepath.Join(c.dir, "log"), 0o755); err != nil {
		return err
	}
	if socket := filepath.Join(c.socketDir, fmt.Sprintf(".s.PGSQL.%d", c.port)); len(socket) > 103 {
		return fmt.Errorf("localpg: the unix socket path %s is too long; use a shorter cluster directory", socket)
	}
	if !initialized && opts.ReplicaOf != "" {
		c.logger.Info("copying the primary for a local PostgreSQL replica", "dir", c.dir, "version", bins.version)
		if out, err := c.run(ctx, bins.path("pg_basebackup"), "-D", c.dataDir, "-R", "-X", "stream", "-c", "fast", "-d", opts.ReplicaOf); err != nil {
			return fmt.Errorf("localpg: pg_basebackup failed: %s", lastLines(out, err))
		}
	} else if !initialized {
		c.logger.Info("creating local PostgreSQL cluster", "dir", c.dir, "version", bins.version)
		args := []string{"-D", c.dataDir, "-U", Superuser, "-A", "trust", "-E", "UTF8", "--locale=C"}
		if opts.Fast {
			args = append(args, "--no-sync")
		}
		if out, err := c.run(ctx, bins.path("initdb"), args...); err != nil {
			return fmt.Errorf("localpg: initdb failed: %s", lastLines(out, err))
		}
		if err := c.appendInclude(); err != nil {
			return err
		}
	}
	if err := c.writeConfig(opts); err != nil {
		return err
	}

	logPath := filepath.Join(c.dir, "log", "postgres.log")
	logStart := fileSize(logPath)
	c.logger.Info("starting local PostgreSQL", "dir", c.dir, "port", c.port, "version", bins.version)
	if out, err := c.run(ctx, bins.path("pg_ctl"), "start", "-w", "-s",
		"-t", strconv.Itoa(int(startTimeout/time.Second)), "-D", c.dataDir, "-l", logPath); err != nil {
		if reason := serverLogErrors(logPath, logStart); reason != "" {
			return fmt.Errorf("localpg: PostgreSQL did not start: %s (log: %s)", reason, logPath)
		}
		return fmt.Errorf("localpg: PostgreSQL did not start: %s (log: %s)", lastLines(out, err), logPath)
	}
	st, ok := readPIDFile(c.dataDir)
	if !ok {
		return fmt.Errorf("localpg: PostgreSQL started but left no postmaster.pid in %s", c.dataDir)
	}
	c.adopt(st)
	c.startedByUs = true
	if err := os.WriteFile(filepath.Join(c.dir, autostopFile), nil, 0o644); err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	if err := c.waitReady(ctx); err != nil {
		return fmt.Errorf("localpg: PostgreSQL started but does not answer: %w", err)
	}
	return nil
}

// adopt takes the port, listening address and pid of a running server.
func (c *Cluster) adopt(st pidFile) {
	c.pid = st.pid
	if st.port != 0 {
		c.port = st.port
	}
	if st.socketDir != "" {
		c.socketDir = st.socketDir
	}
	c.tcp = st.listenAddr != ""
}

// makeOwnedDir creates dir with the given mode, owned by the server's OS user.
func (c *Cluster) makeOwnedDir(dir string, mode os.FileMode) error {
	if err := os.MkdirAll(dir, mode); err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	return c.chown(dir)
}

func (c *Cluster) chown(path string) error {
	if c.runAs == nil {
		return nil
	}
	if err := os.Chown(path, int(c.runAs.Uid), int(c.runAs.Gid)); err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	return nil
}

// configFile is the file, in the data directory, that holds the settings
// Start controls. It is rewritten at every start.
const configFile = "stakegraph.conf"

func (c *Cluster) appendInclude() error {
	f, err := os.OpenFile(filepath.Join(c.dataDir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	_, err = fmt.Fprintf(f, "\n# Settings managed by stakegraph's localpg.\ninclude_if_exists = '%s'\n", configFile)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	return nil
}

func (c *Cluster) writeConfig(opts Options) error {
	listen := "127.0.0.1"
	if opts.SocketOnly {
		listen = ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by stakegraph's localpg at every start; edits are lost.\n")
	fmt.Fprintf(&b, "listen_addresses = %s\n", confString(listen))
	fmt.Fprintf(&b, "port = %d\n", c.port)
	fmt.Fprintf(&b, "unix_socket_directories = %s\n", confString(c.socketDir))
	fmt.Fprintf(&b, "max_connections = 300\n")
	if opts.Fast {
		fmt.Fprintf(&b, "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\njit = off\n")
	}
	path := filepath.Join(c.dataDir, configFile)
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	return c.chown(path)
}

// confString quotes s for postgresql.conf.
func confString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// run runs a PostgreSQL program as the server's OS user and returns its
// combined output.
func (c *Cluster) run(ctx context.Context, program string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, program, args...)
	// The programs resolve their own path relative to the working
	// directory, which therefore must be readable by the server's user.
	cmd.Dir = c.dir
	cmd.Env = childEnv()
	if c.runAs != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.runAs}
	}
	// pg_ctl's server redirects its own output to the log, but guard
	// against a child that keeps our pipe open.
	cmd.WaitDelay = 5 * time.Second
	return cmd.CombinedOutput()
}

// childEnv is the environment of the PostgreSQL programs: ours, without
// libpq's variables (which could point pg_ctl elsewhere) and in the C locale.
func childEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PG") || strings.HasPrefix(kv, "LC_") || strings.HasPrefix(kv, "LANG=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "LC_ALL=C", "LANG=C")
}

// waitReady waits until the server accepts connections.
func (c *Cluster) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	var err error
	for {
		if err = c.ping(ctx); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Cluster) ping(ctx context.Context) error {
	db, err := sql.Open("postgres", c.URL("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

// URL returns the connection URL of database dbname on the cluster, as the
// superuser. It uses TCP when the server listens on it and the unix socket
// otherwise.
func (c *Cluster) URL(dbname string) string {
	u := url.URL{Scheme: "postgres", User: url.User(Superuser), Path: "/" + dbname}
	q := url.Values{"sslmode": {"disable"}}
	if c.tcp {
		u.Host = fmt.Sprintf("127.0.0.1:%d", c.port)
	} else {
		q.Set("host", c.socketDir)
		q.Set("port", strconv.Itoa(c.port))
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Dir returns the cluster directory.
func (c *Cluster) Dir() string { return c.dir }

// DataDir returns the data directory (PGDATA) of the cluster in dir.
func DataDir(dir string) string { return filepath.Join(dir, "data") }

// HomeDir returns the directory of the cluster that stakegraph keeps in
// its home directory (STAKEGRAPH_HOME).
func HomeDir(home string) string { return filepath.Join(home, "pg") }

// Port returns the port the server uses.
func (c *Cluster) Port() int { return c.port }

// StartedByUs reports whether this Start call started the server, rather
// than finding it running.
func (c *Cluster) StartedByUs() bool { return c.startedByUs }

// EnsureDatabase creates database name unless it exists.
func (c *Cluster) EnsureDatabase(ctx context.Context, name string) error {
	db, err := sql.Open("postgres", c.URL("postgres"))
	if err != nil {
		return fmt.Errorf("localpg: %w", err)
	}
	defer db.Close()
	var exists bool
	if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return fmt.Errorf("localpg: look up database %s: %w", name, err)
	}
	if exists {
		return nil
	}
	if _, err := db.ExecContext(ctx, `CREATE DATABASE `+pq.QuoteIdentifier(name)); err != nil {
		var pqErr *pq.Error
		if errors.As(err, &pqErr) && (pqErr.Code == "42P04" || pqErr.Code == "23505") {
			return nil // created concurrently
		}
		return fmt.Errorf("localpg: create database %s: %w", name, err)
	}
	c.logger.Info("created database", "name", name)
	return nil
}

// Close ends this process's use of the cluster. The last process to close a
// cluster that a Start started stops its server, unless KeepRunning was
// called; otherwise the server keeps running.
func (c *Cluster) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	c.mu.Lock()
	users := c.users
	c.users = nil
	c.mu.Unlock()
	if users == nil {
		return nil // already closed
	}
	if !fileExists(filepath.Join(c.dir, autostopFile)) {
		return users.Close()
	}
	unlock, err := lockFile(ctx, filepath.Join(c.dir, "lock"), syscall.LOCK_EX)
	if err != nil {
		users.Close()
		return err
	}
	defer unlock()
	users.Close()
	// An exclusive lock on users.lock succeeds only when no other process
	// holds its shared one.
	unlockUsers, err := tryLockFile(filepath.Join(c.dir, "users.lock"), syscall.LOCK_EX)
	if err != nil {
		c.logger.Debug("leaving local PostgreSQL running: other processes use it", "dir", c.dir)
		return nil
	}
	defer unlockUsers()
	if !fileExists(filepath.Join(c.dir, autostopFile)) {
		return nil // KeepRunning was called meanwhile
	}
	return stopServer(ctx, c.dataDir, c.logger)
}

// KeepRunning makes the server outlive its users: no Close will stop it,
// only Stop or StopDir.
func (c *Cluster) KeepRunning() error {
	if err := os.Remove(filepath.Join(c.dir, autostopFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("localpg: %w", err)
	}
	return nil
}

// autostopFile, in the cluster directory, marks a server that its last
// user's Close stops.
const autostopFile = "autostop"

// Stop stops the server, whoever started it and whoever else uses it.
func (c *Cluster) Stop(ctx context.Context) error {
	c.mu.Lock()
	users := c.users
	c.users = nil
	c.mu.Unlock()
	if users != nil {
		users.Close()
	}
	_, err := StopDir(ctx, c.dir, c.logger)
	return err
}

// Status describes the cluster in a directory.
type Status struct {
	Running bool
	PID     int
	Port    int
	// URL is the connection URL of the postgres database when Running.
	URL string
}

// DirStatus reports whether the cluster in dir runs, without starting it.
func DirStatus(dir string) (Status, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return Status{}, err
	}
	st, ok := readPIDFile(filepath.Join(dir, "data"))
	if !ok || !processAlive(st.pid) {
		return Status{}, nil
	}
	c := &Cluster{dir: dir, dataDir: filepath.Join(dir, "data"), socketDir: filepath.Join(dir, "run")}
	c.adopt(st)
	return Status{Running: true, PID: st.pid, Port: c.port, URL: c.URL("postgres")}, nil
}

// StopDir stops the cluster in dir if it runs, whoever started it, and
// reports whether it did.
func StopDir(ctx context.Context, dir string, logger *slog.Logger) (bool, error) {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return false, err
	}
	if !fileExists(dir) {
		return false, nil
	}
	unlock, err := lockFile(ctx, filepath.Join(dir, "lock"), syscall.LOCK_EX)
	if err != nil {
		return false, err
	}
	defer unlock()
	dataDir := filepath.Join(dir, "data")
	if st, ok := readPIDFile(dataDir); !ok || !processAlive(st.pid) {
		return false, nil
	}
	return true, stopServer(ctx, dataDir, logger)
}

// stopServer asks the postmaster of dataDir for a fast shutdown (SIGINT)
// and waits for it to exit.
func stopServer(ctx context.Context, dataDir string, logger *slog.Logger) error {
	st, ok := readPIDFile(dataDir)
	if !ok || !processAlive(st.pid) {
		return nil
	}
	logger.Info("stopping local PostgreSQL", "dir", filepath.Dir(dataDir), "pid", st.pid)
	os.Remove(filepath.Join(filepath.Dir(dataDir), autostopFile))
	if err := syscall.Kill(st.pid, syscall.SIGINT); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("localpg: stop PostgreSQL (pid %d): %w", st.pid, err)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for {
		// The postmaster removes its pid file as the last step of shutdown.
		if !processAlive(st.pid) || !fileExists(filepath.Join(dataDir, "postmaster.pid")) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("localpg: PostgreSQL (pid %d) did not stop: %w", st.pid, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// pidFile is what postmaster.pid says about a running server.
type pidFile struct {
	pid        int
	port       int
	socketDir  string
	listenAddr string
}

// readPIDFile parses the postmaster.pid of dataDir: pid, data directory,
// start time, port, socket directory, listen address, shared memory key,
// status, one per line.
func readPIDFile(dataDir string) (pidFile, bool) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return pidFile{}, false
	}
	lines := strings.Split(string(b), "\n")
	var st pidFile
	if st.pid, err = strconv.Atoi(strings.TrimSpace(lines[0])); err != nil || st.pid <= 0 {
		return pidFile{}, false
	}
	if len(lines) > 3 {
		st.port, _ = strconv.Atoi(strings.TrimSpace(lines[3]))
	}
	if len(lines) > 4 {
		st.socketDir = strings.TrimSpace(lines[4])
	}
	if len(lines) > 5 {
		st.listenAddr = strings.TrimSpace(lines[5])
	}
	return st, true
}

// processAlive reports whether a process with the given pid exists.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// lockFile takes a flock (syscall.LOCK_SH or LOCK_EX) on path, waiting for
// it until ctx ends, and returns the function that releases it.
func lockFile(ctx context.Context, path string, how int) (func(), error) {
	for {
		unlock, err := tryLockFile(path, how)
		if err == nil {
			return unlock, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("localpg: waiting for lock %s: %w", path, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// tryLockFile takes a flock on path if it is free; when it is not, the error
// wraps syscall.EWOULDBLOCK.
func tryLockFile(path string, how int) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("localpg: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("localpg: lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func fileSize(path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return info.Size()
}

// serverLogErrors returns the FATAL and ERROR lines the server logged after
// offset, joined on one line.
func serverLogErrors(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return ""
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return ""
	}
	var msgs []string
	for _, line := range strings.Split(string(b), "\n") {
		for _, level := range []string{"FATAL:", "ERROR:", "PANIC:"} {
			if i := strings.Index(line, level); i >= 0 {
				msgs = append(msgs, strings.TrimSpace(line[i:]))
			}
		}
	}
	return strings.Join(msgs, "; ")
}

// lastLines condenses a failed program's output to one line.
func lastLines(out []byte, err error) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	text := strings.TrimSpace(strings.Join(lines, "; "))
	if text == "" {
		return err.Error()
	}
	return text + " (" + err.Error() + ")"
}

// TestDir is the directory of the test server shared by every test process
// of the current OS user: $STAKEGRAPH_TEST_PG_DIR, or
// stakegraph-testpg-<uid> in the temporary directory.
func TestDir() string {
	if d := os.Getenv("STAKEGRAPH_TEST_PG_DIR"); d != "" {
		return d
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("stakegraph-testpg-%d", os.Getuid()))
}

// TestOptions are the options of the shared test server in TestDir: socket
// only, so that it needs no free TCP port, and without durability, for speed.
func TestOptions(logger *slog.Logger) Options {
	return Options{Dir: TestDir(), Port: 5432, SocketOnly: true, Fast: true, Logger: logger}
}
