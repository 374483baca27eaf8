package graph_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/store"
)

// TestCountCache checks, on the demo data, that the totals of paged lists
// are counted once per data version and filter: the next page of the same
// lists reads its rows but not their totals again, the answers are those
// of the uncached handler, and a commit that changes a total shows once
// the new version is read.
func TestCountCache(t *testing.T) {
	ctx := context.Background()
	db := demoDB(t)
	cached, readVersion := newEntityCachedClient(t, db)
	plainOpts := testOptions()
	plainOpts.BatchWait = 250 * time.Millisecond
	plain := newClient(t, db, plainOpts)

	const q = `query($skip: Int) {
		operators(take: 2, skip: $skip) {
			data { address delegationEvents(take: 1) { meta { total } } }
			meta { total }
		}
		withdrawals(take: 1, skip: $skip) { meta { total } }
		stakers(take: 1, skip: $skip) { meta { total } }
	}`
	run := func(c *client, skip int) (data string, statements int64) {
		t.Helper()
		before := db.StatementCount()
		res := c.post(q, map[string]any{"skip": skip})
		statements = db.StatementCount() - before
		if len(res.Errors) > 0 {
			t.Fatalf("errors: %+v", res.Errors)
		}
		return string(res.Data), statements
	}
	want0, _ := run(plain, 0)
	want2, plain2 := run(plain, 2)
	got0, _ := run(cached, 0)
	got2, cached2 := run(cached, 2)
	if got0 != want0 || got2 != want2 {
		t.Fatalf("cached answers differ from the uncached ones:\nuncached %s\n         %s\ncached   %s\n         %s", want0, want2, got0, got2)
	}
	// The second page's operators are others, so their event totals are
	// counted; the three list totals are not.
	if plain2-cached2 != 3 {
		t.Errorf("the second page ran %d statements cached and %d uncached; want 3 fewer (the list totals)", cached2, plain2)
	}
	again, cachedAgain := run(cached, 2)
	if again != want2 {
		t.Errorf("repeated page: %s, want %s", again, want2)
	}
	if cachedAgain >= cached2 {
		t.Errorf("the repeated page ran %d statements, the first time %d: its event totals were not kept", cachedAgain, cached2)
	}

	// A new operator, committed: the total stays that of the version read
	// until the new version is, then it is counted again.
	register := chain.Batch{OperatorsRegistered: []chain.OperatorRegistered{{
		Position: chain.Position{BlockNumber: 1 << 40, BlockTime: time.Now().UTC(), TxHash: "0x" + strings.Repeat("cd", 32)},
		Operator: "0x" + strings.Repeat("ee", 20),
	}}}
	if err := db.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.ApplyBatch(ctx, &register); err != nil {
			return err
		}
		return tx.BumpDataVersion(ctx)
	}); err != nil {
		t.Fatal(err)
	}
	total := func(data string) int {
		t.Helper()
		var page struct {
			Operators struct{ Meta struct{ Total int } }
		}
		if err := json.Unmarshal([]byte(data), &page); err != nil {
			t.Fatal(err)
		}
		return page.Operators.Meta.Total
	}
	before := total(want0)
	if stale, _ := run(cached, 0); total(stale) != before {
		t.Errorf("before the new version is read, the cached total changed: %d, was %d", total(stale), before)
	}
	readVersion()
	fresh, _ := run(cached, 0)
	if total(fresh) != before+1 {
		t.Errorf("after the new version was read, the operators' total is %d, want %d", total(fresh), before+1)
	}
	if want, _ := run(plain, 0); fresh != want {
		t.Errorf("after the commit, the cached and uncached answers differ:\nuncached %s\ncached   %s", want, fresh)
	}
}
