package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"
)

// The event feeds list one kind of event newest first within a date range,
// across the protocol or for one subject (a staker, an operator or an AVS):
// the filter's subject fields are optional, so the global feed and every
// per-subject feed of a kind share one rule. Each list reads the sort keys
// of its page from an index on (time DESC, block DESC, log index DESC),
// alone or after the subject, and fetches only the page's rows.

// ListDelegationEvents returns one page of the delegation events matching
// f, newest first. f.Staker and f.Operator are optional.
func (db *DB) ListDelegationEvents(ctx context.Context, f DelegationEventFilter, p Page) ([]DelegationEvent, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var q queryArgs
	conds := f.conditions(&q)
	out := make([]DelegationEvent, 0, rowsFor(p.Take))
	if err := db.selectPrepared(ctx, &out, `
		SELECT e.tx_hash, e.block_number, e.log_index, e.block_time, e.type::text AS type,
		       e.staker_address, e.operator_address, e.strategy_address, e.shares::text AS shares,
		       s.underlying_token,
		       strategy_underlying(e.shares, s.shares_to_underlying, s.decimals)::text AS underlying_value,
		       strategy_eth(e.shares, s.shares_to_underlying, s.decimals, s.eth_price)::text AS eth_value
		FROM (
			SELECT e.block_time, e.block_number, e.log_index
			FROM delegation_events e
			`+where(conds...)+`
			ORDER BY e.block_time DESC, e.block_number DESC, e.log_index DESC
			LIMIT `+q.add(p.Take)+` OFFSET `+q.add(p.Skip)+`
		) x
		JOIN delegation_events e ON e.block_number = x.block_number AND e.log_index = x.log_index
		LEFT JOIN strategies s ON s.address = e.strategy_address
		ORDER BY x.block_time DESC, x.block_number DESC, x.log_index DESC`, q.args...); err != nil {
		return nil, fmt.Errorf("list delegation events: %w", Classify(err))
	}
	return out, nil
}

// CountDelegationEvents returns the number of delegation events matching f.
func (db *DB) CountDelegationEvents(ctx context.Context, f DelegationEventFilter) (int, error) {
	var q queryArgs
	count := func(from, to time.Time) string {
		g := f
		g.Start, g.End = from, to
		return `SELECT count(*) FROM delegation_events e ` + where(g.conditions(&q)...)
	}
	if f.TxHash == "" && f.Strategy == "" && f.Staker == "" {
		// The day counts' subjects of delegation events: the operator,
		// the type, and the type with the operator.
		subject := strings.TrimSpace(f.Type + " " + f.Operator)
		return db.countRowsPrepared(ctx, "count delegation events",
			"SELECT "+dayCounted(&q, dayCountedDelegations, subject, f.Start, f.End, count), q.args...)
	}
	return db.countRowsPrepared(ctx, "count delegation events", count(f.Start, f.End), q.args...)
}

// countRows runs a statement that selects one count.
func (db *DB) countRows(ctx context.Context, what, query string, args ...any) (int, error) {
	return db.countOne(ctx, db.selectContext, what, query, args...)
}

// countRowsPrepared is countRows with the statement kept prepared (see
// selectPrepared), for a count whose plan does not depend on its
// arguments.
func (db *DB) countRowsPrepared(ctx context.Context, what, query string, args ...any) (int, error) {
	return db.countOne(ctx, db.selectPrepared, what, query, args...)
}

// countOne runs with run a query that returns one count.
func (db *DB) countOne(ctx context.Context, run func(ctx context.Context, dest any, query string, args ...any) error, what, query string, args ...any) (int, error) {
	var n []int
	if err := run(ctx, &n, query, args...); err != nil {
		return 0, fmt.Errorf("%s: %w", what, Classify(err))
	}
	if len(n) != 1 {
		return 0, fmt.Errorf("%s: %d rows", what, len(n))
	}
	return n[0], nil
}

// DepositFilter selects deposits; every field is optional. Start and End
// bound the deposits' time when set. Token matches the deposited token as
// Deposit.TokenAddress reports it.
type DepositFilter struct {
	Start    time.Time
	End      time.Time
	TxHash   string
	Token    string
	Strategy string
	Staker   string
}

// isZero reports whether f selects every deposit.
func (f DepositFilter) isZero() bool { return f == DepositFilter{} }

func (f DepositFilter) conditions(q *queryArgs) []string {
	var conds []string
	if !f.Start.IsZero() {
		conds = append(conds, "d.block_time >= "+q.add(f.Start.UTC()))
	}
	if !f.End.IsZero() {
		conds = append(conds, "d.block_time <= "+q.add(f.End.UTC()))
	}
	if f.TxHash != "" {
		conds = append(conds, "d.tx_hash = "+q.add(f.TxHash))
	}
	if f.Token != "" {
		// The token a deposit names, or for one that names none its
		// strategy's underlying token (see Deposit.TokenAddress), written
		// so that the token and strategy indexes can serve it: an array
		// of strategies, not a subquery the planner hashes row by row.
		t := q.add(f.Token)
		conds = append(conds, "(d.token_address = "+t+" OR (d.token_address IS NULL AND d.strategy_address = ANY(ARRAY(SELECT address FROM strategies WHERE underlying_token = "+t+"))))")
	}
	if f.Strategy != "" {
		conds = append(conds, "d.strategy_address = "+q.add(f.Strategy))
	}
	if f.Staker != "" {
		conds = append(conds, "d.staker_address = "+q.add(f.Staker))
	}
	return conds
}

// ListDeposits returns one page of the deposits matching f, newest first,
// with the value of their shares at the strategy's current rate and price.
func (db *DB) ListDeposits(ctx context.Context, f DepositFilter, p Page) ([]Deposit, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var q queryArgs
	conds := f.conditions(&q)
	with, offset := "", q.add(p.Skip)
	if p.Skip >= bucketSkip && f.TxHash == "" && f.Token == "" && f.Staker == "" && f.Start.IsZero() && f.End.IsZero() {
		// A deep page of every deposit, or of a strategy's, starts in
		// the UTC day that holds its first row: the kept day counts,
		// summed from the newest day down (a row per day), give that day
		// and the rows of the newer days, so the scan skips only within
		// the day instead of walking skip index entries.
		with = bucketStart(`
		    SELECT c.day AS bucket, c.n
		    FROM event_day_counts c
		    WHERE c.feed = `+q.add(dayCountedDeposits)+` AND c.subject = `+q.add(f.Strategy), "DESC", offset)
		conds = append(conds, "d.block_time < (SELECT (start.bucket + 1)::timestamp AT TIME ZONE 'UTC' FROM start)")
		offset = "(SELECT start.skip FROM start)"
	}
	// A page of a time range (the deposit feed's) is kept prepared like
	// the other feeds' pages: its generic plan walks the time index. Without
	// a range, the generic plan, which expects the LIMIT to take a tenth
	// of the table, scans every deposit, so such pages, and the deep ones,
	// are planned for their arguments.
	run := db.selectPrepared
	if with != "" || f.Start.IsZero() {
		run = db.selectContext
	}
	out := make([]Deposit, 0, rowsFor(p.Take))
	if err := run(ctx, &out, with+`
		SELECT d.tx_hash, d.block_number, d.log_index, d.block_time, d.staker_address,
		       COALESCE(d.token_address, s.underlying_token) AS token_address,
		       d.strategy_address, d.shares::text AS shares, s.underlying_token,
		       strategy_underlying(d.shares, s.shares_to_underlying, s.decimals)::text AS underlying_value,
		       strategy_eth(d.shares, s.shares_to_underlying, s.decimals, s.eth_price)::text AS eth_value
		FROM (
			SELECT d.block_time, d.block_number, d.log_index
			FROM deposits d
			`+where(conds...)+`
			ORDER BY d.block_time DESC, d.block_number DESC, d.log_index DESC
			LIMIT `+q.add(p.Take)+` OFFSET `+offset+`
		) x
		JOIN deposits d ON d.block_number = x.block_number AND d.log_index = x.log_index
		LEFT JOIN strategies s ON s.address = d.strategy_address
		ORDER BY x.block_time DESC, x.block_number DESC, x.log_index DESC`, q.args...); err != nil {
		return nil, fmt.Errorf("list deposits: %w", Classify(err))
	}
	return out, nil
}

// CountDeposits returns the number of deposits matching f. The number of
// all deposits is the latest daily snapshot's, which every refresh derives
// in the transaction that applies events, instead of a count of millions
// of rows.
func (db *DB) CountDeposits(ctx context.Context, f DepositFilter) (int, error) {
	if f.isZero() {
		return db.countRowsPrepared(ctx, "count deposits", `
			SELECT COALESCE((SELECT total_deposits FROM daily_snapshots ORDER BY day DESC LIMIT 1), 0)`)
	}
	var q queryArgs
	count := func(from, to time.Time) string {
		g := f
		g.Start, g.End = from, to
		return `SELECT count(*) FROM deposits d ` + where(g.conditions(&q)...)
	}
	if f.TxHash == "" && f.Token == "" && f.Staker == "" {
		return db.countRowsPrepared(ctx, "count deposits",
			"SELECT "+dayCounted(&q, dayCountedDeposits, f.Strategy, f.Start, f.End, count), q.args...)
	}
	return db.countRowsPrepared(ctx, "count deposits", count(f.Start, f.End), q.args...)
}

// The kinds of withdrawal event.
const (
	WithdrawalEventQueued    = "WITHDRAWAL_QUEUED"
	WithdrawalEventCompleted = "WITHDRAWAL_COMPLETED"
)

// WithdrawalEventFilter selects withdrawal events: the queuing of each
// withdrawal and the completion of each completed one. The time range
// [Start, End] is required; the other fields are optional. Type is
// WithdrawalEventQueued or WithdrawalEventCompleted.
type WithdrawalEventFilter struct {
	Start       time.Time
	End         time.Time
	TxHash      string
	Type        string
	Root        string
	DelegatedTo string
	Withdrawer  string
	Staker      string
}

// WithdrawalEvent is the queuing or the completion of a withdrawal, with
// the withdrawal's strategies and shares (as queued) and, per strategy,
// the underlying token and the value of the shares at the strategy's
// current rate and price ("" where unknown), or nil for those three when
// they were not read.
type WithdrawalEvent struct {
	Type              string         `db:"type"`
	TxHash            string         `db:"tx_hash"`
	BlockNumber       int64          `db:"block_number"`
	LogIndex          int            `db:"log_index"`
	BlockTime         time.Time      `db:"block_time"`
	WithdrawalRoot    string         `db:"withdrawal_root"`
	Nonce             string         `db:"nonce"`
	StakerAddress     string         `db:"staker_address"`
	DelegatedTo       string         `db:"delegated_to"`
	WithdrawerAddress string         `db:"withdrawer_address"`
	StartBlock        int64          `db:"start_block"`
	Strategies        pq.StringArray `db:"strategies"`
	Shares            pq.StringArray `db:"shares"`
	UnderlyingTokens  pq.StringArray `db:"underlying_tokens"`
	UnderlyingValues  pq.StringArray `db:"underlying_values"`
	ETHValues         pq.StringArray `db:"eth_values"`
}

// branches returns the SELECTs of the sort keys (time, block, log index)
// of the queued and completed events matching f, each ordered newest first
// and limited to limit rows (a placeholder or an expression); a Type
// filter leaves one branch out. before, unless empty, is an expression of
// a time that the events must be earlier than.
func (f WithdrawalEventFilter) branches(q *queryArgs, limit, before string) []string {
	var common []string
	if f.Root != "" {
		common = append(common, "w.withdrawal_root = "+q.add(f.Root))
	}
	if f.DelegatedTo != "" {
		common = append(common, "w.delegated_to = "+q.add(f.DelegatedTo))
	}
	if f.Withdrawer != "" {
		common = append(common, "w.withdrawer_address = "+q.add(f.Withdrawer))
	}
	if f.Staker != "" {
		common = append(common, "w.staker_address = "+q.add(f.Staker))
	}
	start, end := q.add(f.Start.UTC()), q.add(f.End.UTC())
	tx := ""
	if f.TxHash != "" {
		tx = q.add(f.TxHash)
	}
	var out []string
	if f.Type == "" || f.Type == WithdrawalEventQueued {
		conds := append([]string{"w.created_at >= " + start, "w.created_at <= " + end}, common...)
		if before != "" {
			conds = append(conds, "w.created_at < "+before)
		}
		if tx != "" {
			conds = append(conds, "w.tx_hash = "+tx)
		}
		out = append(out, `
			SELECT '`+WithdrawalEventQueued+`' AS type, w.block_number, w.log_index, w.created_at AS block_time
			FROM withdrawals w
			`+where(conds...)+`
			ORDER BY w.created_at DESC, w.block_number DESC, w.log_index DESC
			LIMIT `+limit)
	}
	if f.Type == "" || f.Type == WithdrawalEventCompleted {
		conds := append([]string{"w.is_completed", "w.completed_at >= " + start, "w.completed_at <= " + end}, common...)
		if before != "" {
			conds = append(conds, "w.completed_at < "+before)
		}
		if tx != "" {
			conds = append(conds, "w.completed_tx_hash = "+tx)
		}
		out = append(out, `
			SELECT '`+WithdrawalEventCompleted+`' AS type, w.completed_block AS block_number,
			       w.completed_log_index AS log_index, w.completed_at AS block_time
			FROM withdrawals w
			`+where(conds...)+`
			ORDER BY w.completed_at DESC, w.completed_block DESC, w.completed_log_index DESC
			LIMIT `+limit)
	}
	return out
}

// ListWithdrawalEvents returns one page of the withdrawal events matching
// f, newest first. Each branch (queued, completed) reads the sort keys of
// at most skip+take events from its index, without visiting the table;
// the page is cut from their merge, and only its withdrawals are read.
//
// A deep page of the whole feed over a range holding a whole UTC day
// starts in the day that holds its first event: the kept day counts of
// both kinds of event, summed from the newest day down (with the partial
// days at the range's edges counted as CountWithdrawalEvents counts
// them), give that day and the events of the newer days, so that each
// branch skips only within the day. Walking the skipped events instead
// took 2 ms alone at skip 8,056 of a week (the merge of 8,068 keys of
// each branch).
//
// withValues tells whether to read each strategy's underlying token and
// the values of its shares; without them those three columns are NULL.
// Computing the values (a numeric power and divisions for each strategy)
// was half of a 12-event page's time or more in pgbench (0.62-0.93 ms
// with them, 0.29-0.33 without), and most pages show only the amounts.
func (db *DB) ListWithdrawalEvents(ctx context.Context, f WithdrawalEventFilter, p Page, withValues bool) ([]WithdrawalEvent, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var q queryArgs
	with, skip, before := "", q.add(p.Skip), ""
	if p.Skip >= bucketSkip && f.byDay() && hasWholeDay(f.Start, f.End) {
		with = bucketStart(dayBuckets(&q, f.dayCountedFeeds(), f.Start, f.End, func(feed string, from, to time.Time) string {
			g := f
			g.Type, g.Start, g.End = withdrawalEventOfFeed[feed], from, to
			return "SELECT count(*) FROM (" + g.branches(&q, "ALL", "")[0] + ") b"
		}), "DESC", skip)
		before = "(SELECT (start.bucket + 1)::timestamp AT TIME ZONE 'UTC' FROM start)"
		skip = "(SELECT start.skip FROM start)"
	}
	take := q.add(p.Take)
	limit := "(" + skip + "::bigint + " + take + "::bigint)"
	union := ""
	for i, b := range f.branches(&q, limit, before) {
		if i > 0 {
			union += "\n\t\t\tUNION ALL"
		}
		union += "\n\t\t\t(" + b + ")"
	}
	strategies, values := `
		       w.strategies::text[] AS strategies, w.shares::text[] AS shares,
		       NULL::text[] AS underlying_tokens, NULL::text[] AS underlying_values, NULL::text[] AS eth_values`, ""
	if withValues {
		strategies = `
		       v.strategies, v.shares, v.underlying_tokens, v.underlying_values, v.eth_values`
		values = `
		CROSS JOIN LATERAL (
			SELECT array_agg(u.strategy::text ORDER BY u.i) AS strategies,
			       array_agg(u.shares::text ORDER BY u.i) AS shares,
			       array_agg(COALESCE(s.underlying_token::text, '') ORDER BY u.i) AS underlying_tokens,
			       array_agg(COALESCE(strategy_underlying(u.shares, s.shares_to_underlying, s.decimals)::text, '') ORDER BY u.i) AS underlying_values,
			       array_agg(COALESCE(strategy_eth(u.shares, s.shares_to_underlying, s.decimals, s.eth_price)::text, '') ORDER BY u.i) AS eth_values
			FROM unnest(w.strategies, w.shares) WITH ORDINALITY AS u(strategy, shares, i)
			LEFT JOIN strategies s ON s.address = u.strategy
		) v`
	}
	out := make([]WithdrawalEvent, 0, rowsFor(p.Take))
	if err := db.selectPrepared(ctx, &out, with+`
		SELECT x.type, w.tx_hash, x.block_number, x.log_index, x.block_time,
		       w.withdrawal_root, w.nonce::text AS nonce, w.staker_address, w.delegated_to,
		       w.withdrawer_address, w.start_block,`+strategies+`
		FROM (
			SELECT * FROM (`+union+`
			) e
			ORDER BY e.block_time DESC, e.block_number DESC, e.log_index DESC
			LIMIT `+take+` OFFSET `+skip+`
		) x
		CROSS JOIN LATERAL (
			-- The event's withdrawal, by the event's block and log index.
			SELECT w.withdrawal_root, w.tx_hash, w.nonce, w.staker_address, w.delegated_to,
			       w.withdrawer_address, w.start_block, w.strategies, w.shares
			FROM withdrawals w
			WHERE x.type = '`+WithdrawalEventQueued+`' AND w.block_number = x.block_number AND w.log_index = x.log_index
			UNION ALL
			SELECT w.withdrawal_root, w.completed_tx_hash, w.nonce, w.staker_address, w.delegated_to,
			       w.withdrawer_address, w.start_block, w.strategies, w.shares
			FROM withdrawals w
			WHERE x.type = '`+WithdrawalEventCompleted+`' AND w.is_completed
			  AND w.completed_block = x.block_number AND w.completed_log_index = x.log_index
		) w`+values+`
		ORDER BY x.block_time DESC, x.block_number DESC, x.log_index DESC`, q.args...); err != nil {
		return nil, fmt.Errorf("list withdrawal events: %w", Classify(err))
	}
	return out, nil
}

// byDay reports whether f selects whole kinds of withdrawal events over
// its range, which the kept day counts count.
func (f WithdrawalEventFilter) byDay() bool {
	return f.TxHash == "" && f.Root == "" && f.DelegatedTo == "" && f.Withdrawer == "" && f.Staker == ""
}

// withdrawalEventOfFeed is the kind of withdrawal event that each day
// counted feed of withdrawal events counts.
var withdrawalEventOfFeed = map[string]string{
	dayCountedWithdrawalQueued:    WithdrawalEventQueued,
	dayCountedWithdrawalCompleted: WithdrawalEventCompleted,
}

// dayCountedFeeds returns the day counted feeds of the kinds of event f
// selects.
func (f WithdrawalEventFilter) dayCountedFeeds() []string {
	var feeds []string
	for _, feed := range []string{dayCountedWithdrawalQueued, dayCountedWithdrawalCompleted} {
		if f.Type == "" || f.Type == withdrawalEventOfFeed[feed] {
			feeds = append(feeds, feed)
		}
	}
	return feeds
}

// CountWithdrawalEvents returns the number of withdrawal events matching f.
func (db *DB) CountWithdrawalEvents(ctx context.Context, f WithdrawalEventFilter) (int, error) {
	var q queryArgs
	byDay := f.byDay()
	var sums []string
	for _, typ := range []string{WithdrawalEventQueued, WithdrawalEventCompleted} {
		if f.Type != "" && f.Type != typ {
			continue
		}
		count := func(from, to time.Time) string {
			g := f
			g.Type, g.Start, g.End = typ, from, to
			return "SELECT count(*) FROM (" + g.branches(&q, "ALL", "")[0] + ") b"
		}
		feed := dayCountedWithdrawalQueued
		if typ == WithdrawalEventCompleted {
			feed = dayCountedWithdrawalCompleted
		}
		if byDay {
			sums = append(sums, dayCounted(&q, feed, "", f.Start, f.End, count))
		} else {
			sums = append(sums, "("+count(f.Start, f.End)+")")
		}
	}
	return db.countRowsPrepared(ctx, "count withdrawal events", "SELECT "+strings.Join(sums, " + "), q.args...)
}

// RewardsEventFilter selects rewards submissions as events. The time range
// [Start, End] is required; the other fields are optional.
type RewardsEventFilter struct {
	Start  time.Time
	End    time.Time
	TxHash string
	Hash   string
	Token  string
	AVS    string
}

func (f RewardsEventFilter) conditions(q *queryArgs) []string {
	conds := []string{
		"r.block_time >= " + q.add(f.Start.UTC()),
		"r.block_time <= " + q.add(f.End.UTC()),
	}
	if f.TxHash != "" {
		conds = append(conds, "r.tx_hash = "+q.add(f.TxHash))
	}
	if f.Hash != "" {
		conds = append(conds, "r.rewards_submission_hash = "+q.add(f.Hash))
	}
	if f.Token != "" {
		conds = append(conds, "r.token_address = "+q.add(f.Token))
	}
	if f.AVS != "" {
		conds = append(conds, "r.avs_address = "+q.add(f.AVS))
	}
	return conds
}

// RewardsEvent is a rewards submission as an event: the submission, the
// ETH value of its amount at the reward token's current price, and its
// strategies with their multipliers, amounts and the amounts' ETH values
// (ETHValue and the AmountETHValues are "" when the token is unknown).
type RewardsEvent struct {
	RewardsSubmission
	ETHValue        string         `db:"eth_value"`
	Strategies      pq.StringArray `db:"strategies"`
	Multipliers     pq.StringArray `db:"multipliers"`
	Amounts         pq.StringArray `db:"amounts"`
	AmountETHValues pq.StringArray `db:"amount_eth_values"`
}

// ListRewardsEvents returns one page of the rewards submissions matching f,
// newest first.
func (db *DB) ListRewardsEvents(ctx context.Context, f RewardsEventFilter, p Page) ([]RewardsEvent, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var q queryArgs
	conds := f.conditions(&q)
	out := make([]RewardsEvent, 0, rowsFor(p.Take))
	if err := db.selectPrepared(ctx, &out, `
		SELECT `+rewardsSubmissionColumns+`,
		       COALESCE(token_eth(r.amount, t.decimals, t.eth_price)::text, '') AS eth_value,
		       COALESCE(v.strategies, '{}') AS strategies, COALESCE(v.multipliers, '{}') AS multipliers,
		       COALESCE(v.amounts, '{}') AS amounts, COALESCE(v.amount_eth_values, '{}') AS amount_eth_values
		FROM (
			SELECT r.rewards_submission_hash, r.block_time, r.block_number, r.log_index
			FROM rewards_submissions r
			`+where(conds...)+`
			ORDER BY r.block_time DESC, r.block_number DESC, r.log_index DESC
			LIMIT `+q.add(p.Take)+` OFFSET `+q.add(p.Skip)+`
		) x
		JOIN rewards_submissions r ON r.rewards_submission_hash = x.rewards_submission_hash
		LEFT JOIN tokens t ON t.address = r.token_address
		CROSS JOIN LATERAL (
			SELECT array_agg(rs.strategy_address::text ORDER BY rs.position) AS strategies,
			       array_agg(rs.multiplier::text ORDER BY rs.position) AS multipliers,
			       array_agg(rs.amount::text ORDER BY rs.position) AS amounts,
			       array_agg(COALESCE(token_eth(rs.amount, t.decimals, t.eth_price)::text, '') ORDER BY rs.position) AS amount_eth_values
			FROM rewards_submission_strategies rs
			WHERE rs.rewards_submission_hash = r.rewards_submission_hash
		) v
		ORDER BY x.block_time DESC, x.block_number DESC, x.log_index DESC`, q.args...); err != nil {
		return nil, fmt.Errorf("list rewards events: %w", Classify(err))
	}
	return out, nil
}

// CountRewardsEvents returns the number of rewards submissions matching f.
func (db *DB) CountRewardsEvents(ctx context.Context, f RewardsEventFilter) (int, error) {
	var q queryArgs
	conds := f.conditions(&q)
	return db.countRowsPrepared(ctx, "count rewards events", `
		SELECT count(*) FROM rewards_submissions r `+where(conds...), q.args...)
}

// RegistrationEventFilter selects operator registrations to and
// deregistrations from AVS. The time range [Start, End] is required; the
// other fields are optional.
type RegistrationEventFilter struct {
	Start      time.Time
	End        time.Time
	TxHash     string
	Registered *bool
	AVS        string
	Operator   string
}

func (f RegistrationEventFilter) conditions(q *queryArgs) []string {
	conds := []string{
		"e.block_time >= " + q.add(f.Start.UTC()),
		"e.block_time <= " + q.add(f.End.UTC()),
	}
	if f.TxHash != "" {
		conds = append(conds, "e.tx_hash = "+q.add(f.TxHash))
	}
	if f.Registered != nil {
		conds = append(conds, "e.registered = "+q.add(*f.Registered))
	}
	if f.AVS != "" {
		conds = append(conds, "e.avs_address = "+q.add(f.AVS))
	}
	if f.Operator != "" {
		conds = append(conds, "e.operator_address = "+q.add(f.Operator))
	}
	return conds
}

// RegistrationEvent is an operator's registration to or deregistration
// from an AVS.
type RegistrationEvent struct {
	TxHash          string    `db:"tx_hash"`
	BlockNumber     int64     `db:"block_number"`
	LogIndex        int       `db:"log_index"`
	BlockTime       time.Time `db:"block_time"`
	OperatorAddress string    `db:"operator_address"`
	AVSAddress      string    `db:"avs_address"`
	Registered      bool      `db:"registered"`
}

// ListRegistrationEvents returns one page of the registration events
// matching f, newest first.
func (db *DB) ListRegistrationEvents(ctx context.Context, f RegistrationEventFilter, p Page) ([]RegistrationEvent, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var q queryArgs
	conds := f.conditions(&q)
	out := make([]RegistrationEvent, 0, rowsFor(p.Take))
	if err := db.selectPrepared(ctx, &out, `
		SELECT e.tx_hash, e.block_number, e.log_index, e.block_time, e.operator_address, e.avs_address, e.registered
		FROM registration_events e
		`+where(conds...)+`
		ORDER BY e.block_time DESC, e.block_number DESC, e.log_index DESC
		LIMIT `+q.add(p.Take)+` OFFSET `+q.add(p.Skip), q.args...); err != nil {
		return nil, fmt.Errorf("list registration events: %w", Classify(err))
	}
	return out, nil
}

// CountRegistrationEvents returns the number of registration events
// matching f.
func (db *DB) CountRegistrationEvents(ctx context.Context, f RegistrationEventFilter) (int, error) {
	var q queryArgs
	conds := f.conditions(&q)
	return db.countRowsPrepared(ctx, "count registration events", `
		SELECT count(*) FROM registration_events e `+where(conds...), q.args...)
}
