package indexer

import (
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/stakegraph/stakegraph/indexer/testchain"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// driveUntilCaughtUp runs steps the way Run does, retrying failed steps,
// and checks after every failure that the cursor did not move (a failed
// step writes nothing). It returns the number of failed steps.
func driveUntilCaughtUp(t *testing.T, ix *Indexer, db *store.DB) int {
	t.Helper()
	ctx := context.Background()
	failures := 0
	for i := 0; ; i++ {
		if i > 500 {
			t.Fatal("no progress after 500 steps")
		}
		before, _, err := db.Cursor(ctx)
		if err != nil {
			t.Fatal(err)
		}
		advanced, err := ix.Step(ctx)
		if err != nil {
			failures++
			after, _, cerr := db.Cursor(ctx)
			if cerr != nil {
				t.Fatal(cerr)
			}
			if after != before {
				t.Fatalf("a failed step moved the cursor from %+v to %+v: %v", before, after, err)
			}
			continue
		}
		if !advanced {
			if err := ix.maintain(ctx); err != nil {
				failures++
				continue
			}
			return failures
		}
	}
}

func TestNodeFailuresAreRetriedAndWriteNoPartialState(t *testing.T) {
	w := newWorld(t)
	w.script()
	now := time.Now().Add(time.Hour).Truncate(time.Second)

	// Faults at chosen moments: a provider's "too many results" refusal, rate
	// limits, server errors, a malformed body, hung calls (longer than the
	// call timeout), and a burst of failures longer than the retries.
	w.proxy.SetFault(func(method string, n int, _ []json.RawMessage) testchain.Fault {
		switch {
		case method == "eth_getLogs" && n == 1:
			return testchain.Fault{RPCError: "query returned more than 10000 results", RPCErrorCode: -32005}
		case method == "eth_getLogs" && n == 3:
			return testchain.Fault{Status: http.StatusTooManyRequests}
		case method == "eth_getLogs" && n == 5:
			return testchain.Fault{Stall: 2 * time.Second}
		case method == "eth_getLogs" && n >= 8 && n <= 13:
			return testchain.Fault{Status: http.StatusServiceUnavailable}
		case method == "eth_getBlockByNumber" && n == 4:
			return testchain.Fault{Status: http.StatusBadGateway}
		case method == "eth_getBlockByNumber" && n == 9:
			return testchain.Fault{Malformed: true}
		case method == "eth_getBlockByNumber" && n == 12:
			return testchain.Fault{RPCError: "header not found", RPCErrorCode: -32000}
		case method == "eth_blockNumber" && n == 6:
			return testchain.Fault{Stall: 2 * time.Second}
		case method == "eth_call" && n == 3:
			return testchain.Fault{Status: http.StatusInternalServerError}
		case method == "eth_chainId" && n == 1:
			return testchain.Fault{Malformed: true}
		}
		return testchain.Fault{}
	})
	db := storetest.New(t)
	metrics := NewMetrics()
	cfg := w.config(now)
	cfg.Metrics = metrics
	node, err := Dial(context.Background(), w.proxy.URL, NodeOptions{
		CallTimeout: 500 * time.Millisecond,
		Retry:       RetryPolicy{Attempts: 3, Initial: time.Millisecond, Max: 5 * time.Millisecond},
		Metrics:     metrics,
		Logger:      cfg.Logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	ix, err := New(db, node, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Setup(context.Background()); err != nil {
		t.Fatalf("setup (a malformed chain id answer is retried): %v", err)
	}
	failures := driveUntilCaughtUp(t, ix, db)
	if err := ix.FetchMetadata(context.Background()); err != nil {
		t.Fatal(err)
	}
	if failures == 0 {
		t.Error("the burst of 503s longer than the retries failed no step")
	}
	s := metrics.Snapshot()
	if s.RPCErrors["eth_getLogs"] < 8 || s.RPCErrors["eth_getBlockByNumber"] < 3 || s.RPCErrors["eth_call"] < 1 ||
		s.RPCErrors["eth_blockNumber"] < 1 || s.RPCErrors["eth_chainId"] < 1 {
		t.Errorf("rpc errors = %v", s.RPCErrors)
	}
	w.proxy.SetFault(nil)
	want := dumpState(t, w.freshIndex(now))
	if got := dumpState(t, db); got != want {
		t.Errorf("state after node failures differs from an undisturbed index:\n%s", storetest.LineDiff(want, got))
	}
}

func TestAdaptiveRangeShrinksOnRefusalAndGrowsBack(t *testing.T) {
	w := newWorld(t)
	w.script()
	for range 40 {
		w.c.Commit()
	}
	now := time.Now().Add(time.Hour).Truncate(time.Second)
	want := dumpState(t, w.freshIndex(now))

	// The node refuses any range wider than 2 blocks, as providers with a
	// block-range cap do, and records the widest range it answered.
	var widest, refused atomic.Int64
	w.proxy.SetFault(func(method string, _ int, params []json.RawMessage) testchain.Fault {
		if method != "eth_getLogs" {
			return testchain.Fault{}
		}
		var q []struct {
			FromBlock hexutil.Uint64 `json:"fromBlock"`
			ToBlock   hexutil.Uint64 `json:"toBlock"`
		}
		raw, _ := json.Marshal(params)
		if err := json.Unmarshal(raw, &q); err != nil || len(q) != 1 {
			t.Errorf("eth_getLogs params %s: %v", raw, err)
			return testchain.Fault{}
		}
		width := int64(q[0].ToBlock - q[0].FromBlock + 1)
		if width > 2 {
			refused.Add(1)
			return testchain.Fault{RPCError: "block range too large: maximum 2 blocks", RPCErrorCode: -32600}
		}
		for {
			old := widest.Load()
			if width <= old || widest.CompareAndSwap(old, width) {
				break
			}
		}
		return testchain.Fault{}
	})
	db := storetest.New(t)
	cfg := w.config(now)
	cfg.InitialRange, cfg.MaxRange = 16, 64
	ix := w.index(db, cfg)
	if refused.Load() == 0 || widest.Load() != 2 {
		t.Errorf("refused %d queries, widest answered range %d; want refusals and ranges of 2", refused.Load(), widest.Load())
	}
	if got := dumpState(t, db); got != want {
		t.Errorf("state indexed through a range-capped node differs:\n%s", storetest.LineDiff(want, got))
	}

	// Small results grow the range back up to MaxRange; a crowded batch
	// halves it.
	for range 10 {
		ix.adaptRange(0)
	}
	if ix.rangeSize != 64 {
		t.Errorf("range after empty batches = %d, want the maximum 64", ix.rangeSize)
	}
	ix.adaptRange(cfg.TargetLogs*4 + 1)
	if ix.rangeSize != 32 {
		t.Errorf("range after a crowded batch = %d, want 32", ix.rangeSize)
	}
}
