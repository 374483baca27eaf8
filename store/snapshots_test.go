package store_test

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
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
		if err := storetest.SQL(t, db).SelectContext(ctx, &rows, `
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
	if err := storetest.SQL(t, db).GetContext(ctx, &deposits, `SELECT total_deposits FROM daily_snapshots ORDER BY day DESC LIMIT 1`); err != nil || deposits == 0 {
		t.Fatalf("latest snapshot has %d deposits (%v)", deposits, err)
	}

	if err := db.RefreshIfStale(ctx, now); err != nil {
		t.Fatal(err)
	}
	if got := dump(); got != want {
		t.Fatalf("a refresh with nothing stale changed the snapshots")
	}

	if _, err := storetest.SQL(t, db).ExecContext(ctx, `
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
	if err := storetest.SQL(t, db).GetContext(ctx, &stale, `SELECT dirty_since IS NOT NULL FROM service_state`); err != nil || stale {
		t.Errorf("still stale after the refresh (%v)", err)
	}
}

// TestOperatorDaysEndAtTheOperators checks the event-derived history of
// every operator against the state the indexer derives: its last day has
// the operator's TVL, stakers and AVS.
func TestOperatorDaysEndAtTheOperators(t *testing.T) {
	ctx := context.Background()
	db := maintainedWorld(t)
	var ops []struct {
		Address string  `db:"address"`
		TVL     float64 `db:"tvl_eth"`
		Stakers int     `db:"total_stakers"`
		AVS     int     `db:"total_avs"`
	}
	if err := storetest.SQL(t, db).SelectContext(ctx, &ops, `SELECT address, tvl_eth::float8 AS tvl_eth, total_stakers, total_avs FROM operators ORDER BY address`); err != nil {
		t.Fatal(err)
	}
	addrs := make([]string, len(ops))
	for i, o := range ops {
		addrs[i] = o.Address
	}
	days, err := db.OperatorDays(ctx, addrs)
	if err != nil {
		t.Fatal(err)
	}
	last := map[string]store.OperatorDay{}
	for i, d := range days {
		if i > 0 && days[i-1].Operator == d.Operator && !days[i-1].Day.Before(d.Day) {
			t.Fatalf("operator %s: days out of order at %s", d.Operator, d.Day)
		}
		last[d.Operator] = d
	}
	checked := 0
	for _, o := range ops {
		d := last[o.Address]
		tvl, _ := strconv.ParseFloat(d.TVLETH, 64)
		if d.TVLETH == "" {
			tvl = 0
		}
		if math.Abs(tvl-o.TVL) > 1e-9*math.Max(1, o.TVL) || d.Stakers != o.Stakers || d.AVS != o.AVS {
			t.Errorf("operator %s: history ends at tvl %v, %d stakers, %d AVS; the operator has %v, %d, %d",
				o.Address, tvl, d.Stakers, d.AVS, o.TVL, o.Stakers, o.AVS)
		}
		if o.Stakers > 0 && o.AVS > 0 {
			checked++
		}
	}
	if checked < 10 {
		t.Errorf("only %d operators with stakers and AVS", checked)
	}
}

// TestETHSupplyObservations checks that RecordETHSupply keeps one row per
// change, refuses a supply that is not positive, and that each snapshot
// day divides its TVL by the supply recorded last by the end of that day
// (the first one before any was recorded).
func TestETHSupplyObservations(t *testing.T) {
	ctx := context.Background()
	db := maintainedWorld(t)
	storetest.SQL(t, db).MustExec(`DELETE FROM eth_supply_observations`)
	trio, err := db.LatestSnapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if trio.Latest.RestakingRatio != "" || trio.Latest.ETHSupply != "" {
		t.Fatalf("no supply recorded, yet ratio %q of supply %q", trio.Latest.RestakingRatio, trio.Latest.ETHSupply)
	}
	day := trio.Latest.Day
	record := func(at time.Time, supply string) error {
		return db.InTx(ctx, func(tx *store.Tx) error { return tx.RecordETHSupply(ctx, at, supply) })
	}
	for _, o := range []struct {
		at     time.Time
		supply string
	}{
		{day.Add(-36 * time.Hour), "120000000"},
		{day.Add(-30 * time.Hour), "120000000.0"}, // no change: no row
		{day.Add(-2 * time.Hour), "120000100.5"},  // by the end of the day before
		{day.Add(3 * time.Hour), "120000200"},
	} {
		if err := record(o.at, o.supply); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []string{"0", "-1"} {
		if err := record(day, bad); err == nil {
			t.Errorf("supply %s recorded", bad)
		}
	}
	var rows int
	if err := storetest.SQL(t, db).GetContext(ctx, &rows, `SELECT count(*) FROM eth_supply_observations`); err != nil || rows != 3 {
		t.Errorf("%d observations (%v); want 3", rows, err)
	}
	trio, err = db.LatestSnapshots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		snap   store.DailySnapshot
		supply float64
	}{
		{"latest", trio.Latest, 120000200},
		{"day before", trio.DayBefore, 120000100.5},
		{"week before", trio.WeekBefore, 120000000},
	} {
		if got, _ := strconv.ParseFloat(tc.snap.ETHSupply, 64); got != tc.supply {
			t.Errorf("%s: supply %q, want %v", tc.name, tc.snap.ETHSupply, tc.supply)
		}
		tvl, _ := strconv.ParseFloat(tc.snap.TVLETH, 64)
		ratio, _ := strconv.ParseFloat(tc.snap.RestakingRatio, 64)
		if want := tvl / tc.supply; math.Abs(ratio-want) > 1e-15 || ratio <= 0 {
			t.Errorf("%s: ratio %q, want %v / %v = %v", tc.name, tc.snap.RestakingRatio, tvl, tc.supply, want)
		}
	}
}

// TestAVSDaysEndAtTheAVS checks the event-derived history of every AVS
// against the figures the refresh derives: its last day has the AVS's TVL,
// stakers and operators.
func TestAVSDaysEndAtTheAVS(t *testing.T) {
	ctx := context.Background()
	db := maintainedWorld(t)
	var avs []struct {
		Address   string  `db:"address"`
		TVL       float64 `db:"tvl_eth"`
		Stakers   int     `db:"total_stakers"`
		Operators int     `db:"total_operators"`
	}
	if err := storetest.SQL(t, db).SelectContext(ctx, &avs, `SELECT address, tvl_eth::float8 AS tvl_eth, total_stakers, total_operators FROM avs ORDER BY address`); err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, a := range avs {
		days, err := db.AVSDays(ctx, a.Address)
		if err != nil {
			t.Fatal(err)
		}
		var last store.AVSDay
		for i, d := range days {
			if i > 0 && !days[i-1].Day.Before(d.Day) {
				t.Fatalf("AVS %s: days out of order at %s", a.Address, d.Day)
			}
			last = d
		}
		tvl, _ := strconv.ParseFloat(last.TVLETH, 64)
		if math.Abs(tvl-a.TVL) > 1e-9*math.Max(1, a.TVL) || last.Stakers != a.Stakers || last.Operators != a.Operators {
			t.Errorf("AVS %s: history ends at tvl %v, %d stakers, %d operators; the AVS has %v, %d, %d",
				a.Address, tvl, last.Stakers, last.Operators, a.TVL, a.Stakers, a.Operators)
		}
		if a.Stakers > 0 && a.Operators > 0 && len(days) > 10 {
			checked++
		}
	}
	if checked < 3 {
		t.Errorf("only %d AVS with stakers, operators and a history", checked)
	}
}
