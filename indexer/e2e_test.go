package indexer

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/lib/pq"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// query runs a one-row query and fails the test on error.
func query(t *testing.T, db *store.DB, dest any, q string, args ...any) {
	t.Helper()
	if err := storetest.SQL(t, db).GetContext(context.Background(), dest, q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func TestIndexScriptedHistoryOnSimulatedChain(t *testing.T) {
	w := newWorld(t)
	w.script()
	now := time.Now().Add(time.Hour).Truncate(time.Second)
	db := storetest.New(t)
	cfg := w.config(now)
	ix := w.index(db, cfg)
	head := w.c.Head(t).Number.Uint64()
	strat1, strat2 := lowerHex(w.strat1.Address), lowerHex(w.strat2.Address)

	// The cursor and head are at the chain's head with its hash.
	cur, ok, err := db.Cursor(context.Background())
	if err != nil || !ok || cur.Block != head || cur.Hash != strings.ToLower(w.c.Head(t).Hash().Hex()) {
		t.Fatalf("cursor = %+v %v %v, chain head %d", cur, ok, err, head)
	}
	var headBlock int64
	query(t, db, &headBlock, `SELECT head_block FROM service_state`)
	if uint64(headBlock) != head {
		t.Errorf("head_block = %d, want %d", headBlock, head)
	}

	// Staker shares: deposits and pod shares minus queued withdrawals (the
	// slashing variant removes sharesToWithdraw, not the scaled shares).
	shares := map[[2]string]string{}
	var rows []struct {
		Staker   string `db:"staker_address"`
		Strategy string `db:"strategy_address"`
		Shares   string `db:"shares"`
	}
	if err := storetest.SQL(t, db).SelectContext(context.Background(), &rows, `SELECT staker_address, strategy_address, shares::text FROM staker_shares`); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		shares[[2]string{r.Staker, r.Strategy}] = r.Shares
	}
	wantShares := map[[2]string]string{
		{lowerHex(w.staker1), strat1}:                       ether(6).String(),
		{lowerHex(w.staker1), chain.BeaconStrategy}:         ether(32).String(),
		{lowerHex(w.staker2), strat2}:                       ether(4).String(),
		{lowerHex(w.staker3), strat1}:                       ether(2).String(),
		{lowerHex(w.staker3), lowerHex(w.newStrat.Address)}: ether(1).String(),
	}
	if len(shares) != len(wantShares) {
		t.Errorf("staker shares = %v, want %v", shares, wantShares)
	}
	for k, v := range wantShares {
		if shares[k] != v {
			t.Errorf("shares of %s in %s = %s, want %s", k[0], k[1], shares[k], v)
		}
	}

	// Delegations: staker1 with op1; staker2 undelegated; staker3 force-undelegated.
	var op sql.NullString
	query(t, db, &op, `SELECT operator_address FROM stakers WHERE address = $1`, lowerHex(w.staker1))
	if op.String != lowerHex(w.op1) {
		t.Errorf("staker1's operator = %v", op)
	}
	for _, s := range []common.Address{w.staker2, w.staker3} {
		query(t, db, &op, `SELECT operator_address FROM stakers WHERE address = $1`, lowerHex(s))
		if op.Valid {
			t.Errorf("staker %s still delegated to %s", s.Hex(), op.String)
		}
	}
	var delegationEvents int
	query(t, db, &delegationEvents, `SELECT count(*) FROM delegation_events`)
	if delegationEvents != 10 {
		var events []string
		if err := storetest.SQL(t, db).SelectContext(context.Background(), &events, `
			SELECT concat_ws(' ', block_number, log_index, type, staker_address, operator_address, strategy_address, shares)
			FROM delegation_events ORDER BY block_number, log_index`); err != nil {
			t.Fatal(err)
		}
		t.Errorf("delegation events = %d, want 10:\n%s", delegationEvents, strings.Join(events, "\n"))
	}

	// Operators and registrations.
	var totalStakers, totalAVS int
	query(t, db, &totalStakers, `SELECT total_stakers FROM operators WHERE address = $1`, lowerHex(w.op1))
	query(t, db, &totalAVS, `SELECT total_avs FROM operators WHERE address = $1`, lowerHex(w.op2))
	if totalStakers != 1 || totalAVS != 1 {
		t.Errorf("op1 stakers = %d (want 1), op2 AVS = %d (want 1)", totalStakers, totalAVS)
	}
	var active []bool
	if err := storetest.SQL(t, db).SelectContext(context.Background(), &active, `
		SELECT is_active FROM avs_operators ORDER BY avs_address = $1 DESC, operator_address = $2 DESC`,
		lowerHex(w.avs1.Address), lowerHex(w.op1)); err != nil {
		t.Fatal(err)
	}
	if len(active) != 3 {
		t.Errorf("registrations = %v, want 3", active)
	}

	// AVS: restakeable strategies read from the service managers; metadata
	// fetched from the URIs.
	var restakeable pq.StringArray
	query(t, db, &restakeable, `SELECT restakeable_strategies FROM avs WHERE address = $1`, lowerHex(w.avs1.Address))
	if strings.Join(restakeable, ",") != strat1+","+chain.BeaconStrategy {
		t.Errorf("avs1 restakeable strategies = %v", restakeable)
	}
	var meta struct {
		Name        string         `db:"metadata_name"`
		Website     sql.NullString `db:"metadata_website"`
		Description sql.NullString `db:"metadata_description"`
		Telegram    sql.NullString `db:"metadata_telegram"`
		X           sql.NullString `db:"metadata_x"`
		URI         sql.NullString `db:"metadata_uri"`
	}
	const metaCols = `SELECT metadata_name, metadata_website, metadata_description, metadata_telegram, metadata_x, metadata_uri`
	query(t, db, &meta, metaCols+` FROM avs WHERE address = $1`, lowerHex(w.avs1.Address))
	if meta.Name != "AVS One" || meta.Website.String != "https://avs1.example" || meta.X.String != "https://x.com/avs1" {
		t.Errorf("avs1 metadata = %+v", meta)
	}
	query(t, db, &meta, metaCols+` FROM avs WHERE address = $1`, lowerHex(w.avs2.Address))
	if meta.Name != "AVS Two" || meta.Telegram.String != "https://t.me/avs2" {
		t.Errorf("avs2 metadata (from the AllocationManager's event) = %+v", meta)
	}
	query(t, db, &meta, metaCols+` FROM operators WHERE address = $1`, lowerHex(w.op1))
	if meta.Name != "Operator One" || meta.Description.Valid {
		t.Errorf("op1 metadata = %+v (a non-string description must be dropped)", meta)
	}
	query(t, db, &meta, metaCols+` FROM operators WHERE address = $1`, lowerHex(w.op2))
	if meta.Name != "" || !strings.HasSuffix(meta.URI.String, "/broken.json") {
		t.Errorf("op2 metadata with a broken document = %+v", meta)
	}
	if s := ix.Metrics().Snapshot(); s.MetadataFetched != 3 || s.MetadataFailed != 1 {
		t.Errorf("metadata fetched %d failed %d, want 3 and 1", s.MetadataFetched, s.MetadataFailed)
	}

	// Withdrawals: the legacy one completed, the slashing one pending.
	var completed []bool
	if err := storetest.SQL(t, db).SelectContext(context.Background(), &completed, `SELECT is_completed FROM withdrawals ORDER BY withdrawal_root`); err != nil {
		t.Fatal(err)
	}
	if len(completed) != 2 || !completed[0] || completed[1] {
		t.Errorf("withdrawals completed = %v, want [true false]", completed)
	}

	// Rewards.
	var forAll []bool
	if err := storetest.SQL(t, db).SelectContext(context.Background(), &forAll, `SELECT for_all FROM rewards_submissions ORDER BY block_number, log_index`); err != nil {
		t.Fatal(err)
	}
	if len(forAll) != 2 || forAll[0] || !forAll[1] {
		t.Errorf("rewards submissions for_all = %v", forAll)
	}

	// Reference data read from the chain and the price source.
	var strat struct {
		Rate       string         `db:"shares_to_underlying"`
		Price      string         `db:"eth_price"`
		Underlying sql.NullString `db:"underlying_token"`
		Symbol     string         `db:"symbol"`
	}
	const stratCols = `SELECT shares_to_underlying::text, eth_price::text, underlying_token, symbol FROM strategies WHERE address = $1`
	query(t, db, &strat, stratCols, strat1)
	if strat.Rate != "1100000000000000000" || strat.Price != "1.05" {
		t.Errorf("strat1 = %+v", strat)
	}
	query(t, db, &strat, stratCols, strat2)
	if strat.Underlying.String != lowerHex(w.token2.Address) || strat.Price != "0.5" {
		t.Errorf("strat2 (underlying read from the chain) = %+v", strat)
	}
	query(t, db, &strat, stratCols, lowerHex(w.newStrat.Address))
	if strat.Rate != "2000000000000000000" || strat.Symbol != "rTEST" || strat.Price != "0.5" {
		t.Errorf("whitelisted strategy (described from the chain) = %+v", strat)
	}
	var token struct {
		Symbol   string `db:"symbol"`
		Decimals int    `db:"decimals"`
		Price    string `db:"eth_price"`
	}
	query(t, db, &token, `SELECT symbol, decimals, eth_price::text FROM tokens WHERE address = $1`, lowerHex(w.rewardToken.Address))
	if token.Symbol != "RWD" || token.Decimals != 6 || token.Price != "0.001" {
		t.Errorf("reward token = %+v", token)
	}
	var supply string
	query(t, db, &supply, `SELECT string_agg(supply::text, ',') FROM eth_supply_observations`)
	if supply != "120450000.5" {
		t.Errorf("recorded ETH supplies %q, want the source's one, once", supply)
	}
	var delay int64
	query(t, db, &delay, `SELECT min_withdrawal_delay_blocks FROM service_state`)
	if delay != 100 {
		t.Errorf("min withdrawal delay = %d, want 100", delay)
	}

	// Progress counters.
	s := ix.Metrics().Snapshot()
	if s.IndexedHead != head || s.Lag() != 0 || s.Blocks != head || s.Batches < head/4 || s.Logs == 0 {
		t.Errorf("metrics = %+v (head %d)", s, head)
	}

	// Indexing again from the cursor changes nothing.
	before := dumpState(t, db)
	w.index(db, cfg)
	if after := dumpState(t, db); after != before {
		t.Errorf("a second run changed the state:\n%s", storetest.LineDiff(before, after))
	}
}

func TestReorgRollsBackToTheCommonAncestor(t *testing.T) {
	w := newWorld(t)
	w.script()
	now := time.Now().Add(time.Hour).Truncate(time.Second)
	db := storetest.New(t)
	cfg := w.config(now)
	w.index(db, cfg)
	oldHead := w.c.Head(t).Number.Uint64()

	// Abandon the last three blocks and build a longer chain on their parent
	// with a different history: op2 stays registered, staker2 redelegates to
	// op1, avs1's metadata moves and staker3 deposits more.
	ancestor, err := w.c.Client.HeaderByNumber(context.Background(), bigU(oldHead-3))
	if err != nil {
		t.Fatal(err)
	}
	w.c.Fork(t, ancestor.Hash())
	w.c.Commit()
	w.c.AVSDirectory.Transact(t, "updateAVSMetadataURI", w.avs1.Address, w.meta.URL+"/avs2.json")
	w.c.DelegationManager.Transact(t, "updateOperatorMetadataURI", w.op1, w.meta.URL+"/op1-v2.json")
	w.c.DelegationManager.Transact(t, "delegate", w.staker2, w.op1)
	w.c.DelegationManager.Transact(t, "increaseOperatorShares", w.op1, w.staker2, w.strat2.Address, ether(4))
	w.c.StrategyManager.Transact(t, "depositV2", w.staker3, w.strat1.Address, ether(3))
	w.c.Commit()
	w.c.AVSDirectory.Transact(t, "updateRegistration", w.op1, w.avs2.Address, uint8(1))
	w.c.Commit()
	w.c.Commit()
	w.c.Commit()
	if h := w.c.Head(t).Number.Uint64(); h <= oldHead {
		t.Fatalf("fork head %d is not past the old head %d", h, oldHead)
	}

	metrics := NewMetrics()
	cfg.Metrics = metrics
	w.index(db, cfg)
	if s := metrics.Snapshot(); s.Reorgs != 1 || s.RolledBack == 0 || s.RolledBack > 3 {
		t.Errorf("reorgs = %d, rolled back %d blocks; want 1 reorg of at most 3 blocks", s.Reorgs, s.RolledBack)
	}
	var name string
	query(t, db, &name, `SELECT metadata_name FROM operators WHERE address = $1`, lowerHex(w.op1))
	if name != "Operator One v2" {
		t.Errorf("op1 name after the reorg = %q", name)
	}

	fresh := w.freshIndex(now)
	if got, want := dumpState(t, db), dumpState(t, fresh); got != want {
		t.Errorf("state after the reorg differs from a fresh index of the winning chain:\n%s", storetest.LineDiff(want, got))
	}
}
