package store_test

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// TestWithdrawalEventPages checks pages of the withdrawal event feed, whose
// branches read only sort keys, against the plain ordering of every event:
// each type and both together, shallow and deep pages, and the fields that
// come from the withdrawal.
func TestWithdrawalEventPages(t *testing.T) {
	db := maintainedWorld(t)
	ctx := context.Background()
	sql := storetest.SQL(t, db)
	var first, last time.Time
	if err := sql.QueryRowContext(ctx, `SELECT min(created_at), greatest(max(created_at), max(completed_at)) FROM withdrawals`).Scan(&first, &last); err != nil {
		t.Fatal(err)
	}
	for _, typ := range []string{"", store.WithdrawalEventQueued, store.WithdrawalEventCompleted} {
		for _, skip := range []int{0, 1, 37, 150, 400} {
			f := store.WithdrawalEventFilter{Start: first, End: last, Type: typ}
			got, err := db.ListWithdrawalEvents(ctx, f, store.Page{Skip: skip, Take: 25}, true)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			if err := sql.SelectContext(ctx, &want, `
				SELECT type || ' ' || tx_hash || ' ' || withdrawal_root || ' ' || staker_address FROM (
					SELECT 'WITHDRAWAL_QUEUED' AS type, tx_hash, withdrawal_root, staker_address,
					       created_at AS at, block_number AS block, log_index AS log
					FROM withdrawals
					UNION ALL
					SELECT 'WITHDRAWAL_COMPLETED', completed_tx_hash, withdrawal_root, staker_address,
					       completed_at, completed_block, completed_log_index
					FROM withdrawals WHERE is_completed
				) e
				WHERE $1 = '' OR type = $1
				ORDER BY at DESC, block DESC, log DESC
				LIMIT 25 OFFSET $2`, typ, skip); err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 {
				t.Fatalf("type %q skip %d: the world has no such events", typ, skip)
			}
			if len(got) != len(want) {
				t.Fatalf("type %q skip %d: %d events; want %d", typ, skip, len(got), len(want))
			}
			for i, e := range got {
				if s := fmt.Sprintf("%s %s %s %s", e.Type, e.TxHash, e.WithdrawalRoot, e.StakerAddress); s != want[i] {
					t.Fatalf("type %q skip %d: event %d is %s; want %s", typ, skip, i, s, want[i])
				}
			}
			// Without the values, the same events with the same strategies
			// and shares, and nothing read from the strategies.
			amounts, err := db.ListWithdrawalEvents(ctx, f, store.Page{Skip: skip, Take: 25}, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(amounts) != len(got) {
				t.Fatalf("type %q skip %d: %d events without values; want %d", typ, skip, len(amounts), len(got))
			}
			for i, e := range amounts {
				if e.UnderlyingTokens != nil || e.UnderlyingValues != nil || e.ETHValues != nil {
					t.Fatalf("type %q skip %d: event %d without values has %v %v %v", typ, skip, i, e.UnderlyingTokens, e.UnderlyingValues, e.ETHValues)
				}
				if len(got[i].UnderlyingTokens) != len(got[i].Strategies) {
					t.Fatalf("type %q skip %d: event %d has %d tokens for %d strategies", typ, skip, i, len(got[i].UnderlyingTokens), len(got[i].Strategies))
				}
				w := got[i]
				w.UnderlyingTokens, w.UnderlyingValues, w.ETHValues = nil, nil, nil
				if !reflect.DeepEqual(e, w) {
					t.Fatalf("type %q skip %d: event %d without values is\n%+v\nwant\n%+v", typ, skip, i, e, w)
				}
			}
		}
	}
}

// TestDeepWithdrawalEventPages checks deep pages of the withdrawal event
// feed, which start at the day the kept day counts point to, against the
// plain ordering of the events of the range: ranges whose edges fall early
// and late in a day and at midnight (the partial days counted from either
// side), each type and both together, skips across day boundaries and up
// to and past the end.
func TestDeepWithdrawalEventPages(t *testing.T) {
	db := maintainedWorld(t)
	defer store.SetBucketSkip(10)()
	ctx := context.Background()
	sql := storetest.SQL(t, db)
	var last time.Time
	if err := sql.QueryRowContext(ctx, `SELECT greatest(max(created_at), max(completed_at)) FROM withdrawals`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	const day = 24 * time.Hour
	midnight := last.UTC().Truncate(day)
	ranges := [][2]time.Time{
		{midnight.Add(-7*day + 3*time.Hour), midnight.Add(-day + 5*time.Hour)},     // early in the day at both edges
		{midnight.Add(-9*day + 20*time.Hour), midnight.Add(-2*day + 19*time.Hour)}, // late in the day at both edges
		{midnight.Add(-8 * day), midnight.Add(-3 * day)},                           // midnights
		{midnight.Add(-30*day + 11*time.Hour), last},                               // a month to the last event
	}
	for _, r := range ranges {
		for _, typ := range []string{"", store.WithdrawalEventQueued} {
			f := store.WithdrawalEventFilter{Start: r[0], End: r[1], Type: typ}
			var keys []string
			if err := sql.SelectContext(ctx, &keys, `
				SELECT type || ' ' || block || ' ' || log FROM (
					SELECT 'WITHDRAWAL_QUEUED' AS type, created_at AS at, block_number AS block, log_index AS log
					FROM withdrawals
					UNION ALL
					SELECT 'WITHDRAWAL_COMPLETED', completed_at, completed_block, completed_log_index
					FROM withdrawals WHERE is_completed
				) e
				WHERE ($1 = '' OR type = $1) AND at >= $2 AND at <= $3
				ORDER BY at DESC, block DESC, log DESC`, typ, r[0], r[1]); err != nil {
				t.Fatal(err)
			}
			total := len(keys)
			if total < 100 {
				t.Fatalf("%s to %s, type %q: %d events; the test needs 100", r[0], r[1], typ, total)
			}
			skips := []int{10, 11, 57, total / 3, total / 2, total - 7, total - 1, total, total + 3}
			for _, skip := range skips {
				got, err := db.ListWithdrawalEvents(ctx, f, store.Page{Skip: skip, Take: 12}, true)
				if err != nil {
					t.Fatal(err)
				}
				want := keys[min(skip, total):min(skip+12, total)]
				if len(got) != len(want) {
					t.Fatalf("%s to %s, type %q, skip %d: %d events; want %d", r[0], r[1], typ, skip, len(got), len(want))
				}
				for i, e := range got {
					if k := fmt.Sprintf("%s %d %d", e.Type, e.BlockNumber, e.LogIndex); k != want[i] {
						t.Fatalf("%s to %s, type %q, skip %d: event %d is %s; want %s", r[0], r[1], typ, skip, i, k, want[i])
					}
				}
			}
		}
	}
}

// TestStakerPages checks pages of the staker list, read by address from an
// index, against the plain ordering, with and without an update time (one
// within a day, one at a midnight, so that the partial first day of the
// kept day counts is empty), up to and past the end.
func TestStakerPages(t *testing.T) {
	db := maintainedWorld(t)
	ctx := context.Background()
	sql := storetest.SQL(t, db)
	var since time.Time
	if err := sql.GetContext(ctx, &since, `SELECT percentile_disc(0.7) WITHIN GROUP (ORDER BY updated_at) FROM stakers`); err != nil {
		t.Fatal(err)
	}
	midnight := since.UTC().Truncate(24 * time.Hour)
	if midnight.Equal(since) {
		t.Fatalf("the stakers' 70th percentile update time %s is a midnight; the test needs one within a day", since)
	}
	var total int
	if err := sql.GetContext(ctx, &total, `SELECT count(*) FROM stakers`); err != nil {
		t.Fatal(err)
	}
	// Deep pages start at the kept address bucket counts, or for the
	// stakers updated since a time at the kept counts by bucket and day
	// of update; a low threshold puts most of these pages past it.
	defer store.SetBucketSkip(10)()
	// Times early and late in the day have their partial first day
	// counted from either midnight.
	early, late := midnight.Add(2*time.Hour), midnight.Add(22*time.Hour)
	for _, f := range []store.StakerFilter{{}, {UpdatedSince: since}, {UpdatedSince: midnight}, {UpdatedSince: early}, {UpdatedSince: late}} {
		var updated int
		if err := sql.GetContext(ctx, &updated, `
			SELECT count(*) FROM stakers
			WHERE $1::timestamptz IS NULL OR updated_at >= $1`, nullTime(f.UpdatedSince)); err != nil {
			t.Fatal(err)
		}
		if !f.UpdatedSince.IsZero() {
			checkStakerUpdateBuckets(t, db, f.UpdatedSince)
		}
		for _, skip := range []int{0, 9, 13, 1000, updated / 2, updated - 5, updated, updated + 1, total - 3, total, total + 1} {
			got, err := db.ListStakers(ctx, f, store.Page{Skip: skip, Take: 12})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			if err := sql.SelectContext(ctx, &want, `
				SELECT address FROM stakers
				WHERE $1::timestamptz IS NULL OR updated_at >= $1
				ORDER BY address LIMIT 12 OFFSET $2`, nullTime(f.UpdatedSince), skip); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%+v skip %d: %d stakers; want %d", f, skip, len(got), len(want))
			}
			for i, s := range got {
				if s.Address != want[i] {
					t.Fatalf("%+v skip %d: staker %d is %s; want %s", f, skip, i, s.Address, want[i])
				}
			}
		}
	}
}

// checkStakerUpdateBuckets checks the address bucket counts of the stakers
// updated since a time against a count of the stakers by bucket.
func checkStakerUpdateBuckets(t *testing.T, db *store.DB, since time.Time) {
	t.Helper()
	ctx := context.Background()
	got, err := db.StakerUpdateBuckets(ctx, since)
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Bucket string `db:"bucket"`
		N      int    `db:"n"`
	}
	if err := storetest.SQL(t, db).SelectContext(ctx, &rows, `
		SELECT left(address, 3) AS bucket, count(*) AS n
		FROM stakers WHERE updated_at >= $1 GROUP BY 1`, since); err != nil {
		t.Fatal(err)
	}
	var want store.AddressBuckets
	for _, r := range rows {
		i, err := strconv.ParseUint(r.Bucket[2:], 16, 8)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = r.N
	}
	if got != want {
		t.Errorf("stakers updated since %s by bucket: %v; want %v", since, got, want)
	}
	if want.Total() == 0 {
		t.Errorf("no staker updated since %s: the buckets are not tested", since)
	}
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// TestAVSStakerCounts checks that an AVS's number of stakers, read from
// its refreshed totalStakers, is the number of stakers its list selects,
// counted row by row, for every AVS.
func TestAVSStakerCounts(t *testing.T) {
	db := maintainedWorld(t)
	ctx := context.Background()
	var avs []string
	if err := storetest.SQL(t, db).SelectContext(ctx, &avs, `SELECT address FROM avs ORDER BY address`); err != nil {
		t.Fatal(err)
	}
	kept, err := db.CountAVSStakers(ctx, avs, store.StakerFilter{})
	if err != nil {
		t.Fatal(err)
	}
	// Every staker was updated after 2000, so this counts them row by row.
	counted, err := db.CountAVSStakers(ctx, avs, store.StakerFilter{UpdatedSince: time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	// Each registration's count is its stakers, counted row by row.
	var wrong []string
	if err := storetest.SQL(t, db).SelectContext(ctx, &wrong, `
		SELECT ao.avs_address || ' ' || ao.operator_address || ': ' || ao.total_stakers || ' kept, ' || c.n || ' counted'
		FROM avs_operators ao
		JOIN avs a ON a.address = ao.avs_address
		CROSS JOIN LATERAL (
		    SELECT count(*) FILTER (WHERE ao.is_active AND s.holding_strategies && a.restakeable_strategies) AS n
		    FROM stakers s WHERE s.operator_address = ao.operator_address
		) c
		WHERE ao.total_stakers <> c.n`); err != nil {
		t.Fatal(err)
	}
	if len(wrong) > 0 {
		t.Errorf("%d registrations' staker counts are wrong, such as %s", len(wrong), wrong[0])
	}
	// And so are its counts by address bucket, which hold some stakers in
	// several buckets.
	wrong = nil
	if err := storetest.SQL(t, db).SelectContext(ctx, &wrong, `
		SELECT ao.avs_address || ' ' || ao.operator_address || ': ' || ao.staker_buckets::text || ' kept, ' || c.n::text || ' counted'
		FROM avs_operators ao
		JOIN avs a ON a.address = ao.avs_address
		CROSS JOIN LATERAL (
		    SELECT array_agg((
		               SELECT count(*) FROM stakers s
		               WHERE s.operator_address = ao.operator_address AND ao.is_active
		                 AND s.holding_strategies && a.restakeable_strategies
		                 AND substr(s.address, 3, 1) = d.digit
		           )::integer ORDER BY d.position) AS n
		    FROM unnest(string_to_array('0123456789abcdef', NULL)) WITH ORDINALITY AS d(digit, position)
		) c
		WHERE ao.staker_buckets IS DISTINCT FROM c.n`); err != nil {
		t.Fatal(err)
	}
	if len(wrong) > 0 {
		t.Errorf("%d registrations' staker counts by bucket are wrong, such as %s", len(wrong), wrong[0])
	}
	var spread int
	if err := storetest.SQL(t, db).GetContext(ctx, &spread, `
		SELECT count(*) FROM avs_operators
		WHERE (SELECT count(*) FROM unnest(staker_buckets) n WHERE n > 0) >= 3`); err != nil {
		t.Fatal(err)
	}
	if spread == 0 {
		t.Fatal("no registration has stakers in three buckets or more; the test needs one")
	}
	withStakers := 0
	for _, a := range avs {
		if kept[a] != counted[a] {
			t.Errorf("AVS %s: %d stakers kept; %d counted", a, kept[a], counted[a])
		}
		if counted[a] > 0 {
			withStakers++
		}
	}
	if withStakers < 2 {
		t.Fatalf("%d of %d AVS have stakers; the test needs more", withStakers, len(avs))
	}
}

// TestDeepDepositPages checks that deep pages of the deposit list, which
// start at the day the kept day counts point to, are exactly the pages of
// the plain ordering, for every deposit and for a strategy's, up to and
// past the end of the list.
func TestDeepDepositPages(t *testing.T) {
	db := maintainedWorld(t)
	defer store.SetBucketSkip(100)()
	ctx := context.Background()
	sql := storetest.SQL(t, db)
	var strategy string
	var total int
	if err := sql.QueryRowContext(ctx, `SELECT strategy_address, count(*) FROM deposits GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1`).Scan(&strategy, &total); err != nil {
		t.Fatal(err)
	}
	if total < 1000 {
		t.Fatalf("the largest strategy has %d deposits; the test needs 1000", total)
	}
	for _, f := range []store.DepositFilter{{}, {Strategy: strategy}} {
		for _, skip := range []int{99, 100, 101, 777, 2500, total - 7, total, total + 3} {
			got, err := db.ListDeposits(ctx, f, store.Page{Skip: skip, Take: 12})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			if err := sql.SelectContext(ctx, &want, `
				SELECT tx_hash || ' ' || log_index FROM deposits
				WHERE $1 = '' OR strategy_address = $1
				ORDER BY block_time DESC, block_number DESC, log_index DESC
				LIMIT 12 OFFSET $2`, f.Strategy, skip); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%+v skip %d: %d deposits; want %d", f, skip, len(got), len(want))
			}
			for i, d := range got {
				if s := fmt.Sprintf("%s %d", d.TxHash, d.LogIndex); s != want[i] {
					t.Fatalf("%+v skip %d: deposit %d is %s; want %s", f, skip, i, s, want[i])
				}
			}
		}
	}
}

// TestAVSStakerPages checks pages of an AVS's stakers, read operator by
// operator, against the plain ordering of the stakers its totalStakers
// counts, with and without an update time, for the AVS with the most
// operators. Later pages start at the operator and address bucket the
// registrations' staker counts point to, and at the first operator while
// the data is marked as not refreshed; skips around the operators' and
// the largest operator's buckets' boundaries and the end check both.
func TestAVSStakerPages(t *testing.T) {
	db := maintainedWorld(t)
	ctx := context.Background()
	sql := storetest.SQL(t, db)
	var avs string
	var total int
	if err := sql.QueryRowContext(ctx, `SELECT address, total_stakers FROM avs ORDER BY total_operators DESC, address LIMIT 1`).Scan(&avs, &total); err != nil {
		t.Fatal(err)
	}
	var since time.Time
	if err := sql.GetContext(ctx, &since, `SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY updated_at) FROM stakers`); err != nil {
		t.Fatal(err)
	}
	if total < 200 {
		t.Fatalf("the AVS has %d stakers; the test needs 200", total)
	}
	// The stakers before each of the AVS's operators with stakers after
	// the first: a page starting there, or just before or after, begins
	// at an operator's first staker or crosses into it.
	var boundaries []int
	if err := sql.SelectContext(ctx, &boundaries, `
		SELECT through FROM (
		    SELECT sum(total_stakers) OVER (ORDER BY operator_address) AS through
		    FROM avs_operators WHERE avs_address = $1 AND is_active AND total_stakers > 0
		) r
		WHERE through < $2
		ORDER BY through LIMIT 4`, avs, total); err != nil {
		t.Fatal(err)
	}
	if len(boundaries) < 3 {
		t.Fatalf("the AVS has %d operators with stakers; the test needs 4", len(boundaries)+1)
	}
	skips := []int{0, 11, 150, total - 5, total - 1, total, total + 1}
	for _, b := range boundaries {
		skips = append(skips, b-1, b, b+1)
	}
	// The stakers before each address bucket of the AVS's operator with
	// the most stakers: a page starting there, or just before or after,
	// begins at a bucket's first staker or crosses into it.
	var buckets []int
	if err := sql.SelectContext(ctx, &buckets, `
		SELECT r.before + sum(u.n) OVER (ORDER BY u.bucket) - u.n
		FROM (
		    SELECT operator_address, total_stakers, staker_buckets,
		           sum(total_stakers) OVER (ORDER BY operator_address) - total_stakers AS before
		    FROM avs_operators WHERE avs_address = $1 AND is_active
		) r
		CROSS JOIN LATERAL unnest(r.staker_buckets) WITH ORDINALITY AS u(n, bucket)
		WHERE r.total_stakers = (SELECT max(total_stakers) FROM avs_operators WHERE avs_address = $1 AND is_active)
		  AND u.n > 0
		ORDER BY 1 LIMIT 16`, avs); err != nil {
		t.Fatal(err)
	}
	if len(buckets) < 4 {
		t.Fatalf("the AVS's largest operator has stakers in %d address buckets; the test needs 4", len(buckets))
	}
	for _, b := range buckets[1:] {
		skips = append(skips, b-1, b, b+1)
	}
	check := func(state string) {
		t.Helper()
		for _, f := range []store.StakerFilter{{}, {UpdatedSince: since}} {
			for _, skip := range skips {
				got, err := db.ListAVSStakers(ctx, []string{avs}, f, store.Page{Skip: skip, Take: 12})
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				if err := sql.SelectContext(ctx, &want, `
					SELECT s.address
					FROM avs a
					JOIN avs_operators ao ON ao.avs_address = a.address AND ao.is_active
					JOIN stakers s ON s.operator_address = ao.operator_address
					WHERE a.address = $1
					  AND ($2::timestamptz IS NULL OR s.updated_at >= $2)
					  AND EXISTS (SELECT 1 FROM staker_shares ss
					              WHERE ss.staker_address = s.address AND ss.shares > 0
					                AND ss.strategy_address = ANY (a.restakeable_strategies))
					ORDER BY ao.operator_address, s.address
					LIMIT 12 OFFSET $3`, avs, nullTime(f.UpdatedSince), skip); err != nil {
					t.Fatal(err)
				}
				if skip == 0 && len(want) == 0 {
					t.Fatalf("%+v: the AVS has no such stakers", f)
				}
				if len(got) != len(want) {
					t.Fatalf("%s, %+v skip %d: %d stakers; want %d", state, f, skip, len(got), len(want))
				}
				for i, s := range got {
					if s.Address != want[i] || s.Key != avs {
						t.Fatalf("%s, %+v skip %d: staker %d is %s of %s; want %s", state, f, skip, i, s.Address, s.Key, want[i])
					}
				}
			}
		}
	}
	check("refreshed")
	// Counts that no longer agree with the stakers, as between a batch
	// and its refresh, are not used while the data is marked so.
	for _, stmt := range []string{
		`UPDATE service_state SET dirty_since = now()`,
		`UPDATE avs_operators SET total_stakers = total_stakers + 3, staker_buckets = array_fill(5, ARRAY[16]) WHERE avs_address = '` + avs + `'`,
	} {
		if _, err := sql.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	check("not refreshed")
	// A batch returns each AVS's page, grouped in the order asked.
	var other string
	if err := sql.GetContext(ctx, &other, `SELECT address FROM avs WHERE address <> $1 AND total_stakers > 0 ORDER BY address DESC LIMIT 1`, avs); err != nil {
		t.Fatal(err)
	}
	page := store.Page{Skip: 3, Take: 12}
	var want []store.OperatorStaker
	for _, a := range []string{other, avs} {
		rows, err := db.ListAVSStakers(ctx, []string{a}, store.StakerFilter{}, page)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 0 {
			t.Fatalf("AVS %s has no stakers at skip 3", a)
		}
		want = append(want, rows...)
	}
	got, err := db.ListAVSStakers(ctx, []string{other, avs}, store.StakerFilter{}, page)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("batch: %d stakers; want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].Key != want[i].Key || got[i].Address != want[i].Address {
			t.Fatalf("batch: staker %d is %s of %s; want %s of %s", i, got[i].Address, got[i].Key, want[i].Address, want[i].Key)
		}
	}
}

// TestStakerHoldingsStayExact checks every staker's holding strategies
// against its positions with positive shares, and the address bucket
// counts against the stakers, after a load and after a rollback that
// derives stakers again.
func TestStakerHoldingsStayExact(t *testing.T) {
	db := maintainedWorld(t)
	ctx := context.Background()
	sql := storetest.SQL(t, db)
	check := func(stage string) {
		t.Helper()
		var wrong, holding int
		if err := sql.QueryRowContext(ctx, `
			SELECT count(*) FILTER (WHERE s.holding_strategies IS DISTINCT FROM COALESCE(h.strategies, '{}')),
			       count(*) FILTER (WHERE h.strategies IS NOT NULL)
			FROM stakers s
			LEFT JOIN (
			    SELECT staker_address, array_agg(strategy_address ORDER BY strategy_address)::address[] AS strategies
			    FROM staker_shares WHERE shares > 0 GROUP BY staker_address
			) h ON h.staker_address = s.address`).Scan(&wrong, &holding); err != nil {
			t.Fatal(err)
		}
		if wrong != 0 {
			t.Errorf("%s: %d stakers' holding strategies differ from their positions", stage, wrong)
		}
		if holding == 0 {
			t.Fatalf("%s: no staker holds shares", stage)
		}
		var bucketsWrong int
		if err := sql.GetContext(ctx, &bucketsWrong, `
			SELECT count(*)
			FROM staker_address_buckets b
			FULL JOIN (SELECT left(address, 4) AS bucket, count(*) AS n FROM stakers GROUP BY 1) s USING (bucket)
			WHERE b.n IS DISTINCT FROM s.n`); err != nil {
			t.Fatal(err)
		}
		if bucketsWrong != 0 {
			t.Errorf("%s: %d address bucket counts differ from the stakers", stage, bucketsWrong)
		}
	}
	check("loaded")
	var first, last uint64
	if err := sql.QueryRowContext(ctx, `SELECT min(block_number), max(block_number) FROM deposits`).Scan(&first, &last); err != nil {
		t.Fatal(err)
	}
	if err := db.InTx(ctx, func(tx *store.Tx) error { return tx.RollbackAfter(ctx, first+(last-first)/2) }); err != nil {
		t.Fatal(err)
	}
	check("rolled back")
}
