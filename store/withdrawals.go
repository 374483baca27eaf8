package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/stakegraph/stakegraph/internal/derrors"
)

// Withdrawal is a queued withdrawal as stored. Nonce is decimal text.
// IsWithdrawable says that it is not completed and the protocol's minimum
// withdrawal delay has passed at the indexed head.
type Withdrawal struct {
	WithdrawalRoot    string    `db:"withdrawal_root"`
	Nonce             string    `db:"nonce"`
	StakerAddress     string    `db:"staker_address"`
	DelegatedTo       string    `db:"delegated_to"`
	WithdrawerAddress string    `db:"withdrawer_address"`
	StartBlock        int64     `db:"start_block"`
	CreatedAtBlock    int64     `db:"created_at_block"`
	CreatedAt         time.Time `db:"created_at"`
	UpdatedAtBlock    int64     `db:"updated_at_block"`
	UpdatedAt         time.Time `db:"updated_at"`
	IsCompleted       bool      `db:"is_completed"`
	IsWithdrawable    bool      `db:"is_withdrawable"`
	// Strategies and ShareAmounts are the strategies the withdrawal was
	// queued in and the shares queued in each, in the withdrawal's order
	// (see ShareRows).
	Strategies   pq.StringArray `db:"strategies"`
	ShareAmounts pq.StringArray `db:"share_amounts"`
}

// ShareRows returns the withdrawal's shares as WithdrawalSharesByRoots
// gives them, without their values (symbol, kind, underlying and ETH
// value): one row per strategy, in the withdrawal's order. The table's
// CHECK constraints keep the two arrays of one length.
func (w *Withdrawal) ShareRows() []StrategyShares {
	if len(w.Strategies) == 0 {
		return nil
	}
	out := make([]StrategyShares, len(w.Strategies))
	for i, strategy := range w.Strategies {
		out[i] = StrategyShares{Owner: w.WithdrawalRoot, StrategyAddress: strategy, Shares: w.ShareAmounts[i]}
	}
	return out
}

// withdrawalColumns selects a Withdrawal from withdrawals w and the
// service_state row st (left-joined: it may be missing in a fresh database).
const withdrawalColumns = `
	w.withdrawal_root, w.nonce::text AS nonce, w.staker_address, w.delegated_to,
	w.withdrawer_address, w.start_block, w.created_at_block, w.created_at,
	w.updated_at_block, w.updated_at, w.is_completed,
	COALESCE(NOT w.is_completed
	         AND w.created_at_block + st.min_withdrawal_delay_blocks <= st.head_block, false) AS is_withdrawable,
	w.strategies::text[] AS strategies, w.shares::text[] AS share_amounts`

// WithdrawalStatus is a withdrawal state filter of the REST contract.
type WithdrawalStatus string

// The withdrawal states. Queued means not completed; QueuedWithdrawable
// means not completed and created at least the minimum withdrawal delay
// before the indexed head.
const (
	WithdrawalQueued             WithdrawalStatus = "queued"
	WithdrawalQueuedWithdrawable WithdrawalStatus = "queued_withdrawable"
	WithdrawalCompleted          WithdrawalStatus = "completed"
)

// WithdrawalFilter selects withdrawals; every field is optional.
type WithdrawalFilter struct {
	Staker      string
	DelegatedTo string
	Strategy    string
	Status      WithdrawalStatus
}

// conditions returns the WHERE conditions of f over withdrawals w. Each
// status matches a partial index, the strategy a GIN index and staker and
// operator a b-tree index ordered like the list.
func (f WithdrawalFilter) conditions(q *queryArgs) ([]string, error) {
	var conds []string
	if f.Staker != "" {
		conds = append(conds, "w.staker_address = "+q.add(f.Staker))
	}
	if f.DelegatedTo != "" {
		conds = append(conds, "w.delegated_to = "+q.add(f.DelegatedTo))
	}
	if f.Strategy != "" {
		conds = append(conds, "w.strategies @> ARRAY["+q.add(f.Strategy)+"::address]")
	}
	status, err := f.Status.condition("w")
	if err != nil {
		return nil, err
	}
	return append(conds, status), nil
}

// condition returns the condition that the withdrawal of the row alias (of
// withdrawals or withdrawal_strategies, which share the status columns) is
// in state s, or "" for every state.
func (s WithdrawalStatus) condition(alias string) (string, error) {
	switch s {
	case "":
		return "", nil
	case WithdrawalQueued:
		return "NOT " + alias + ".is_completed", nil
	case WithdrawalQueuedWithdrawable:
		return `NOT ` + alias + `.is_completed
		  AND ` + alias + `.created_at_block <= (SELECT head_block - min_withdrawal_delay_blocks FROM service_state WHERE id)`, nil
	case WithdrawalCompleted:
		return alias + ".is_completed", nil
	default:
		return "", fmt.Errorf("%w: unknown withdrawal status %q", derrors.InvalidArgument, s)
	}
}

// keysetSkip is the skip from which ListWithdrawals pages a list filtered
// by staker (or by operator and strategy) by keyset.
const keysetSkip = 1000

// bucketSkip is the skip from which ListWithdrawals finds the first key of
// a page of the whole list, or of an operator's or a strategy's, from the
// block bucket counts (and ListDeposits from the day counts) rather than
// by walking skip index entries: below it,
// the walk (an index-only scan) costs less than summing the buckets (a few
// hundred rows, about 2 ms). A variable for the tests.
var bucketSkip = 5000

// bucketStart returns the WITH clause that starts a deep page at kept
// bucket counts: buckets selects (bucket, n), the number of the list's
// rows in each bucket; order ("ASC" or "DESC") is the order of the
// buckets in the list; skip is the page's skip. Its relation start holds
// the bucket of the page's first row (start.bucket) and the skip left
// within that bucket (start.skip); it has no row when the skip is past
// the list's end, so a bound on (SELECT ... FROM start) selects nothing.
func bucketStart(buckets, order, skip string) string {
	return `
		WITH buckets AS (` + buckets + `
		), skip AS (
		    SELECT (` + skip + `)::bigint AS n
		), start AS (
		    -- The first bucket whose rows and those before it number more
		    -- than the skip, and the skip left in it.
		    SELECT r.bucket, (skip.n - (r.through - r.n))::bigint AS skip
		    FROM (SELECT bucket, n, sum(n) OVER (ORDER BY bucket ` + order + `) AS through FROM buckets) r, skip
		    WHERE r.through > skip.n
		    ORDER BY r.bucket ` + order + `
		    LIMIT 1
		)`
}

// ListWithdrawals returns one page of the withdrawals matching f, newest
// first. Without a staker, and with at most one of operator and strategy,
// see listWithdrawalsByBuckets; a deep page of such a list reads the
// list's bucket counts first (ListWithdrawalsWith takes them from
// elsewhere). Otherwise the list is short and a deep page (skip of
// keysetSkip or more) is read by keyset: the sort key of its first row is
// found by walking only the sort-key index (an index-only scan where the
// filter allows), and the page's rows are then read from that key on,
// instead of reading and discarding skip whole rows.
func (db *DB) ListWithdrawals(ctx context.Context, f WithdrawalFilter, p Page) ([]Withdrawal, error) {
	return db.ListWithdrawalsWith(ctx, f, p, db.WithdrawalBucketCounts)
}

// ListWithdrawalsWith is ListWithdrawals with the bucket counts of a deep
// page of a list without a staker read by buckets (WithdrawalBucketCounts
// or a copy of its answer for the same filter).
func (db *DB) ListWithdrawalsWith(ctx context.Context, f WithdrawalFilter, p Page, buckets func(context.Context, WithdrawalFilter) (WithdrawalBuckets, error)) ([]Withdrawal, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if f.Staker == "" && (f.DelegatedTo == "" || f.Strategy == "") {
		if p.Skip < bucketSkip {
			return db.listWithdrawalsByBuckets(ctx, f, p, 0, p.Skip)
		}
		b, err := buckets(ctx, f)
		if err != nil {
			return nil, err
		}
		bound, within, ok := b.start(p.Skip)
		if !ok {
			return []Withdrawal{}, nil
		}
		return db.listWithdrawalsByBuckets(ctx, f, p, bound, within)
	}
	var q queryArgs
	conds, err := f.conditions(&q)
	if err != nil {
		return nil, err
	}
	var query string
	if p.Skip < keysetSkip {
		query = `
		SELECT ` + withdrawalColumns + `
		FROM withdrawals w
		LEFT JOIN service_state st ON st.id
		` + where(conds...) + `
		ORDER BY w.created_at_block DESC, w.withdrawal_root DESC
		LIMIT ` + q.add(p.Take) + ` OFFSET ` + q.add(p.Skip)
	} else {
		skip, take := q.add(p.Skip), q.add(p.Take)
		query = `
		SELECT ` + withdrawalColumns + `
		FROM withdrawals w
		LEFT JOIN service_state st ON st.id
		WHERE (w.created_at_block, w.withdrawal_root) <= (
		    SELECT w.created_at_block, w.withdrawal_root
		    FROM withdrawals w
		    ` + where(conds...) + `
		    ORDER BY w.created_at_block DESC, w.withdrawal_root DESC
		    LIMIT 1 OFFSET ` + skip + `)` + and(conds...) + `
		ORDER BY w.created_at_block DESC, w.withdrawal_root DESC
		LIMIT ` + take
	}
	out := make([]Withdrawal, 0, rowsFor(p.Take))
	if err := db.selectContext(ctx, &out, query, q.args...); err != nil {
		return nil, fmt.Errorf("list withdrawals: %w", Classify(err))
	}
	return out, nil
}

// listKeys describes where the sort keys of a list of withdrawals without
// a staker, and with at most one of operator and strategy, are: the table
// (aliased k) whose indexes give them in the list's order for every status,
// the condition selecting the list in it, and the list's kind and key in
// the bucket tables (withdrawal_pending_buckets and
// withdrawal_completed_buckets, migrations 00009 and 00011) and in
// withdrawal_counts. The kind and key are added to the statement's
// arguments when first used (PostgreSQL refuses arguments it cannot type).
type listKeys struct {
	q               *queryArgs
	table, column   string // the table and its column compared with the key
	kindArg, keyArg string
	kindPlc, keyPlc string
}

// keysOf returns the keys of f's list, whose arguments go to q.
func keysOf(f WithdrawalFilter, q *queryArgs) *listKeys {
	k := &listKeys{q: q, table: "withdrawals k", kindArg: "all"}
	switch {
	case f.DelegatedTo != "":
		k.kindArg, k.keyArg, k.column = "operator", f.DelegatedTo, "k.delegated_to"
	case f.Strategy != "":
		// withdrawal_strategies holds a row per withdrawal and strategy,
		// with the withdrawal's status columns (migration 00009): the GIN
		// index on withdrawals.strategies finds a strategy's withdrawals
		// but not in order.
		k.kindArg, k.keyArg, k.column = "strategy", f.Strategy, "k.strategy_address"
		k.table = "withdrawal_strategies k"
	}
	return k
}

func (k *listKeys) kind() string {
	if k.kindPlc == "" {
		k.kindPlc = k.q.add(k.kindArg)
	}
	return k.kindPlc
}

func (k *listKeys) key() string {
	if k.keyPlc == "" {
		k.keyPlc = k.q.add(k.keyArg)
	}
	return k.keyPlc
}

// cond returns the condition selecting the list in k.table, "" for the
// whole list.
func (k *listKeys) cond() string {
	if k.column == "" {
		return ""
	}
	return k.column + " = " + k.key()
}

// pendingCreatedAfter returns an expression counting the pending
// withdrawals of the list k created after block x.block (x is in scope):
// those of the later block buckets from withdrawal_pending_buckets, and
// those of that block's bucket by their creation block in an index.
func (k *listKeys) pendingCreatedAfter() string {
	return `(
		    COALESCE((SELECT sum(b.n) FROM withdrawal_pending_buckets b
		              WHERE b.kind = ` + k.kind() + ` AND b.key = ` + k.key() + `
		                AND b.bucket > withdrawal_block_bucket(x.block)), 0)
		    + (SELECT count(*) FROM ` + k.table + `
		       ` + where(k.cond(), `NOT k.is_completed AND k.created_at_block > x.block
		         AND k.created_at_block < (withdrawal_block_bucket(x.block) + 1) * `+strconv.Itoa(pendingBucketBlocks)) + `))`
}

// withdrawableBlock is a FROM item x whose block is the last creation block
// of a withdrawable withdrawal (head − minimum delay), −1 without a head.
const withdrawableBlock = `(SELECT COALESCE((SELECT head_block - min_withdrawal_delay_blocks FROM service_state WHERE id), -1) AS block) x`

// listWithdrawalsByBuckets returns one page of the withdrawals matching f,
// which has no staker and at most one of operator and strategy, newest
// first, created before block bound (none when 0), skipping skip of them.
// The page's keys come from an index-only scan of the list's index (see
// listKeys); only the page's rows are read.
//
// A deep page (skip of bucketSkip or more) does not walk skip index
// entries: the list's creation block bucket counts (WithdrawalBuckets)
// give the bucket where the skip lands and how many of the list's rows
// come before it, so the scan starts at that bucket's first key and skips
// the rest, at most one bucket's rows. A queued_withdrawable list is the
// queued list without its first rows (the pending withdrawals created
// after head − minimum delay, newest first), so its deep page is the
// queued page that many rows further.
//
// The page's statement is planned for its take, skip and bound: a generic
// plan, made for any of them, sorted the whole list (close to a second per
// page on the bench data). Summing the buckets in that statement had
// taken 5-9 ms per deep page under load, two fifths of GET /withdrawals'
// database time; the counts are now read apart, and the API's entity
// cache keeps them for each data version (see ListWithdrawalsWith). Counts
// read at an earlier data version than the page place it as of that
// version.
func (db *DB) listWithdrawalsByBuckets(ctx context.Context, f WithdrawalFilter, p Page, bound int64, skip int) ([]Withdrawal, error) {
	var q queryArgs
	k := keysOf(f, &q)
	status := f.Status
	if bound > 0 && status == WithdrawalQueuedWithdrawable {
		status = WithdrawalQueued
	}
	cond, err := status.condition("k")
	if err != nil {
		return nil, err
	}
	take, offset := q.add(p.Take), q.add(skip)
	var before string
	if bound > 0 {
		before = `k.created_at_block < ` + q.add(bound)
	}
	out := make([]Withdrawal, 0, rowsFor(p.Take))
	if err := db.selectContext(ctx, &out, `
		SELECT `+withdrawalColumns+`
		FROM (
		    SELECT k.created_at_block, k.withdrawal_root
		    FROM `+k.table+`
		    `+where(k.cond(), cond, before)+`
		    ORDER BY k.created_at_block DESC, k.withdrawal_root DESC
		    LIMIT `+take+` OFFSET `+offset+`
		) page
		JOIN withdrawals w ON w.withdrawal_root = page.withdrawal_root
		LEFT JOIN service_state st ON st.id
		ORDER BY page.created_at_block DESC, page.withdrawal_root DESC`, q.args...); err != nil {
		return nil, fmt.Errorf("list withdrawals: %w", Classify(err))
	}
	return out, nil
}

// WithdrawalBuckets are the numbers of the rows of a withdrawal list
// without a staker in each creation block bucket of pendingBucketBlocks
// blocks, newest bucket first (buckets without rows left out), and the
// number of the bucketed rows that come before the list's first row: the
// pending withdrawals a queued_withdrawable list leaves out (see
// listWithdrawalsByBuckets).
type WithdrawalBuckets struct {
	Buckets []int64
	Counts  []int
	Ahead   int
}

// start returns the creation block before which the page at skip starts
// (the end of the bucket holding its first row) and the number of the
// rows of that bucket before it; ok is false when skip is at or past the
// end of the list.
func (b WithdrawalBuckets) start(skip int) (bound int64, within int, ok bool) {
	i, within, ok := bucketOf(b.Counts, skip+b.Ahead)
	if !ok {
		return 0, 0, false
	}
	return (b.Buckets[i] + 1) * pendingBucketBlocks, within, true
}

// WithdrawalBucketCounts returns the creation block bucket counts of the
// list of withdrawals matching f, which has no staker and at most one of
// operator and strategy, from withdrawal_pending_buckets and
// withdrawal_completed_buckets, which triggers keep exact (a few hundred
// rows per list); a queued_withdrawable list counts its queued rows and
// the pending ones created after head − minimum delay.
func (db *DB) WithdrawalBucketCounts(ctx context.Context, f WithdrawalFilter) (WithdrawalBuckets, error) {
	var q queryArgs
	k := keysOf(f, &q)
	var tables []string
	if f.Status != WithdrawalCompleted {
		tables = append(tables, "withdrawal_pending_buckets")
	}
	if f.Status == "" || f.Status == WithdrawalCompleted {
		tables = append(tables, "withdrawal_completed_buckets")
	}
	if _, err := f.Status.condition("k"); err != nil {
		return WithdrawalBuckets{}, err
	}
	for i, table := range tables {
		tables[i] = `SELECT bucket, n FROM ` + table + ` WHERE kind = ` + k.kind() + ` AND key = ` + k.key()
	}
	ahead := `0`
	if f.Status == WithdrawalQueuedWithdrawable {
		ahead = `(SELECT ` + k.pendingCreatedAfter() + ` FROM ` + withdrawableBlock + `)`
	}
	var rows []struct {
		Bucket int64 `db:"bucket"`
		N      int   `db:"n"`
		Ahead  int   `db:"ahead"`
	}
	if err := db.selectPrepared(ctx, &rows, `
		SELECT b.bucket, b.n, `+ahead+`::bigint AS ahead
		FROM (
		    SELECT b.bucket, sum(b.n)::bigint AS n
		    FROM (`+strings.Join(tables, `
		          UNION ALL
		          `)+`) b
		    GROUP BY b.bucket
		    HAVING sum(b.n) > 0
		) b
		ORDER BY b.bucket DESC`, q.args...); err != nil {
		return WithdrawalBuckets{}, fmt.Errorf("withdrawal bucket counts: %w", Classify(err))
	}
	out := WithdrawalBuckets{Buckets: make([]int64, len(rows)), Counts: make([]int, len(rows))}
	for i, r := range rows {
		out.Buckets[i], out.Counts[i], out.Ahead = r.Bucket, r.N, r.Ahead
	}
	return out, nil
}

// CountWithdrawals returns the number of withdrawals matching f. Without a
// staker, and with at most one of operator and strategy, the count comes
// from withdrawal_counts, which triggers keep exact; queued_withdrawable
// then subtracts the pending withdrawals still inside the minimum delay,
// found by their creation block in an index. Other filters are selective
// enough to count the rows.
func (db *DB) CountWithdrawals(ctx context.Context, f WithdrawalFilter) (int, error) {
	if f.Staker == "" && (f.DelegatedTo == "" || f.Strategy == "") {
		return db.countWithdrawalsFromTotals(ctx, f)
	}
	var q queryArgs
	conds, err := f.conditions(&q)
	if err != nil {
		return 0, err
	}
	var n int
	if err := db.getContext(ctx, &n, `
		SELECT count(*)
		FROM withdrawals w
		`+where(conds...), q.args...); err != nil {
		return 0, fmt.Errorf("count withdrawals: %w", Classify(err))
	}
	return n, nil
}

// pendingBucketBlocks is the width in blocks of the creation block buckets
// of withdrawal_pending_buckets and withdrawal_completed_buckets: that of
// withdrawal_block_bucket (migration 00009).
const pendingBucketBlocks = 7200

// countWithdrawalsFromTotals counts the withdrawals matching f, which has no
// staker and at most one of operator and strategy, from withdrawal_counts.
// A queued_withdrawable count subtracts from the pending total the pending
// withdrawals created after head − minimum delay (none is withdrawable
// without a head): those of the later block buckets from
// withdrawal_pending_buckets, and those of that block's bucket by their
// creation block in an index.
func (db *DB) countWithdrawalsFromTotals(ctx context.Context, f WithdrawalFilter) (int, error) {
	var q queryArgs
	k := keysOf(f, &q)
	total := func(completed string) string {
		return `COALESCE((SELECT sum(n) FROM withdrawal_counts
		         WHERE kind = ` + k.kind() + ` AND key = ` + k.key() + completed + `), 0)`
	}
	var query string
	switch f.Status {
	case "":
		query = `SELECT ` + total("")
	case WithdrawalQueued:
		query = `SELECT ` + total(" AND NOT completed")
	case WithdrawalCompleted:
		query = `SELECT ` + total(" AND completed")
	case WithdrawalQueuedWithdrawable:
		query = `
		SELECT ` + total(" AND NOT completed") + ` - ` + k.pendingCreatedAfter() + `
		FROM ` + withdrawableBlock
	default:
		return 0, fmt.Errorf("%w: unknown withdrawal status %q", derrors.InvalidArgument, f.Status)
	}
	var n int
	if err := db.getContext(ctx, &n, query, q.args...); err != nil {
		return 0, fmt.Errorf("count withdrawals: %w", Classify(err))
	}
	return n, nil
}

// WithdrawalsByRoots returns the withdrawals with the given roots, in no
// particular order; unknown roots are left out.
func (db *DB) WithdrawalsByRoots(ctx context.Context, roots []string) ([]Withdrawal, error) {
	var out []Withdrawal
	if err := db.selectPrepared(ctx, &out, `
		SELECT `+withdrawalColumns+`
		FROM withdrawals w
		LEFT JOIN service_state st ON st.id
		WHERE w.withdrawal_root = ANY($1)`, pq.Array(roots)); err != nil {
		return nil, fmt.Errorf("withdrawals by root: %w", Classify(err))
	}
	return out, nil
}

// StakerWithdrawal is a withdrawal of the staker Key.
type StakerWithdrawal struct {
	Key string `db:"key"`
	Withdrawal
}

// ListWithdrawalsByStakers returns, for each of the given stakers, one page
// of its withdrawals matching status (empty for all), newest first, all in
// one statement. Rows are grouped by staker in the order of stakers.
func (db *DB) ListWithdrawalsByStakers(ctx context.Context, stakers []string, status WithdrawalStatus, p Page) ([]StakerWithdrawal, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var q queryArgs
	keys := q.add(pq.Array(stakers))
	conds, err := WithdrawalFilter{Status: status}.conditions(&q)
	if err != nil {
		return nil, err
	}
	out := make([]StakerWithdrawal, 0, rowsFor(p.Take*len(stakers)))
	if err := db.selectPrepared(ctx, &out, `
		SELECT k.key, x.*
		FROM unnest(`+keys+`::text[]) WITH ORDINALITY AS k(key, position)
		CROSS JOIN LATERAL (
			SELECT `+withdrawalColumns+`
			FROM withdrawals w
			LEFT JOIN service_state st ON st.id
			WHERE w.staker_address = k.key`+and(conds...)+`
			ORDER BY w.created_at_block DESC, w.withdrawal_root DESC
			LIMIT `+q.add(p.Take)+` OFFSET `+q.add(p.Skip)+`
		) x
		ORDER BY k.position, x.created_at_block DESC, x.withdrawal_root DESC`, q.args...); err != nil {
		return nil, fmt.Errorf("list staker withdrawals: %w", Classify(err))
	}
	return out, nil
}

// CountWithdrawalsByStakers returns the number of withdrawals matching
// status of each of the given stakers; stakers with none are left out.
func (db *DB) CountWithdrawalsByStakers(ctx context.Context, stakers []string, status WithdrawalStatus) (map[string]int, error) {
	var q queryArgs
	keys := q.add(pq.Array(stakers))
	conds, err := WithdrawalFilter{Status: status}.conditions(&q)
	if err != nil {
		return nil, err
	}
	return db.countByKeyPrepared(ctx, "count staker withdrawals", `
		SELECT w.staker_address AS key, count(*) AS n
		FROM withdrawals w
		WHERE w.staker_address = ANY(`+keys+`)`+and(conds...)+`
		GROUP BY w.staker_address`, q.args...)
}
