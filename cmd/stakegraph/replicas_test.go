package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/stakegraph/stakegraph/indexer/testchain"
	"github.com/stakegraph/stakegraph/internal/freeport"
	"github.com/stakegraph/stakegraph/internal/syncbuffer"
	"github.com/stakegraph/stakegraph/localpg"
	"github.com/stakegraph/stakegraph/store"
)

// localCluster starts a PostgreSQL cluster of the test's own on a free port,
// a streaming replica of primaryURL when it is set, and stops it when the
// test ends.
func localCluster(t *testing.T, replicaOf string) (*localpg.Cluster, localpg.Options) {
	t.Helper()
	// The postgres OS user must reach the directory (t.TempDir is 0700).
	base, err := os.MkdirTemp("", "stakegraph-replica-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := localpg.Options{Dir: filepath.Join(base, "pg"), Port: freeport.Get(t), Fast: true, ReplicaOf: replicaOf}
	cluster, err := localpg.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := localpg.StopDir(ctx, opts.Dir, nil); err != nil {
			t.Errorf("stop %s: %v", opts.Dir, err)
		}
		os.RemoveAll(base)
	})
	return cluster, opts
}

// primaryAndReplica starts a primary with a migrated stakegraph database
// of network, and a streaming replica of it, each a cluster of the test's
// own. It returns their database URLs, a handle on the primary's database
// and the replica's options (to stop and start it again).
func primaryAndReplica(t *testing.T, network string) (primaryURL, replicaURL string, db *store.DB, replica localpg.Options) {
	t.Helper()
	ctx := context.Background()
	primary, _ := localCluster(t, "")
	if err := primary.EnsureDatabase(ctx, "stakegraph"); err != nil {
		t.Fatal(err)
	}
	primaryURL = primary.URL("stakegraph")
	db, err := store.Open(ctx, primaryURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.EnsureNetwork(ctx, network); err != nil {
		t.Fatal(err)
	}
	cluster, opts := localCluster(t, primary.URL("postgres"))
	return primaryURL, cluster.URL("stakegraph"), db, opts
}

// TestServeReadsFromReplicas runs `serve --index --replica-url` on a
// primary and its streaming replica: the indexer writes to the primary, the
// API reads from the replica (what it answers follows the replica's
// replay, and the cache with it), and when the replica stops, reads move
// to the primary, and back when it returns.
func TestServeReadsFromReplicas(t *testing.T) {
	ctx := context.Background()
	primaryURL, replicaURL, db, replicaOpts := primaryAndReplica(t, "holesky")
	many := 1_000_000 // requests a minute: the load below must not be limited
	key, err := db.CreateAPIKey(ctx, "replica-test", &many)
	if err != nil {
		t.Fatal(err)
	}
	replicaSQL, err := sql.Open("postgres", replicaURL)
	if err != nil {
		t.Fatal(err)
	}
	defer replicaSQL.Close()

	c := testchain.New(t)
	c.Commit()
	proxy := testchain.NewProxy(t, c.RPC())
	file := contractsFile(t, c)
	first, second := common.HexToAddress("0x5555555555555555555555555555555555555555"), common.HexToAddress("0x6666666666666666666666666666666666666666")
	c.DelegationManager.Transact(t, "registerOperatorV2", first, common.Address{})
	c.Commit()

	addr, admin := fmt.Sprintf("127.0.0.1:%d", freeport.Get(t)), fmt.Sprintf("127.0.0.1:%d", freeport.Get(t))
	runCtx, cancel := context.WithCancel(ctx)
	var stdout, stderr syncbuffer.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(runCtx, []string{"serve", "--network", "holesky", "--addr", addr, "--admin-addr", admin,
			"--replica-url", replicaURL,
			"--index", "--rpc-url", proxy.URL, "--contracts", file, "--confirmations", "0", "--poll-interval", "50ms",
			"--no-metadata", "--prices", filepath.Join(t.TempDir(), "none.json")},
			func(k string) string {
				return map[string]string{"DATABASE_URL": primaryURL, "STAKEGRAPH_LOG_LEVEL": "warn"}[k]
			}, &stdout, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})
	base := "http://" + addr
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		waitWhileRunning(t, "serve", done, &stderr, what, ok)
	}
	lists := func(operator common.Address) func() bool {
		return func() bool {
			code, body := statusWithKey(t, base, "/operators", key)
			return code == http.StatusOK && strings.Contains(body, strings.ToLower(operator.Hex()))
		}
	}
	readsBy := func(database string) int {
		res, err := http.Get("http://" + admin + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		m := regexp.MustCompile(`stakegraph_db_read_requests_total\{database="` + database + `"\} (\d+)`).FindSubmatch(body)
		if m == nil {
			t.Fatalf("admin /metrics lack the reads of %s:\n%s", database, body)
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	cursorAtHead := func() bool {
		cur, ok, err := db.Cursor(ctx)
		return err == nil && ok && cur.Block >= c.Head(t).Number.Uint64()
	}

	waitFor("serve answers", func() bool {
		res, err := http.Get(base + "/healthz")
		if err == nil {
			res.Body.Close()
		}
		return err == nil
	})
	// The indexer writes to the primary; the API reads from the replica.
	waitFor("the first operator is listed", lists(first))
	if n := readsBy("primary"); n != 0 || readsBy("replica1") == 0 {
		t.Errorf("reads: primary %d, replica %d; want all on the replica", n, readsBy("replica1"))
	}

	// While the replica's replay is paused, the API answers what the
	// replica holds, although the primary has more.
	if _, err := replicaSQL.ExecContext(ctx, `SELECT pg_wal_replay_pause()`); err != nil {
		t.Fatal(err)
	}
	c.DelegationManager.Transact(t, "registerOperatorV2", second, common.Address{})
	c.Commit()
	waitFor("the primary holds the new block", cursorAtHead)
	time.Sleep(100 * time.Millisecond) // a poll or two of the replica
	if lists(second)() {
		t.Fatal("the API lists an operator the paused replica has not replayed")
	}
	if _, err := replicaSQL.ExecContext(ctx, `SELECT pg_wal_replay_resume()`); err != nil {
		t.Fatal(err)
	}
	waitFor("the replica's replay shows the second operator", lists(second))

	// The replica stops under load: reads move to the primary, and only
	// requests in flight on the replica when it stopped fail (at most one
	// per client).
	const clients = 4
	var (
		mu           sync.Mutex
		statuses     = map[int]int{}
		stopped      = make(chan struct{})
		finish       = make(chan struct{})
		afterStopped atomic.Int64
		sent         atomic.Int64
		wg           sync.WaitGroup
	)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-finish:
					return
				default:
				}
				// A page of its own for each request: no cache hit, every
				// request reads the database.
				code, _, _ := getWithKey(t, fmt.Sprintf("%s/operators?take=1&skip=%d", base, sent.Add(1)), key)
				mu.Lock()
				statuses[code]++
				mu.Unlock()
				select {
				case <-stopped:
					afterStopped.Add(1)
				default:
				}
			}
		}()
	}
	waitFor("load on the replica", func() bool { return sent.Load() > 20 })
	replicaSQL.Close()
	if _, err := localpg.StopDir(ctx, replicaOpts.Dir, nil); err != nil {
		t.Fatal(err)
	}
	close(stopped)
	waitFor("reads move to the primary", func() bool { return afterStopped.Load() > 100 && readsBy("primary") > 0 })
	close(finish)
	wg.Wait()
	if statuses[http.StatusServiceUnavailable] > clients || len(statuses) > 2 || statuses[http.StatusOK] == 0 {
		t.Errorf("statuses under load while the replica stopped: %v; want 200s and at most %d × 503", statuses, clients)
	}
	t.Logf("statuses under load while the replica stopped: %v", statuses)
	waitFor("/readyz says the replica is unreachable", func() bool {
		code, body := statusWithKey(t, base, "/readyz", key)
		return code == http.StatusOK && strings.Contains(body, `"replica1":"unreachable"`) && strings.Contains(body, `"primary":"ok"`)
	})

	// The replica returns: reads go back to it.
	if _, err := localpg.Start(ctx, replicaOpts); err != nil {
		t.Fatal(err)
	}
	waitFor("reads return to the replica", func() bool {
		before := readsBy("replica1")
		statusWithKey(t, base, "/operators?take=2", key)
		return readsBy("replica1") > before
	})
	if code, body := statusWithKey(t, base, "/readyz", key); code != http.StatusOK || !strings.Contains(body, `"replica1":"ok"`) {
		t.Errorf("/readyz with the replica back: %d %s", code, body)
	}
}

func TestReplicaURLsFlagReplacesTheEnvironment(t *testing.T) {
	fromEnv := urlList{urls: []string{"postgres://env-1", "postgres://env-2"}}
	if got := fromEnv.String(); got != "postgres://env-1,postgres://env-2" {
		t.Errorf("without the flag: %s", got)
	}
	for _, v := range []string{"postgres://flag-1", "postgres://flag-2"} {
		if err := fromEnv.Set(v); err != nil {
			t.Fatal(err)
		}
	}
	if got := fromEnv.String(); got != "postgres://flag-1,postgres://flag-2" {
		t.Errorf("with the flag twice: %s; want the flag's URLs only", got)
	}
	if err := fromEnv.Set(""); err == nil {
		t.Error("an empty URL was accepted")
	}
}
