package store

import (
	"context"
	"fmt"
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
}

// withdrawalColumns selects a Withdrawal from withdrawals w and the
// service_state row st (left-joined: it may be missing in a fresh database).
const withdrawalColumns = `
	w.withdrawal_root, w.nonce::text AS nonce, w.staker_address, w.delegated_to,
	w.withdrawer_address, w.start_block, w.created_at_block, w.created_at,
	w.updated_at_block, w.updated_at, w.is_completed,
	COALESCE(NOT w.is_completed
	         AND w.created_at_block + st.min_withdrawal_delay_blocks <= st.head_block, false) AS is_withdrawable`

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
		  AND ` + alias + `.created_at_block <= (SELECT head_block - min_withdrawal_delay_blocks FROM service_state)`, nil
	case WithdrawalCompleted:
		return alias + ".is_completed", nil
	default:
		return "", fmt.Errorf("%w: unknown withdrawal status %q", derrors.InvalidArgument, s)
	}
}

// keysetSkip is the skip from which ListWithdrawals pages by keyset.
const keysetSkip = 1000

// ListWithdrawals returns one page of the withdrawals matching f, newest
// first. A deep page (skip of keysetSkip or more) is read by keyset: the
// sort key of its first row is found by walking only the sort-key index
// (an index-only scan where the filter allows), and the page's rows are
// then read from that key on, instead of reading and discarding skip whole
// rows.
func (db *DB) ListWithdrawals(ctx context.Context, f WithdrawalFilter, p Page) ([]Withdrawal, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if f.Strategy != "" && f.Staker == "" && f.DelegatedTo == "" {
		return db.listWithdrawalsOfStrategy(ctx, f, p)
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
		LEFT JOIN service_state st ON true
		` + where(conds...) + `
		ORDER BY w.created_at_block DESC, w.withdrawal_root DESC
		LIMIT ` + q.add(p.Take) + ` OFFSET ` + q.add(p.Skip)
	} else {
		skip, take := q.add(p.Skip), q.add(p.Take)
		query = `
		SELECT ` + withdrawalColumns + `
		FROM withdrawals w
		LEFT JOIN service_state st ON true
		WHERE (w.created_at_block, w.withdrawal_root) <= (
		    SELECT w.created_at_block, w.withdrawal_root
		    FROM withdrawals w
		    ` + where(conds...) + `
		    ORDER BY w.created_at_block DESC, w.withdrawal_root DESC
		    LIMIT 1 OFFSET ` + skip + `)` + and(conds...) + `
		ORDER BY w.created_at_block DESC, w.withdrawal_root DESC
		LIMIT ` + take
	}
	var out []Withdrawal
	if err := db.SelectContext(ctx, &out, query, q.args...); err != nil {
		return nil, fmt.Errorf("list withdrawals: %w", Classify(err))
	}
	return out, nil
}

// listWithdrawalsOfStrategy returns one page of the withdrawals from
// f.Strategy matching f.Status, newest first. The page's roots come from an
// index-only scan of withdrawal_strategies, whose indexes give a strategy's
// withdrawals in the list's order for every status (the GIN index on
// withdrawals.strategies finds them but not in order), skipping f's skip
// index entries rather than rows; only the page's rows are read.
func (db *DB) listWithdrawalsOfStrategy(ctx context.Context, f WithdrawalFilter, p Page) ([]Withdrawal, error) {
	status, err := f.Status.condition("ws")
	if err != nil {
		return nil, err
	}
	var q queryArgs
	var out []Withdrawal
	if err := db.SelectContext(ctx, &out, `
		SELECT `+withdrawalColumns+`
		FROM (
		    SELECT ws.created_at_block, ws.withdrawal_root
		    FROM withdrawal_strategies ws
		    WHERE ws.strategy_address = `+q.add(f.Strategy)+and(status)+`
		    ORDER BY ws.created_at_block DESC, ws.withdrawal_root DESC
		    LIMIT `+q.add(p.Take)+` OFFSET `+q.add(p.Skip)+`
		) page
		JOIN withdrawals w ON w.withdrawal_root = page.withdrawal_root
		LEFT JOIN service_state st ON true
		ORDER BY page.created_at_block DESC, page.withdrawal_root DESC`, q.args...); err != nil {
		return nil, fmt.Errorf("list withdrawals: %w", Classify(err))
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
	if err := db.GetContext(ctx, &n, `
		SELECT count(*)
		FROM withdrawals w
		`+where(conds...), q.args...); err != nil {
		return 0, fmt.Errorf("count withdrawals: %w", Classify(err))
	}
	return n, nil
}

// pendingBucketBlocks is the width in blocks of the creation block buckets
// of withdrawal_pending_buckets: that of withdrawal_block_bucket (migration
// 00009).
const pendingBucketBlocks = "7200"

// countWithdrawalsFromTotals counts the withdrawals matching f, which has no
// staker and at most one of operator and strategy, from withdrawal_counts.
// A queued_withdrawable count subtracts from the pending total the pending
// withdrawals created after head − minimum delay (none is withdrawable
// without a head): those of the later block buckets from
// withdrawal_pending_buckets, and those of that block's bucket by their
// creation block in an index.
func (db *DB) countWithdrawalsFromTotals(ctx context.Context, f WithdrawalFilter) (int, error) {
	var q queryArgs
	kind, key := q.add("all"), q.add("")
	// recent counts the pending withdrawals created after block x and
	// before the next bucket.
	recent := `
		SELECT count(*) FROM withdrawals w
		WHERE NOT w.is_completed AND w.created_at_block > x.block
		  AND w.created_at_block < (withdrawal_block_bucket(x.block) + 1) * ` + pendingBucketBlocks
	switch {
	case f.DelegatedTo != "":
		q.args[0], q.args[1] = "operator", f.DelegatedTo
		recent += ` AND w.delegated_to = ` + key
	case f.Strategy != "":
		q.args[0], q.args[1] = "strategy", f.Strategy
		recent = `
		SELECT count(*) FROM withdrawal_strategies ws
		WHERE ws.strategy_address = ` + key + ` AND NOT ws.is_completed AND ws.created_at_block > x.block
		  AND ws.created_at_block < (withdrawal_block_bucket(x.block) + 1) * ` + pendingBucketBlocks
	}
	total := func(completed string) string {
		return `COALESCE((SELECT sum(n) FROM withdrawal_counts
		         WHERE kind = ` + kind + ` AND key = ` + key + completed + `), 0)`
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
		SELECT ` + total(" AND NOT completed") + `
		     - COALESCE((SELECT sum(b.n) FROM withdrawal_pending_buckets b
		                 WHERE b.kind = ` + kind + ` AND b.key = ` + key + `
		                   AND b.bucket > withdrawal_block_bucket(x.block)), 0)
		     - (` + recent + `)
		FROM (SELECT COALESCE((SELECT head_block - min_withdrawal_delay_blocks FROM service_state), -1) AS block) x`
	default:
		return 0, fmt.Errorf("%w: unknown withdrawal status %q", derrors.InvalidArgument, f.Status)
	}
	var n int
	if err := db.GetContext(ctx, &n, query, q.args...); err != nil {
		return 0, fmt.Errorf("count withdrawals: %w", Classify(err))
	}
	return n, nil
}

// WithdrawalsByRoots returns the withdrawals with the given roots, in no
// particular order; unknown roots are left out.
func (db *DB) WithdrawalsByRoots(ctx context.Context, roots []string) ([]Withdrawal, error) {
	var out []Withdrawal
	if err := db.SelectContext(ctx, &out, `
		SELECT `+withdrawalColumns+`
		FROM withdrawals w
		LEFT JOIN service_state st ON true
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
	var out []StakerWithdrawal
	if err := db.SelectContext(ctx, &out, `
		SELECT k.key, x.*
		FROM unnest(`+keys+`::text[]) WITH ORDINALITY AS k(key, position)
		CROSS JOIN LATERAL (
			SELECT `+withdrawalColumns+`
			FROM withdrawals w
			LEFT JOIN service_state st ON true
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
	return db.countByKey(ctx, "count staker withdrawals", `
		SELECT w.staker_address AS key, count(*) AS n
		FROM withdrawals w
		WHERE w.staker_address = ANY(`+keys+`)`+and(conds...)+`
		GROUP BY w.staker_address`, q.args...)
}
