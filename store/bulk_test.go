package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

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
		if _, err := db.ExecContext(ctx, stmt); err != nil {
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
		_, err := db.ExecContext(ctx, `SELECT $1::`+c.domain, c.value)
		if (err == nil) != c.ok {
			t.Errorf("%q::%s accepted = %v, want %v (%v)", c.value, c.domain, err == nil, c.ok, err)
		}
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

	if _, err := db.ExecContext(ctx, `ALTER TABLE deposits SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if after := off(); after != "" {
		t.Errorf("autovacuum still off after migrate for %q", after)
	}
}
