package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/stakegraph/stakegraph/indexer/testchain"
	"github.com/stakegraph/stakegraph/internal/freeport"
	"github.com/stakegraph/stakegraph/internal/syncbuffer"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// TestIndexCommandFollowsASimulatedChain runs `stakegraph index` against an
// in-process chain served over HTTP JSON-RPC, with the deployment given by
// --contracts, until it has caught up with blocks mined while it runs; then
// interrupts it.
func TestIndexCommandFollowsASimulatedChain(t *testing.T) {
	c := testchain.New(t)
	strategy, avs := c.Deploy(t), c.Deploy(t)
	c.Commit()
	proxy := testchain.NewProxy(t, c.RPC())
	contracts := c.Contracts()
	file := filepath.Join(t.TempDir(), "contracts.json")
	raw, err := json.Marshal(map[string]any{
		"chainId": 1337, "startBlock": 1,
		"contracts": map[string]string{
			"delegationManager": contracts.DelegationManager, "strategyManager": contracts.StrategyManager,
			"eigenPodManager": contracts.EigenPodManager, "avsDirectory": contracts.AVSDirectory,
			"rewardsCoordinator": contracts.RewardsCoordinator, "allocationManager": contracts.AllocationManager,
		},
		"strategies": []map[string]any{{"symbol": "TST", "address": strings.ToLower(strategy.Address.Hex())}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	op, staker := common.HexToAddress("0x1111111111111111111111111111111111111111"), common.HexToAddress("0x2222222222222222222222222222222222222222")
	c.DelegationManager.Transact(t, "registerOperatorV2", op, common.Address{})
	c.AVSDirectory.Transact(t, "updateAVSMetadataURI", avs.Address, "")
	c.StrategyManager.Transact(t, "depositV2", staker, strategy.Address, big.NewInt(1e18))
	c.Commit()

	url := storetest.NewURL(t)
	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freeport.Get(t))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncbuffer.Buffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"index", "--network", "holesky", "--rpc-url", proxy.URL, "--contracts", file,
			"--confirmations", "1", "--poll-interval", "50ms", "--no-metadata", "--prices", filepath.Join(t.TempDir(), "none.json"),
			"--metrics-addr", metricsAddr},
			func(k string) string { return map[string]string{"DATABASE_URL": url}[k] }, &stdout, &stderr)
	}()

	// Mine while it runs: it must follow, one confirmation behind.
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		waitWhileRunning(t, "index", done, &stderr, what, ok)
	}
	cursorAt := func(block uint64) func() bool {
		return func() bool {
			cur, ok, err := db.Cursor(context.Background())
			return err == nil && ok && cur.Block >= block
		}
	}
	head := c.Head(t).Number.Uint64()
	c.Commit() // one confirmation on top of the events' block
	waitFor("the first catch-up", cursorAt(head))
	c.DelegationManager.Transact(t, "delegate", staker, op)
	c.Commit()
	c.Commit()
	waitFor("the new block", cursorAt(head+2))

	var operator string
	if err := storetest.SQL(t, db).GetContext(context.Background(), &operator, `SELECT operator_address FROM stakers WHERE address = $1`,
		strings.ToLower(staker.Hex())); err != nil || operator != strings.ToLower(op.Hex()) {
		t.Errorf("staker's operator = %q, %v", operator, err)
	}
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"stakegraph_indexer_blocks_total", "stakegraph_indexer_lag_blocks", "stakegraph_indexer_logs_total 4"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}

	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("index exited with %d:\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("index did not stop when interrupted")
	}
}

// waitWhileRunning waits until ok holds, failing the test after a minute
// or when the command named name, whose exit code done delivers, ends
// first; the failure shows the command's stderr.
func waitWhileRunning(t *testing.T, name string, done <-chan int, stderr *syncbuffer.Buffer, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !ok() {
		select {
		case code := <-done:
			t.Fatalf("%s exited with %d while waiting until %s:\n%s", name, code, what, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s:\n%s", what, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// contractsFile writes the --contracts file of c's deployment, without
// strategies.
func contractsFile(t *testing.T, c *testchain.Chain) string {
	t.Helper()
	contracts := c.Contracts()
	file := filepath.Join(t.TempDir(), "contracts.json")
	raw, err := json.Marshal(map[string]any{
		"chainId": 1337, "startBlock": 1, "strategies": []any{},
		"contracts": map[string]string{
			"delegationManager": contracts.DelegationManager, "strategyManager": contracts.StrategyManager,
			"eigenPodManager": contracts.EigenPodManager, "avsDirectory": contracts.AVSDirectory,
			"rewardsCoordinator": contracts.RewardsCoordinator, "allocationManager": contracts.AllocationManager,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestServeIndexRunsTheIndexerInTheServer runs `serve --index` against a
// simulated chain: the server answers, the index fills and the indexer's
// metrics are on the admin listener.
func TestServeIndexRunsTheIndexerInTheServer(t *testing.T) {
	c := testchain.New(t)
	c.Commit()
	proxy := testchain.NewProxy(t, c.RPC())
	file := contractsFile(t, c)
	c.DelegationManager.Transact(t, "registerOperatorV2", common.HexToAddress("0x3333333333333333333333333333333333333333"), common.Address{})
	c.Commit()
	head := c.Head(t).Number.Uint64()

	url := storetest.NewURL(t)
	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	addr := fmt.Sprintf("127.0.0.1:%d", freeport.Get(t))
	adminAddr := fmt.Sprintf("127.0.0.1:%d", freeport.Get(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncbuffer.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--network", "holesky", "--addr", addr, "--admin-addr", adminAddr,
			"--index", "--rpc-url", proxy.URL, "--contracts", file, "--confirmations", "0", "--poll-interval", "50ms",
			"--no-metadata", "--prices", filepath.Join(t.TempDir(), "none.json")},
			func(k string) string { return map[string]string{"DATABASE_URL": url}[k] }, &stdout, &stderr)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		cur, ok, err := db.Cursor(context.Background())
		if err == nil && ok && cur.Block >= head {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited with %d:\n%s", code, stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the index never reached block %d:\n%s", head, stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = http.Get("http://" + adminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"stakegraph_indexer_indexed_block", "stakegraph_indexer_logs_total 1", "stakegraph_http_requests_total",
		`stakegraph_graphql_fast_path_runs_total{path="compiled",result="answered"}`,
		`stakegraph_graphql_fast_path_runs_total{path="interpreted",result="declined"}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("admin /metrics lacks %q", want)
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("serve exited with %d:\n%s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve --index did not stop when interrupted")
	}
}

// TestServeIndexOnTwoInstancesElectsOneIndexer runs two `serve --index`
// instances on one database: one indexes and says so on its /metrics, the
// other stands by; when the indexing one stops, the other takes over and
// follows the chain.
func TestServeIndexOnTwoInstancesElectsOneIndexer(t *testing.T) {
	c := testchain.New(t)
	c.Commit()
	proxy := testchain.NewProxy(t, c.RPC())
	file := contractsFile(t, c)
	c.DelegationManager.Transact(t, "registerOperatorV2", common.HexToAddress("0x3333333333333333333333333333333333333333"), common.Address{})
	c.Commit()

	url := storetest.NewURL(t)
	db, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	type instance struct {
		admin  string
		cancel context.CancelFunc
		done   chan int
		stderr *syncbuffer.Buffer
	}
	start := func() *instance {
		in := &instance{admin: fmt.Sprintf("127.0.0.1:%d", freeport.Get(t)), done: make(chan int, 1), stderr: new(syncbuffer.Buffer)}
		ctx, cancel := context.WithCancel(context.Background())
		in.cancel = cancel
		var stdout syncbuffer.Buffer
		go func() {
			in.done <- run(ctx, []string{"serve", "--network", "holesky", "--addr", fmt.Sprintf("127.0.0.1:%d", freeport.Get(t)), "--admin-addr", in.admin,
				"--index", "--rpc-url", proxy.URL, "--contracts", file, "--confirmations", "0", "--poll-interval", "50ms",
				"--leader-retry", "50ms", "--no-metadata", "--prices", filepath.Join(t.TempDir(), "none.json")},
				func(k string) string { return map[string]string{"DATABASE_URL": url}[k] }, &stdout, in.stderr)
		}()
		t.Cleanup(func() {
			cancel()
			select {
			case <-in.done:
			case <-time.After(30 * time.Second):
				t.Error("serve --index did not stop when interrupted")
			}
		})
		return in
	}
	leads := func(in *instance) bool {
		resp, err := http.Get("http://" + in.admin + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return strings.Contains(string(body), `stakegraph_leader{role="indexer"} 1`)
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	cursorAt := func(block uint64) func() bool {
		return func() bool {
			cur, ok, err := db.Cursor(context.Background())
			return err == nil && ok && cur.Block >= block
		}
	}

	a, b := start(), start()
	waitFor("the index reaches the head", cursorAt(c.Head(t).Number.Uint64()))
	waitFor("one instance leads", func() bool { return leads(a) != leads(b) })
	leader, standby := a, b
	if leads(b) {
		leader, standby = b, a
	}
	waitFor("the other instance says it stands by", func() bool { return strings.Contains(standby.stderr.String(), "standing by") })

	leader.cancel()
	if code := <-leader.done; code != exitOK {
		t.Fatalf("the leader exited with %d:\n%s", code, leader.stderr.String())
	}
	leader.done <- exitOK // for the cleanup
	waitFor("the standby instance leads", func() bool { return leads(standby) })
	c.DelegationManager.Transact(t, "registerOperatorV2", common.HexToAddress("0x4444444444444444444444444444444444444444"), common.Address{})
	c.Commit()
	waitFor("the new leader indexes the new block", cursorAt(c.Head(t).Number.Uint64()))
	if !strings.Contains(standby.stderr.String(), "elected leader") {
		t.Errorf("the new leader's log does not say it was elected:\n%s", standby.stderr.String())
	}
}
