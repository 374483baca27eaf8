package graph_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/graph"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// TestEntityCache checks, on the demo data, that with an EntityCache a
// repeated page reads only the page itself from the database, that it
// answers exactly what the uncached handler answers, and that a commit
// (a new data version) shows at once the version is read.
func TestEntityCache(t *testing.T) {
	ctx := context.Background()
	db := demoDB(t)
	cached, readVersion := newEntityCachedClient(t, db)
	plain := newClient(t, db, testOptions())

	const q = `query {
		operators(take: 15, sortByTvl: desc) {
			data {
				address metadataName totalStakers
				shares { strategyAddress shares }
				tvl { tvl tvlRestaking tvlStrategies tvlStrategiesEth }
				avsRegistrations { avsAddress isActive avs { address metadataName shares { shares } tvl { tvl } } }
				delegationEvents(take: 2) { data { tx } meta { total } }
			}
			meta { total }
		}
		avsList(take: 5) { data { address strategyApys { strategyAddress } curatedMetadata { avsAddress } } }
		strategies { address symbol }
	}`
	run := func(c *client) (data string, statements int64) {
		t.Helper()
		return postCounted(t, db, c, q, nil)
	}
	want, plainStatements := run(plain)
	first, firstStatements := run(cached)
	second, secondStatements := run(cached)
	t.Logf("statements: uncached %d, cached first %d, cached again %d", plainStatements, firstStatements, secondStatements)
	if first != want || second != want {
		t.Errorf("cached answers differ from the uncached one:\nuncached %s\nfirst    %s\nsecond   %s", want, first, second)
	}
	// Left to read: the two lists, their count, the strategies list and
	// the operators' event pages (their counts are kept).
	if secondStatements >= firstStatements || secondStatements > 5 {
		t.Errorf("the repeated query ran %d statements (the first %d); want only the lists and their count", secondStatements, firstStatements)
	}

	// A new name of an AVS the first operator is registered with,
	// committed: the AVS records come from the cache until the new version
	// is read, then from the database.
	var page struct {
		Operators struct {
			Data []struct {
				AvsRegistrations []struct {
					Avs struct{ Address, MetadataName string }
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(want), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.Operators.Data) == 0 || len(page.Operators.Data[0].AvsRegistrations) == 0 {
		t.Fatal("the first operator has no registrations")
	}
	avs := page.Operators.Data[0].AvsRegistrations[0].Avs
	const newName = "Renamed by the test"
	rename := chain.Batch{MetadataDocuments: []chain.MetadataDocument{{
		Position: chain.Position{BlockNumber: 1 << 40, TxHash: "0x" + strings.Repeat("ab", 32)},
		Subject:  chain.SubjectAVS, Address: avs.Address, Name: newName,
	}}}
	if err := db.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.ApplyBatch(ctx, &rename); err != nil {
			return err
		}
		return tx.BumpDataVersion(ctx)
	}); err != nil {
		t.Fatal(err)
	}
	if stale, _ := run(cached); stale != want {
		t.Errorf("before the new version is read, the cached answer changed (AVS %s renamed from %q)", avs.Address, avs.MetadataName)
	}
	readVersion()
	fresh, _ := run(cached)
	if !strings.Contains(fresh, newName) {
		t.Errorf("after the new version was read, the new name of AVS %s is not shown", avs.Address)
	}
	if want, _ := run(plain); fresh != want {
		t.Errorf("after the commit, the cached and uncached answers differ")
	}
}

// newEntityCachedClient returns a client of a handler with an EntityCache
// over db, whose data version is the one readVersion last read. Its batch
// window is wider than testOptions': the statement counts of the cache's
// tests assume each batch runs once, and a loaded machine can run a
// goroutine later than 20 ms and split a batch.
func newEntityCachedClient(t *testing.T, db *store.DB) (c *client, readVersion func()) {
	t.Helper()
	var version atomic.Int64
	readVersion = func() {
		t.Helper()
		v, err := db.DataVersion(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		version.Store(v)
	}
	readVersion()
	opts := testOptions()
	opts.BatchWait = 250 * time.Millisecond
	opts.Entities = graph.NewEntityCache(func() (int64, bool) { return version.Load(), true }, 0)
	return newClient(t, db, opts), readVersion
}

// TestStakerUpdateBucketsCached checks that the pages of the stakers
// updated since a time answer as without the cache, and that with it the
// stakers' address bucket counts for that time are read once: a later
// page of the same time reads only its stakers, and its total none.
func TestStakerUpdateBucketsCached(t *testing.T) {
	ctx := context.Background()
	db := demoDB(t)
	cached, _ := newEntityCachedClient(t, db)
	plain := newClient(t, db, testOptions())
	var since time.Time
	if err := storetest.SQL(t, db).GetContext(ctx, &since, `
		SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY updated_at) FROM stakers`); err != nil {
		t.Fatal(err)
	}
	const q = `query($since: String, $skip: Int) {
		stakers(updatedSince: $since, skip: $skip, take: 3) { data { address } meta { total } }
	}`
	run := func(c *client, skip int) (data string, statements int64) {
		t.Helper()
		return postCounted(t, db, c, q, map[string]any{"since": since.UTC().Format(time.RFC3339Nano), "skip": skip})
	}
	for i, skip := range []int{0, 4, 5, 1 << 20} {
		want, plainStatements := run(plain, skip)
		got, cachedStatements := run(cached, skip)
		if got != want {
			t.Errorf("skip %d: cached %s; uncached %s", skip, got, want)
		}
		if !strings.Contains(want, `"address"`) && skip < 1<<20 {
			t.Errorf("skip %d: no staker updated since %s: %s", skip, since, want)
		}
		// Without the cache: the buckets and the page (none past the
		// end). With it, the first time as well, then only the page.
		wantPlain, wantCached := int64(2), int64(1)
		if skip == 1<<20 {
			wantPlain, wantCached = 1, 0
		}
		if i == 0 {
			wantCached = 2
		}
		if plainStatements != wantPlain || cachedStatements != wantCached {
			t.Errorf("skip %d: %d statements uncached, %d cached; want %d and %d", skip, plainStatements, cachedStatements, wantPlain, wantCached)
		}
	}
}

// TestWithdrawalBucketsCached checks that with the entity cache a deep
// page of the withdrawal list reads the list's block bucket counts once
// per filter and data version, and answers as without the cache.
func TestWithdrawalBucketsCached(t *testing.T) {
	db := demoDB(t)
	cached, _ := newEntityCachedClient(t, db)
	plain := newClient(t, db, testOptions())
	const q = `query($operator: Address, $status: WithdrawalStatus, $skip: Int) {
		withdrawals(delegatedTo: $operator, status: $status, skip: $skip, take: 3) { data { withdrawalRoot } }
	}`
	run := func(c *client, vars map[string]any) (data string, statements int64) {
		t.Helper()
		return postCounted(t, db, c, q, vars)
	}
	// The demo's lists are shorter than the skip from which a page is
	// read from the bucket counts: such a page is past the end, and
	// reads the counts only.
	for _, vars := range []map[string]any{
		{"skip": 100_000},
		{"skip": 100_000, "status": "queued_withdrawable"},
		{"skip": 100_000, "operator": "0x7e95bf4c5be6a9840e173056c1a044a1656daba5"}, // a demo operator
	} {
		for i := range 2 {
			want, plainStatements := run(plain, vars)
			got, cachedStatements := run(cached, vars)
			if got != want {
				t.Errorf("%v: cached %s; uncached %s", vars, got, want)
			}
			wantCached := int64(0)
			if i == 0 {
				wantCached = 1
			}
			if plainStatements != 1 || cachedStatements != wantCached {
				t.Errorf("%v, request %d: %d statements uncached, %d cached; want 1 and %d", vars, i+1, plainStatements, cachedStatements, wantCached)
			}
		}
	}
}

// postCounted posts the query q with vars through c and returns the data
// of its answer, which must have no errors, and the SQL statements it
// took.
func postCounted(t *testing.T, db *store.DB, c *client, q string, vars map[string]any) (data string, statements int64) {
	t.Helper()
	before := db.StatementCount()
	res := c.post(q, vars)
	statements = db.StatementCount() - before
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %+v", res.Errors)
	}
	return string(res.Data), statements
}
