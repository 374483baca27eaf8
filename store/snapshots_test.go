package store_test

import (
	"context"
	"testing"
	"time"
)

// TestRefreshIfStaleRecomputesSnapshots checks what a migration that adds a
// snapshot figure relies on: with every snapshot day marked stale,
// RefreshIfStale recomputes the figures the seeding computed, and with
// nothing stale it changes nothing.
func TestRefreshIfStaleRecomputesSnapshots(t *testing.T) {
	ctx := context.Background()
	db := maintainedWorld(t)
	now := time.Date(2025, 3, 15, 12, 0, 0, 0, time.UTC)
	dump := func() string {
		t.Helper()
		var rows []string
		if err := db.SelectContext(ctx, &rows, `
			SELECT concat_ws(' ', day, total_deposits, round(deposits_eth, 6), round(withdrawals_eth, 6),
			                 total_withdrawals, total_stakers, round(tvl_eth, 6))
			FROM daily_snapshots ORDER BY day`); err != nil {
			t.Fatal(err)
		}
		if len(rows) < 30 {
			t.Fatalf("%d snapshot days", len(rows))
		}
		out := ""
		for _, r := range rows {
			out += r + "\n"
		}
		return out
	}
	want := dump()
	var deposits int
	if err := db.GetContext(ctx, &deposits, `SELECT total_deposits FROM daily_snapshots ORDER BY day DESC LIMIT 1`); err != nil || deposits == 0 {
		t.Fatalf("latest snapshot has %d deposits (%v)", deposits, err)
	}

	if err := db.RefreshIfStale(ctx, now); err != nil {
		t.Fatal(err)
	}
	if got := dump(); got != want {
		t.Fatalf("a refresh with nothing stale changed the snapshots")
	}

	if _, err := db.ExecContext(ctx, `
		UPDATE daily_snapshots SET total_deposits = 0, deposits_eth = 0, withdrawals_eth = 0;
		UPDATE service_state SET dirty_since = (SELECT min(day)::timestamptz FROM daily_snapshots)`); err != nil {
		t.Fatal(err)
	}
	if err := db.RefreshIfStale(ctx, now); err != nil {
		t.Fatal(err)
	}
	if got := dump(); got != want {
		t.Errorf("recomputed snapshots differ from the seeded ones")
	}
	var stale bool
	if err := db.GetContext(ctx, &stale, `SELECT dirty_since IS NOT NULL FROM service_state`); err != nil || stale {
		t.Errorf("still stale after the refresh (%v)", err)
	}
}
