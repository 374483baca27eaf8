package indexer

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/election"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// The environment of an indexer child process (see runIndexerChild).
const (
	childEnv        = "STAKEGRAPH_INDEXER_TEST_CHILD"
	childRPCEnv     = "STAKEGRAPH_INDEXER_TEST_RPC"
	childDBEnv      = "STAKEGRAPH_INDEXER_TEST_DB"
	childNetworkEnv = "STAKEGRAPH_INDEXER_TEST_NETWORK"
	childNowEnv     = "STAKEGRAPH_INDEXER_TEST_NOW"
	childPricesEnv  = "STAKEGRAPH_INDEXER_TEST_PRICES"
	childPauseEnv   = "STAKEGRAPH_INDEXER_TEST_PAUSE_AT"
	// childElectEnv, when set, makes the child campaign for the indexer's
	// leadership (package election) and index only while it leads.
	childElectEnv = "STAKEGRAPH_INDEXER_TEST_ELECT"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runIndexerChild())
	}
	os.Exit(m.Run())
}

// runIndexerChild is an indexer process for the kill tests: it indexes the
// chain the environment names into the database it names, and in its
// PAUSE_AT-th batch transaction (none when 0) prints PAUSED and waits to be
// killed. With ELECT set it indexes only while it leads the election,
// printing LEADER when elected and its election log lines, and waits to
// be killed once done.
func runIndexerChild() int {
	ctx := context.Background()
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	var network chain.Network
	if err := json.Unmarshal([]byte(os.Getenv(childNetworkEnv)), &network); err != nil {
		return fail(err)
	}
	var prices StaticPrices
	if err := json.Unmarshal([]byte(os.Getenv(childPricesEnv)), &prices); err != nil {
		return fail(err)
	}
	nowUnix, err := strconv.ParseInt(os.Getenv(childNowEnv), 10, 64)
	if err != nil {
		return fail(err)
	}
	pauseAt, err := strconv.Atoi(os.Getenv(childPauseEnv))
	if err != nil {
		return fail(err)
	}
	db, err := store.Open(ctx, os.Getenv(childDBEnv))
	if err != nil {
		return fail(err)
	}
	defer db.Close()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	node, err := Dial(ctx, os.Getenv(childRPCEnv), NodeOptions{Logger: logger})
	if err != nil {
		return fail(err)
	}
	batches := 0
	now := time.Unix(nowUnix, 0)
	cfg := Config{
		Network: network, InitialRange: 3, MaxRange: 4, TargetLogs: 1000, ReorgWindow: 1000,
		Prices:    prices,
		ETHSupply: testETHSupply,
		Metadata:  NewMetadataFetcher(MetadataOptions{AllowPrivateAddresses: true, Attempts: 2, Backoff: time.Millisecond}),
		Logger:    logger,
		Now:       func() time.Time { return now },
		beforeCommit: func(context.Context, uint64) error {
			batches++
			if batches == pauseAt {
				fmt.Println("PAUSED")
				time.Sleep(time.Minute) // killed here, inside the transaction
			}
			return nil
		},
	}
	ix, err := New(db, node, cfg)
	if err != nil {
		return fail(err)
	}
	index := func(ctx context.Context) error {
		if err := ix.Setup(ctx); err != nil {
			return err
		}
		if err := ix.CatchUp(ctx); err != nil {
			return err
		}
		if err := ix.FetchMetadata(ctx); err != nil {
			return err
		}
		fmt.Println("DONE")
		return nil
	}
	if os.Getenv(childElectEnv) == "" {
		if err := index(ctx); err != nil {
			return fail(err)
		}
		return 0
	}
	elector := election.New(election.Config{
		DB: db, Key: store.IndexerLockKey, Role: "indexer",
		RetryInterval: 20 * time.Millisecond, CheckInterval: 20 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(os.Stdout, nil)),
	})
	if err := elector.Run(ctx, func(ctx context.Context) error {
		fmt.Println("LEADER")
		if err := index(ctx); err != nil {
			return err
		}
		<-ctx.Done()
		return nil
	}); err != nil {
		return fail(err)
	}
	return 0
}

// childEnviron returns the environment of an indexer child process (see
// runIndexerChild) that indexes w's chain as of now into the database at
// url, pausing in its pauseAt-th batch (never when 0), under the election
// when elect is set.
func childEnviron(t *testing.T, w *world, url string, now time.Time, pauseAt int, elect bool) []string {
	t.Helper()
	network, err := json.Marshal(w.network)
	if err != nil {
		t.Fatal(err)
	}
	prices, err := json.Marshal(w.config(now).Prices)
	if err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		childEnv+"=1", childRPCEnv+"="+w.proxy.URL, childDBEnv+"="+url, childNetworkEnv+"="+string(network),
		childNowEnv+"="+strconv.FormatInt(now.Unix(), 10), childPricesEnv+"="+string(prices),
		childPauseEnv+"="+strconv.Itoa(pauseAt))
	if elect {
		env = append(env, childElectEnv+"=1")
	}
	return env
}

func TestSIGKILLMidBatchThenRestartEqualsAnUninterruptedRun(t *testing.T) {
	w := newWorld(t)
	w.script()
	now := time.Now().Add(time.Hour).Truncate(time.Second)
	want := dumpState(t, w.freshIndex(now))

	url := storetest.NewURL(t)
	// Process k is killed (SIGKILL) inside its k-th batch transaction, so
	// every restart gets one batch further before dying; the last process
	// finishes.
	kills := 0
	for pauseAt := 1; ; pauseAt++ {
		if pauseAt > 50 {
			t.Fatal("the indexer never finished")
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = childEnviron(t, w, url, now, pauseAt, false)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		state := ""
		lines := bufio.NewScanner(out)
		for lines.Scan() {
			state = lines.Text()
			if state == "PAUSED" {
				if err := cmd.Process.Kill(); err != nil {
					t.Fatal(err)
				}
				kills++
				break
			}
		}
		werr := cmd.Wait()
		if state == "DONE" {
			if werr != nil {
				t.Fatalf("child: %v\n%s", werr, stderr.String())
			}
			break
		}
		var exit *exec.ExitError
		if state != "PAUSED" || !errors.As(werr, &exit) {
			t.Fatalf("child ended in state %q: %v\n%s", state, werr, stderr.String())
		}
	}
	if kills < 3 {
		t.Fatalf("only %d kills; the history is too short to test anything", kills)
	}
	t.Logf("%d indexer processes killed with SIGKILL inside a batch transaction", kills)
	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := dumpState(t, db); got != want {
		t.Errorf("after %d kills the state differs from an uninterrupted run:\n%s", kills, storetest.LineDiff(want, got))
	}
}

func TestCancelledMidBatchThenRestartEqualsAnUninterruptedRun(t *testing.T) {
	w := newWorld(t)
	w.script()
	now := time.Now().Add(time.Hour).Truncate(time.Second)
	want := dumpState(t, w.freshIndex(now))

	db := storetest.New(t)
	errKilled := errors.New("killed")
	kills := 0
	for killAt := 1; ; killAt++ {
		if killAt > 50 {
			t.Fatal("the indexer never finished")
		}
		ctx, cancel := context.WithCancel(context.Background())
		cfg := w.config(now)
		batches := 0
		cfg.beforeCommit = func(context.Context, uint64) error {
			batches++
			if batches == killAt {
				cancel() // the process dies with its transaction open
				return errKilled
			}
			return nil
		}
		ix, err := New(db, w.node(NewMetrics()), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := ix.Setup(ctx); err != nil {
			t.Fatal(err)
		}
		err = ix.CatchUp(ctx)
		cancel()
		if err == nil {
			break
		}
		if !errors.Is(err, errKilled) {
			t.Fatalf("restart %d: %v", killAt, err)
		}
		kills++
	}
	if kills < 3 {
		t.Fatalf("only %d kills", kills)
	}
	ix, err := New(db, w.node(NewMetrics()), w.config(now))
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.FetchMetadata(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := dumpState(t, db); got != want {
		t.Errorf("after %d kills the state differs from an uninterrupted run:\n%s", kills, storetest.LineDiff(want, got))
	}
}

// TestSIGKILLedLeaderIsReplacedByTheStandbyIndexer runs two indexer
// processes under the election on one database: the first leads and is
// killed (SIGKILL) inside its third batch transaction; the second, which
// stood by meanwhile, takes over and finishes, and the state equals an
// uninterrupted run.
func TestSIGKILLedLeaderIsReplacedByTheStandbyIndexer(t *testing.T) {
	w := newWorld(t)
	w.script()
	now := time.Now().Add(time.Hour).Truncate(time.Second)
	want := dumpState(t, w.freshIndex(now))

	url := storetest.NewURL(t)
	// start runs a child and sends each line of its output to lines.
	start := func(pauseAt int) (*exec.Cmd, <-chan string, *strings.Builder) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = childEnviron(t, w, url, now, pauseAt, true)
		stderr := new(strings.Builder)
		cmd.Stderr = stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		lines := make(chan string, 100)
		go func() {
			defer close(lines)
			scanner := bufio.NewScanner(out)
			for scanner.Scan() {
				lines <- scanner.Text()
			}
		}()
		return cmd, lines, stderr
	}
	// await reads lines until one contains want.
	await := func(name string, lines <-chan string, stderr *strings.Builder, want string) {
		t.Helper()
		timeout := time.After(time.Minute)
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("%s ended before printing %q:\n%s", name, want, stderr.String())
				}
				if strings.Contains(line, "LEADER") && name == "the standby" && want != "LEADER" {
					t.Fatalf("the standby led before the leader was killed")
				}
				if strings.Contains(line, want) {
					return
				}
			case <-timeout:
				t.Fatalf("%s did not print %q within a minute:\n%s", name, want, stderr.String())
			}
		}
	}

	leader, leaderLines, leaderErr := start(3)
	await("the leader", leaderLines, leaderErr, "LEADER")
	_, standbyLines, standbyErr := start(0)
	await("the standby", standbyLines, standbyErr, "standing by")
	await("the leader", leaderLines, leaderErr, "PAUSED")
	if err := leader.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	await("the standby", standbyLines, standbyErr, "LEADER")
	await("the standby", standbyLines, standbyErr, "DONE")

	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := dumpState(t, db); got != want {
		t.Errorf("after the leader was killed the state differs from an uninterrupted run:\n%s", storetest.LineDiff(want, got))
	}
}
