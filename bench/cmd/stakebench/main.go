// Command stakebench measures stakegraph on the mainnet-scale bench data and
// writes the numbers to bench/RESULTS.md.
//
//	stakebench [flags] measure   every REST route and four GraphQL operations, with and without the response cache
//	stakebench [flags] soak      a long soak at 64 clients over the mixed workload
//	stakebench [flags] restart   PostgreSQL stopped and started again under load
//	stakebench [flags] plans     the query-plan test (go test ./bench -run TestQueryPlans) on the bench data
//	stakebench [flags] peer      a nested page on stakegraph's /graphql and on PostGraphile 4, same run, same database
//
// Each subcommand starts the bench data's private PostgreSQL cluster (in
// --home, on --pg-port), loads the bench data set into it with `stakegraph
// seed bench` the first time (and records how long that took), creates an
// API key without a practical rate limit, starts `stakegraph serve` on
// loopback and drives it. `make bench` runs them all; `make soak` soak and
// restart.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/stakegraph/stakegraph/bench"
	"github.com/stakegraph/stakegraph/internal/redisproc"
	"github.com/stakegraph/stakegraph/localpg"
)

// config holds the flags.
type config struct {
	stakegraph string
	home       string
	pgPort     int
	addr       string
	adminAddr  string
	out        string
	seed       uint64

	clients          int
	warmup           time.Duration
	duration         time.Duration
	uncachedDuration time.Duration
	countRequests    int
	only             string
	cachedPass       bool

	soakClients  int
	soakDuration time.Duration
	soakInterval time.Duration

	peerDir    string
	peerAddr   string
	peerRounds int
	peerAlone  time.Duration

	restartClients int
	restartBefore  time.Duration
	restartDown    time.Duration
	restartAfter   time.Duration
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("stakebench: ")
	var cfg config
	flag.StringVar(&cfg.stakegraph, "stakegraph", "bin/stakegraph", "the stakegraph `binary` to seed with and serve")
	flag.StringVar(&cfg.home, "home", "bench/data", "`directory` of the bench data's PostgreSQL cluster (STAKEGRAPH_HOME of the commands run)")
	flag.IntVar(&cfg.pgPort, "pg-port", 54339, "TCP `port` of the bench cluster on 127.0.0.1")
	flag.StringVar(&cfg.addr, "addr", "127.0.0.1:18080", "API listen `address` of the server under test")
	flag.StringVar(&cfg.adminAddr, "admin-addr", "127.0.0.1:19091", "admin listen `address` of the server under test")
	flag.StringVar(&cfg.out, "out", "bench/RESULTS.md", "the Markdown `file` whose sections are updated")
	flag.Uint64Var(&cfg.seed, "seed", 1, "seed of the request mix")
	flag.IntVar(&cfg.clients, "clients", 16, "measure: concurrent clients")
	flag.DurationVar(&cfg.warmup, "warmup", 3*time.Second, "measure: warm-up per operation")
	flag.DurationVar(&cfg.duration, "duration", 10*time.Second, "measure: measured time per operation")
	flag.DurationVar(&cfg.uncachedDuration, "uncached-duration", 5*time.Second, "measure: measured time per operation without the response cache (0 skips that pass)")
	flag.IntVar(&cfg.countRequests, "count-requests", 20, "measure: requests per operation sent one at a time to count their SQL statements")
	flag.StringVar(&cfg.only, "only", "", "measure, soak, restart: only the operations whose name matches this `regexp`")
	flag.BoolVar(&cfg.cachedPass, "cached", true, "measure: measure with the response cache (false skips that pass)")
	flag.IntVar(&cfg.soakClients, "soak-clients", 64, "soak: concurrent clients")
	flag.DurationVar(&cfg.soakDuration, "soak-duration", 10*time.Minute, "soak: duration")
	flag.DurationVar(&cfg.soakInterval, "soak-interval", time.Minute, "soak: reporting interval")
	flag.StringVar(&cfg.peerDir, "peer-dir", "bench/postgraphile", "peer: `directory` of PostGraphile's package (installed with npm ci when its node_modules is missing)")
	flag.StringVar(&cfg.peerAddr, "peer-addr", "127.0.0.1:18081", "peer: listen `address` of PostGraphile")
	flag.IntVar(&cfg.peerRounds, "peer-rounds", 2, "peer: rounds, each measuring both engines")
	flag.DurationVar(&cfg.peerAlone, "peer-alone", 3*time.Second, "peer: measured time with one client per engine and round")
	flag.IntVar(&cfg.restartClients, "restart-clients", 16, "restart: concurrent clients")
	flag.DurationVar(&cfg.restartBefore, "restart-before", 15*time.Second, "restart: load before PostgreSQL stops")
	flag.DurationVar(&cfg.restartDown, "restart-down", 10*time.Second, "restart: how long PostgreSQL stays down")
	flag.DurationVar(&cfg.restartAfter, "restart-after", 30*time.Second, "restart: load after PostgreSQL is back")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: stakebench [flags] measure|soak|restart|plans|peer|cluster\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var run func(context.Context, *env) error
	switch flag.Arg(0) {
	case "measure":
		run = measure
	case "soak":
		run = soak
	case "restart":
		run = restart
	case "plans":
		run = plans
	case "peer":
		run = peer
	case "cluster":
		run = clusterRun
	default:
		flag.Usage()
		os.Exit(2)
	}
	e, err := prepare(ctx, cfg)
	if err != nil {
		log.Fatal(err)
	}
	err = run(ctx, e)
	if cerr := e.close(); err == nil {
		err = cerr
	}
	if err != nil {
		log.Fatal(err)
	}
}

// env is a prepared bench environment: a running cluster with the bench
// data and an API key.
type env struct {
	cfg config
	key string
	log *os.File // the servers' log
}

// stakegraph runs a stakegraph command against the bench cluster and
// returns its combined output.
func (e *env) stakegraph(ctx context.Context, args ...string) (string, error) {
	return e.stakegraphWith(ctx, nil, args...)
}

// stakegraphWith is stakegraph with env added to (and overriding) the
// commands' environment.
func (e *env) stakegraphWith(ctx context.Context, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, e.cfg.stakegraph, args...)
	cmd.Env = append(append(os.Environ(), e.commandEnv()...), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("stakegraph %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// commandEnv is the environment of every stakegraph command run.
func (e *env) commandEnv() []string {
	env := []string{
		"STAKEGRAPH_HOME=" + e.cfg.home,
		fmt.Sprintf("STAKEGRAPH_PG_PORT=%d", e.cfg.pgPort),
		"STAKEGRAPH_NETWORK=mainnet",
		"STAKEGRAPH_LOG_FORMAT=json",
		"DATABASE_URL=",
	}
	// Profiles of the server under test can be taken from the admin
	// listener while it runs when the caller asks for them.
	if v, ok := os.LookupEnv("STAKEGRAPH_PPROF"); ok {
		env = append(env, "STAKEGRAPH_PPROF="+v)
	}
	return env
}

// seededMarker is the file, in the cluster directory, written once the
// bench data has been loaded completely.
const seededMarker = "seeded"

// prepare starts the cluster, seeds it when it has no bench data yet and
// creates an API key.
func prepare(ctx context.Context, cfg config) (*env, error) {
	if _, err := os.Stat(cfg.stakegraph); err != nil {
		return nil, fmt.Errorf("%s: %w (run make build)", cfg.stakegraph, err)
	}
	if err := os.MkdirAll(cfg.home, 0o755); err != nil {
		return nil, err
	}
	// The servers' request log of this run only: it grows by gigabytes.
	logf, err := os.OpenFile(filepath.Join(cfg.home, "serve.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	e := &env{cfg: cfg, log: logf}
	if _, err := e.stakegraph(ctx, "localpg", "start"); err != nil {
		return nil, err
	}
	marker := filepath.Join(cfg.home, seededMarker)
	if _, err := os.Stat(marker); errors.Is(err, os.ErrNotExist) {
		log.Printf("loading the bench data set into %s (stakegraph seed bench); this takes a while", cfg.home)
		start := time.Now()
		out, err := e.stakegraph(ctx, "seed", "bench", "--if-empty")
		if err != nil {
			return nil, err
		}
		took := time.Since(start)
		if strings.Contains(out, "already holds data") {
			return nil, fmt.Errorf("the database in %s holds data but was not completely seeded by stakebench; remove %s and run again", cfg.home, cfg.home)
		}
		if err := os.WriteFile(marker, []byte(took.String()+"\n"), 0o644); err != nil {
			return nil, err
		}
		if err := bench.UpdateSection(cfg.out, "seed", seedReport(took, out)); err != nil {
			return nil, err
		}
		log.Printf("seeded in %s", took.Round(time.Second))
	}
	out, err := e.stakegraph(ctx, "keys", "create", "--name", fmt.Sprintf("stakebench-%d", time.Now().UnixNano()), "--rate-limit", "1000000000")
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	e.key = strings.TrimSpace(lines[len(lines)-1])
	return e, nil
}

// seedReport describes a seed run from its output.
func seedReport(took time.Duration, out string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "`stakegraph seed bench` into an empty database took **%s** (target ≤ %s: %s), on %s, %d cores.\n",
		took.Round(time.Second), bench.TargetSeed, verdict(took <= bench.TargetSeed), time.Now().UTC().Format("2006-01-02"), runtime.NumCPU())
	var progress []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "bench: ") {
			progress = append(progress, line)
		}
	}
	if n := len(progress); n > 0 {
		b.WriteString("\nIts last progress lines:\n\n```\n")
		for _, line := range progress[max(0, n-3):] {
			b.WriteString(line + "\n")
		}
		b.WriteString("```\n")
	}
	return b.String()
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

// clusterRun measures the mixed workload on one instance on the bench
// cluster, without and with the response cache, then on two instances that read from a streaming replica of it
// and share their rate limits in Redis, all on this machine. The replica
// (in <home>/replica, on the next port) is copied from the bench cluster
// on the first run and kept, stopped, for the next.
func clusterRun(ctx context.Context, e *env) error {
	cfg := e.cfg
	replicaEnv := []string{"STAKEGRAPH_HOME=" + filepath.Join(cfg.home, "replica"), fmt.Sprintf("STAKEGRAPH_PG_PORT=%d", cfg.pgPort+1)}
	log.Printf("starting the replica (copying the bench cluster on the first run; it takes a while)")
	if _, err := e.stakegraphWith(ctx, replicaEnv, "localpg", "start",
		"--replica-of", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", cfg.pgPort)); err != nil {
		return err
	}
	defer e.stakegraphWith(context.Background(), replicaEnv, "localpg", "stop")
	socket, err := filepath.Abs(filepath.Join(cfg.home, "redis.sock"))
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	redis, err := redisproc.Start(rctx, socket)
	cancel()
	if err != nil {
		return err
	}
	defer redis.Stop()

	var runs []bench.ClusterRun
	measure := func(setup string, servers []*bench.Server) error {
		urls := make([]string, len(servers))
		for i, s := range servers {
			urls[i] = s.URL
		}
		c, ops, err := e.operations(ctx, servers[0], cfg.clients)
		if err != nil {
			return err
		}
		defer c.Close()
		lb := bench.NewBalancedClient(urls, e.key, cfg.clients)
		defer lb.Close()
		next := bench.Mixed(ops)
		bench.Load(ctx, lb, cfg.clients, cfg.warmup, cfg.seed, next, nil)
		replicaReads := func() (float64, float64) {
			var replica, all float64
			for _, s := range servers {
				for _, db := range []string{"primary", "replica1"} {
					n, err := bench.ScrapeCounter(ctx, s.AdminURL+"/metrics", `stakegraph_db_read_requests_total{database="`+db+`"}`)
					if err != nil {
						continue // one instance alone reads no replica
					}
					all += n
					if db == "replica1" {
						replica += n
					}
				}
			}
			return replica, all
		}
		r0, a0 := replicaReads()
		stats := bench.Load(ctx, lb, cfg.clients, 2*cfg.duration, cfg.seed+7, next, nil)
		r1, a1 := replicaReads()
		run := bench.ClusterRun{Setup: setup, Stats: stats}
		if a1 > a0 {
			run.ReplicaShare = (r1 - r0) / (a1 - a0)
		}
		log.Printf("%s: %.0f/s, p99 %.1f ms, %s", setup, stats.RPS(), float64(stats.Percentile(0.99))/1e6, stats.StatusSummary())
		runs = append(runs, run)
		return ctx.Err()
	}

	for _, single := range []struct {
		setup string
		args  []string
	}{
		{"1 instance on the primary, response cache off", []string{"--response-cache=false"}},
		{"1 instance on the primary", nil},
	} {
		one, err := e.startServer(ctx, single.args...)
		if err != nil {
			return err
		}
		err = measure(single.setup, []*bench.Server{one})
		one.Stop()
		if err != nil {
			return err
		}
	}
	addr2, admin2, err := nextAddrs(cfg.addr, cfg.adminAddr)
	if err != nil {
		return err
	}
	shared := []string{"--replica-url", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/stakegraph?sslmode=disable", cfg.pgPort+1), "--redis-url", redis.URL()}
	first, err := e.startServer(ctx, shared...)
	if err != nil {
		return err
	}
	defer first.Stop()
	second, err := e.startServerAt(ctx, addr2, admin2, shared...)
	if err != nil {
		return err
	}
	defer second.Stop()
	if err := measure("2 instances on the replica, limits in Redis", []*bench.Server{first, second}); err != nil {
		return err
	}
	return bench.UpdateSection(cfg.out, "cluster", bench.ClusterReport(runs, cfg.clients, cfg.warmup, 2*cfg.duration))
}

// nextAddrs returns the addresses of a second server: the ports after
// those of addr and adminAddr, plus one.
func nextAddrs(addr, adminAddr string) (string, string, error) {
	var out [2]string
	for i, a := range []string{addr, adminAddr} {
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			return "", "", err
		}
		n, err := strconv.Atoi(port)
		if err != nil {
			return "", "", err
		}
		out[i] = net.JoinHostPort(host, strconv.Itoa(n+2))
	}
	return out[0], out[1], nil
}

// close stops the cluster.
func (e *env) close() error {
	_, err := e.stakegraph(context.Background(), "localpg", "stop")
	e.log.Close()
	return err
}

// startServer starts stakegraph serve with extra arguments.
func (e *env) startServer(ctx context.Context, extra ...string) (*bench.Server, error) {
	return e.startServerAt(ctx, e.cfg.addr, e.cfg.adminAddr, extra...)
}

// startServerAt starts stakegraph serve on the given addresses with extra
// arguments.
func (e *env) startServerAt(ctx context.Context, addr, adminAddr string, extra ...string) (*bench.Server, error) {
	fmt.Fprintf(e.log, "\n=== stakebench: serve on %s %s at %s\n", addr, strings.Join(extra, " "), time.Now().UTC().Format(time.RFC3339))
	return bench.StartServer(ctx, bench.ServerConfig{
		Binary:    e.cfg.stakegraph,
		Args:      append([]string{"--addr", addr, "--admin-addr", adminAddr}, extra...),
		Env:       e.commandEnv(),
		Addr:      addr,
		AdminAddr: adminAddr,
		Log:       e.log,
	})
}

// operations starts a client of srv and discovers the workload.
func (e *env) operations(ctx context.Context, srv *bench.Server, conns int) (*bench.Client, []bench.Operation, error) {
	c := bench.NewClient(srv.URL, e.key, conns)
	sample, err := bench.Discover(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	log.Printf("workload sample: %d AVS, %d operators, %d stakers, %d strategies, data from %s to %s",
		len(sample.AVS), len(sample.Operators), len(sample.Stakers), len(sample.Strategies),
		sample.First.Format(time.DateOnly), sample.Head.Format(time.DateOnly))
	log.Printf("slashing era: %d operator sets of %d AVS, %d operators with allocations, %d slashings",
		len(sample.OperatorSets), len(sample.OperatorSetAVS), len(sample.AllocatingOperators), sample.Slashings)
	ops := bench.Operations(sample)
	if e.cfg.only != "" {
		re, err := regexp.Compile(e.cfg.only)
		if err != nil {
			return nil, nil, fmt.Errorf("--only: %w", err)
		}
		ops = slices.DeleteFunc(ops, func(op bench.Operation) bool { return !re.MatchString(op.Name) })
		if len(ops) == 0 {
			return nil, nil, fmt.Errorf("--only %q matches no operation", e.cfg.only)
		}
	}
	return c, ops, nil
}

// checkCacheBehindAuth checks that a route the cache holds still refuses a
// request without a valid key.
func checkCacheBehindAuth(ctx context.Context, srv *bench.Server, c *bench.Client) error {
	req := bench.Request{Method: "GET", Target: "/metrics"}
	for range 2 {
		if o := c.Do(ctx, req); o.Status != 200 {
			return fmt.Errorf("GET /metrics: %d %s", o.Status, o.Snippet)
		}
	}
	bad := bench.NewClient(srv.URL, "sg_not_a_key", 1)
	defer bad.Close()
	if o := bad.Do(ctx, req); o.Status != 401 {
		return fmt.Errorf("GET /metrics with an unknown key answered %d, not 401, after it was cached", o.Status)
	}
	return nil
}

func measure(ctx context.Context, e *env) error {
	cfg := e.cfg
	lc := bench.LoadConfig{Clients: cfg.clients, Warmup: cfg.warmup, Duration: cfg.duration, Seed: cfg.seed}

	// The bench data is read into the OS page cache at the start and again
	// before each operation (see bench.WarmPageCache); the first read,
	// which may come from disk, is logged.
	base := filepath.Join(localpg.DataDir(localpg.HomeDir(cfg.home)), "base")
	logged := false
	warm := func() {
		start := time.Now()
		n, err := bench.WarmPageCache(base)
		switch {
		case err != nil:
			log.Printf("reading the bench data into the OS page cache: %v", err)
		case !logged:
			log.Printf("read the bench data into the OS page cache: %.1f GB in %v", float64(n)/1e9, time.Since(start).Round(time.Second))
			logged = true
		}
	}
	warm()

	srv, err := e.startServer(ctx)
	if err != nil {
		return err
	}
	c, ops, err := e.operations(ctx, srv, cfg.clients)
	if err != nil {
		srv.Stop()
		return err
	}
	if err := checkCacheBehindAuth(ctx, srv, c); err != nil {
		srv.Stop()
		return err
	}
	machine := bench.Machine()
	var cached []bench.OpResult
	for i, op := range ops {
		if !cfg.cachedPass {
			break
		}
		if i > 0 {
			warm() // the start's read is fresh for the first
		}
		r, err := bench.Measure(ctx, srv, c, op, lc)
		if err != nil {
			srv.Stop()
			return err
		}
		log.Printf("%-45s %7.0f/s  p99 %6.1f ms  %.2f SQL/req  %3.0f%% hits  %s", op.Name, r.Stats.RPS(),
			float64(r.Stats.Percentile(0.99))/1e6, r.Statements, 100*float64(r.Stats.CacheHits)/float64(max(r.Stats.Requests, 1)), r.Stats.StatusSummary())
		cached = append(cached, r)
	}
	peak, _ := bench.ReadMemory(srv.PID())
	c.Close()
	if err := srv.Stop(); err != nil {
		return err
	}

	var uncached []bench.OpResult
	counts := map[string]bench.StatementRange{}
	if cfg.uncachedDuration > 0 {
		srv, err := e.startServer(ctx, "--response-cache=false")
		if err != nil {
			return err
		}
		c := bench.NewClient(srv.URL, e.key, cfg.clients)
		for _, op := range ops {
			r, err := bench.CountStatements(ctx, srv, c, op, cfg.countRequests, cfg.seed+7)
			if err != nil {
				srv.Stop()
				return fmt.Errorf("count statements of %s: %w", op.Name, err)
			}
			counts[op.Name] = r
		}
		ulc := lc
		ulc.Duration = cfg.uncachedDuration
		ulc.Warmup = min(cfg.warmup, 2*time.Second)
		for _, op := range ops {
			warm()
			r, err := bench.Measure(ctx, srv, c, op, ulc)
			if err != nil {
				srv.Stop()
				return err
			}
			log.Printf("uncached %-36s %7.0f/s  p99 %6.1f ms  %.2f SQL/req (each %s)  %s", op.Name, r.Stats.RPS(),
				float64(r.Stats.Percentile(0.99))/1e6, r.Statements, counts[op.Name], r.Stats.StatusSummary())
			uncached = append(uncached, r)
		}
		if m, err := bench.ReadMemory(srv.PID()); err == nil {
			peak.Peak = max(peak.Peak, m.Peak)
		}
		c.Close()
		if err := srv.Stop(); err != nil {
			return err
		}
	}
	return bench.UpdateSection(cfg.out, "measure", measureReport(cfg, machine, cached, uncached, counts, peak.Peak))
}

func measureReport(cfg config, machine string, cached, uncached []bench.OpResult, counts map[string]bench.StatementRange, peak int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s by `stakebench measure`: %d concurrent closed-loop clients on loopback, the bench data's files read into the OS page cache before each operation, then %s warm-up and %s per operation, requests gzip-accepted like a browser's.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), cfg.clients, cfg.warmup, cfg.duration)
	b.WriteString(machine)
	fmt.Fprintf(&b, "- Server peak RSS (VmHWM) over the whole run: **%s MiB** (target ≤ 250 MiB: %s)\n\n", mibs(peak), verdict(peak <= bench.TargetRSS))
	b.WriteString("#### As deployed (response cache on)\n\n")
	b.WriteString(bench.LoadTable(cached, true, nil))
	b.WriteString("\nSQL statements/request is the server's statement counter over the run divided by the requests, so it includes the cache's data-version poll (one a second); cache hits cost none. Cache hits are responses marked `X-Cache: HIT`.\n")
	writeMissed(&b, "with the cache on", cached)
	if len(uncached) == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "\n#### Without the response cache (`serve --response-cache=false`), %s per operation\n\n", cfg.uncachedDuration)
	fmt.Fprintf(&b, "Every request reaches PostgreSQL: this is the cost of a cache miss. \"each\" is the range of the statements of %d requests of the operation sent one at a time.\n\n", cfg.countRequests)
	b.WriteString(bench.LoadTable(uncached, true, counts))
	writeMissed(&b, "without the cache", uncached)
	return b.String()
}

func writeMissed(b *strings.Builder, what string, results []bench.OpResult) {
	missed := bench.Missed(results)
	if len(missed) == 0 {
		fmt.Fprintf(b, "\nEvery target of this table is met %s.\n", what)
		return
	}
	fmt.Fprintf(b, "\nMissed %s:\n\n", what)
	for _, m := range missed {
		b.WriteString("- " + m + "\n")
	}
}

func mibs(n int64) string { return fmt.Sprintf("%.0f", float64(n)/(1<<20)) }

func soak(ctx context.Context, e *env) error {
	cfg := e.cfg
	srv, err := e.startServer(ctx)
	if err != nil {
		return err
	}
	defer srv.Stop()
	c, ops, err := e.operations(ctx, srv, cfg.soakClients)
	if err != nil {
		return err
	}
	defer c.Close()
	log.Printf("soaking: %d clients for %s", cfg.soakClients, cfg.soakDuration)
	res := bench.Soak(ctx, srv, c, bench.Mixed(ops), bench.SoakConfig{
		Clients: cfg.soakClients, Duration: cfg.soakDuration, Interval: cfg.soakInterval, Seed: cfg.seed + 100,
	})
	for i, in := range res.Intervals {
		log.Printf("interval %d: %.0f/s, p99 %.1f ms, %s, RSS %s MiB", i+1, in.Stats.RPS(), float64(in.Stats.Percentile(0.99))/1e6, in.Stats.StatusSummary(), mibs(in.RSS))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return bench.UpdateSection(cfg.out, "soak", res.Report())
}

func restart(ctx context.Context, e *env) error {
	cfg := e.cfg
	srv, err := e.startServer(ctx)
	if err != nil {
		return err
	}
	defer srv.Stop()
	c, ops, err := e.operations(ctx, srv, cfg.restartClients)
	if err != nil {
		return err
	}
	defer c.Close()
	localpg := func(verb string) func(context.Context) error {
		return func(ctx context.Context) error {
			log.Printf("PostgreSQL: %s", verb)
			_, err := e.stakegraph(ctx, "localpg", verb)
			return err
		}
	}
	res := bench.Restart(ctx, c, bench.Mixed(ops), bench.RestartConfig{
		Clients: cfg.restartClients, Before: cfg.restartBefore, Down: cfg.restartDown, After: cfg.restartAfter,
		Seed: cfg.seed + 200, Stop: localpg("stop"), Start: localpg("start"),
	})
	log.Printf("restart: before %s; down %s; after %s", res.Before.StatusSummary(), res.Down.StatusSummary(), res.After.StatusSummary())
	if err := ctx.Err(); err != nil {
		return err
	}
	return bench.UpdateSection(cfg.out, "restart", res.Report())
}

// plans runs the query-plan test against the bench database and records
// its verdict.
func plans(ctx context.Context, e *env) error {
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/stakegraph?sslmode=disable", e.cfg.pgPort)
	cmd := exec.CommandContext(ctx, "go", "test", "-count=1", "-run", "^TestQueryPlans$", "-v", "./bench")
	cmd.Env = append(os.Environ(), "STAKEGRAPH_PLANS_DATABASE_URL="+url)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	var b strings.Builder
	fmt.Fprintf(&b, "`go test ./bench -run TestQueryPlans` on the bench data, %s: ", time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	var checked, failed []string
	for _, line := range strings.Split(string(out), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "--- PASS: TestQueryPlans/"), strings.HasPrefix(line, "--- FAIL: TestQueryPlans/"):
			checked = append(checked, line)
		case strings.HasPrefix(line, "plans_test.go:"):
			failed = append(failed, line)
		}
	}
	if err == nil {
		fmt.Fprintf(&b, "**passed** in %s: every statement of %d operations uses an index (no sequential scan of a large table, no unbounded scan or sort).\n",
			time.Since(start).Round(time.Second), len(checked))
	} else {
		fmt.Fprintf(&b, "**failed** (%v). Violations:\n\n", err)
		for _, f := range failed {
			b.WriteString("- " + f + "\n")
		}
		if len(failed) == 0 {
			b.WriteString("```\n" + lastLines(string(out), 30) + "\n```\n")
		}
	}
	if werr := bench.UpdateSection(e.cfg.out, "plans", b.String()); werr != nil {
		return werr
	}
	if err != nil {
		os.Stderr.Write(out)
		return fmt.Errorf("the query-plan test failed on the bench data")
	}
	log.Printf("query plans: passed (%d operations)", len(checked))
	return nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// peer measures the nested page on stakegraph's /graphql, without the
// response cache, and on PostGraphile 4 over the same database, and
// records the comparison.
func peer(ctx context.Context, e *env) error {
	cfg := e.cfg
	if _, err := os.Stat(filepath.Join(cfg.peerDir, "node_modules")); errors.Is(err, os.ErrNotExist) {
		log.Printf("installing PostGraphile (npm ci in %s)", cfg.peerDir)
		npm := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund")
		npm.Dir = cfg.peerDir
		if out, err := npm.CombinedOutput(); err != nil {
			return fmt.Errorf("npm ci in %s: %w\n%s", cfg.peerDir, err, out)
		}
	}
	version, err := os.ReadFile(filepath.Join(cfg.peerDir, "node_modules", "postgraphile", "package.json"))
	if err != nil {
		return err
	}
	var pkg struct{ Version string }
	if err := json.Unmarshal(version, &pkg); err != nil {
		return err
	}
	srv, err := e.startServer(ctx, "--response-cache=false")
	if err != nil {
		return err
	}
	defer srv.Stop()
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/stakegraph?sslmode=disable", cfg.pgPort)
	fmt.Fprintf(e.log, "\n=== stakebench: postgraphile %s at %s\n", pkg.Version, time.Now().UTC().Format(time.RFC3339))
	pg, err := bench.StartPostGraphile(ctx, cfg.peerDir, url, cfg.peerAddr, e.log)
	if err != nil {
		return err
	}
	defer pg.Stop()
	ours := bench.NewClient(srv.URL, e.key, cfg.clients)
	defer ours.Close()
	theirs := bench.NewClient(pg.URL, "", cfg.clients)
	defer theirs.Close()
	shape, _, err := bench.CheckSamePage(ctx, ours, theirs)
	if err != nil {
		return err
	}
	lc := bench.LoadConfig{Clients: cfg.clients, Warmup: cfg.warmup, Duration: cfg.duration, Seed: cfg.seed}
	rounds := bench.ComparePeer(ctx, ours, theirs, lc, cfg.peerAlone, cfg.peerRounds)
	if err := ctx.Err(); err != nil {
		return err
	}
	for i, r := range rounds {
		log.Printf("round %d: stakegraph %.0f/s (p99 %.1f ms, alone %.1f ms), postgraphile %.0f/s (p99 %.1f ms, alone %.1f ms): %.2fx",
			i+1, r.Ours.RPS(), float64(r.Ours.Percentile(0.99))/1e6, float64(r.OursAlone.Percentile(0.5))/1e6,
			r.Theirs.RPS(), float64(r.Theirs.Percentile(0.99))/1e6, float64(r.TheirsAlone.Percentile(0.5))/1e6, r.Ratio())
	}
	return bench.UpdateSection(cfg.out, "peer", bench.PeerReport(rounds, shape, lc, cfg.peerAlone, pkg.Version))
}
