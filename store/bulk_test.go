package store_test

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// indexSet lists the indexes of the large event tables.
func indexSet(t *testing.T, db *store.DB) string {
	t.Helper()
	return query(t, db, `
		SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes
		WHERE tablename IN ('delegation_events', 'deposits', 'pod_share_events', 'withdrawals')`)
}

func TestBulkLoadRebuildsIndexesAndKeepsData(t *testing.T) {
	ctx := context.Background()
	want := storetest.New(t)
	loadScenario(t, want, scenario())

	db := storetest.New(t)
	before := indexSet(t, db)
	var during string
	err := db.BulkLoad(ctx, func(ctx context.Context) error {
		during = indexSet(t, db)
		loadScenario(t, db, scenario())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if during == before {
		t.Errorf("no index was suspended during the load: %s", during)
	}
	if after := indexSet(t, db); after != before {
		t.Errorf("indexes after the load:\n%s\nwant:\n%s", after, before)
	}
	if g, w := entityState(t, db), entityState(t, want); g != w {
		t.Errorf("state after a bulk load:\n%s\nwant:\n%s", g, w)
	}
}

func TestBulkLoadRestoresIndexesWhenTheLoadFails(t *testing.T) {
	ctx := context.Background()
	db := storetest.New(t)
	before := indexSet(t, db)
	boom := errors.New("boom")
	if err := db.BulkLoad(ctx, func(context.Context) error { return boom }); !errors.Is(err, boom) {
		t.Fatalf("BulkLoad error = %v, want the load's", err)
	}
	if after := indexSet(t, db); after != before {
		t.Errorf("indexes after a failed load:\n%s\nwant:\n%s", after, before)
	}
}

// A bulk load killed before it rebuilt its indexes leaves them recorded;
// the next migrate rebuilds them.
func TestMigrateRebuildsIndexesOfADeadBulkLoad(t *testing.T) {
	ctx := context.Background()
	db := storetest.New(t)
	before := indexSet(t, db)
	for _, stmt := range []string{
		`INSERT INTO suspended_indexes SELECT indexname, indexdef FROM pg_indexes WHERE indexname = 'delegation_events_tx_idx'`,
		`DROP INDEX delegation_events_tx_idx`,
	} {
		if _, err := storetest.SQL(t, db).ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	if indexSet(t, db) == before {
		t.Fatal("the index was not dropped")
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if after := indexSet(t, db); after != before {
		t.Errorf("indexes after migrate:\n%s\nwant:\n%s", after, before)
	}
}

// Concurrent migrators of one fresh database serialise on the migration
// lock instead of colliding.
func TestConcurrentMigrate(t *testing.T) {
	url := storetest.NewEmptyURL(t)
	ctx := context.Background()
	errs := make(chan error, 3)
	for i := 0; i < 3; i++ {
		go func() {
			db, err := store.Open(ctx, url)
			if err != nil {
				errs <- err
				return
			}
			defer db.Close()
			errs <- db.Migrate(ctx)
		}()
	}
	for i := 0; i < 3; i++ {
		if err := <-errs; err != nil {
			t.Errorf("migrate %d: %v", i, err)
		}
	}
}

// The address and hash domains accept exactly lowercase 0x-hex of the right
// length.
func TestAddressAndHashDomains(t *testing.T) {
	db := storetest.New(t)
	ctx := context.Background()
	for _, c := range []struct {
		value, domain string
		ok            bool
	}{
		{"0x" + strings.Repeat("ab", 20), "address", true},
		{"0x" + strings.Repeat("AB", 20), "address", false},
		{"0x" + strings.Repeat("ab", 19), "address", false},
		{"0x" + strings.Repeat("ab", 21), "address", false},
		{"0x" + strings.Repeat("g", 40), "address", false},
		{"1x" + strings.Repeat("a", 40), "address", false},
		{"0x" + strings.Repeat("0", 64), "hash32", true},
		{"0x" + strings.Repeat("0", 63) + "\n", "hash32", false},
		{"0x" + strings.Repeat("0", 62), "hash32", false},
	} {
		_, err := storetest.SQL(t, db).ExecContext(ctx, `SELECT $1::`+c.domain, c.value)
		if (err == nil) != c.ok {
			t.Errorf("%q::%s accepted = %v, want %v (%v)", c.value, c.domain, err == nil, c.ok, err)
		}
	}
}

// A BulkApplier leaves the state that ApplyBatch does, including a staker
// undelegated, a position withdrawn to zero and a completed withdrawal.
func TestBulkApplyMatchesApplyBatch(t *testing.T) {
	later := chain.Batch{
		Delegations: []chain.DelegationEvent{
			{Position: pos(30, 0), Type: chain.Undelegation, Staker: staker2, Operator: opTwo},
			{Position: pos(30, 1), Type: chain.SharesDecreased, Staker: staker2, Operator: opTwo, Strategy: stETH, Shares: eth(5)},
		},
		WithdrawalsQueued: []chain.WithdrawalQueued{
			{Position: pos(30, 2), Root: "0x00000000000000000000000000000000000000000000000000000000000000f2", Nonce: big.NewInt(0),
				Staker: staker2, DelegatedTo: opTwo, StartBlock: 30, Strategies: []string{stETH}, Shares: []*big.Int{eth(5)}},
		},
		Head: pos(31, 0),
	}
	want := storetest.New(t)
	loadScenario(t, want, scenario(), later)

	got := storetest.New(t)
	loadScenarioWith(t, got, true, func(ctx context.Context, _ *store.Tx, a *store.BulkApplier) error {
		for _, b := range []chain.Batch{scenario(), later} {
			if err := a.Apply(ctx, &b); err != nil {
				return err
			}
		}
		return a.Finish(ctx)
	})
	if g, w := entityState(t, got), entityState(t, want); g != w {
		t.Errorf("state after BulkApply:\n%s\nwant:\n%s", g, w)
	}
	if n := query(t, got, `SELECT count(*)::text FROM staker_shares WHERE staker_address = $1`, staker2); n != "0" {
		t.Errorf("%s staker shares left for a staker who withdrew everything", n)
	}
}

// A bulk load turns autovacuum off on the large tables and back on at the
// end; a load that dies leaves it off, and the next migrate turns it on.
func TestBulkLoadSuspendsAutovacuum(t *testing.T) {
	ctx := context.Background()
	db := storetest.New(t)
	off := func() string {
		return query(t, db, `
			SELECT COALESCE(string_agg(relname, ',' ORDER BY relname), '') FROM pg_class
			WHERE reloptions @> '{autovacuum_enabled=false}'`)
	}
	var during string
	if err := db.BulkLoad(ctx, func(context.Context) error { during = off(); return nil }); err != nil {
		t.Fatal(err)
	}
	if want := "delegation_events,deposits,pod_share_events,staker_shares,stakers,withdrawals"; during != want {
		t.Errorf("autovacuum off during the load for %q, want %q", during, want)
	}
	if after := off(); after != "" {
		t.Errorf("autovacuum still off after the load for %q", after)
	}

	if _, err := storetest.SQL(t, db).ExecContext(ctx, `ALTER TABLE deposits SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if after := off(); after != "" {
		t.Errorf("autovacuum still off after migrate for %q", after)
	}
}

// upperCased returns b with the hex of the addresses and hashes of its
// large event kinds in upper case, as a node might send them.
func upperCased(b chain.Batch) chain.Batch {
	up := func(s string) string {
		if len(s) < 2 {
			return s
		}
		return "0x" + strings.ToUpper(s[2:])
	}
	upPos := func(p chain.Position) chain.Position { p.TxHash = up(p.TxHash); return p }
	b.Delegations = append([]chain.DelegationEvent(nil), b.Delegations...)
	for i := range b.Delegations {
		e := &b.Delegations[i]
		e.Position, e.Staker, e.Operator, e.Strategy = upPos(e.Position), up(e.Staker), up(e.Operator), up(e.Strategy)
	}
	b.Deposits = append([]chain.Deposit(nil), b.Deposits...)
	for i := range b.Deposits {
		e := &b.Deposits[i]
		e.Position, e.Staker, e.Token, e.Strategy = upPos(e.Position), up(e.Staker), up(e.Token), up(e.Strategy)
	}
	b.PodShares = append([]chain.PodSharesUpdated(nil), b.PodShares...)
	for i := range b.PodShares {
		e := &b.PodShares[i]
		e.Position, e.PodOwner = upPos(e.Position), up(e.PodOwner)
	}
	b.WithdrawalsQueued = append([]chain.WithdrawalQueued(nil), b.WithdrawalsQueued...)
	for i := range b.WithdrawalsQueued {
		e := &b.WithdrawalsQueued[i]
		e.Position, e.Root, e.Staker, e.DelegatedTo, e.Withdrawer = upPos(e.Position), up(e.Root), up(e.Staker), up(e.DelegatedTo), up(e.Withdrawer)
		ss := make([]string, len(e.Strategies))
		for j, s := range e.Strategies {
			ss[j] = up(s)
		}
		e.Strategies = ss
	}
	b.WithdrawalsDone = append([]chain.WithdrawalCompleted(nil), b.WithdrawalsDone...)
	for i := range b.WithdrawalsDone {
		e := &b.WithdrawalsDone[i]
		e.Position, e.Root = upPos(e.Position), up(e.Root)
	}
	return b
}

// Both apply paths store addresses and hashes in lower case, whatever the
// case they come in.
func TestApplyLowercasesAddresses(t *testing.T) {
	want := storetest.New(t)
	loadScenario(t, want, scenario())
	normal := storetest.New(t)
	loadScenario(t, normal, upperCased(scenario()))
	bulk := storetest.New(t)
	loadScenarioWith(t, bulk, true, func(ctx context.Context, _ *store.Tx, a *store.BulkApplier) error {
		b := upperCased(scenario())
		if err := a.Apply(ctx, &b); err != nil {
			return err
		}
		return a.Finish(ctx)
	})
	w := entityState(t, want)
	for name, db := range map[string]*store.DB{"ApplyBatch": normal, "BulkApplier": bulk} {
		if g := entityState(t, db); g != w {
			t.Errorf("%s of upper-case events:\n%s\nwant:\n%s", name, g, w)
		}
		if n := query(t, db, `SELECT count(*)::text FROM delegation_events WHERE tx_hash <> lower(tx_hash) OR staker_address <> lower(staker_address)`); n != "0" {
			t.Errorf("%s: %s delegation events with upper-case hex", name, n)
		}
	}
}
