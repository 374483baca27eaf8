package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"
)

// Staker is a staker as stored: its delegation and when it was first and
// last seen.
type Staker struct {
	Address         string    `db:"address"`
	OperatorAddress *string   `db:"operator_address"`
	CreatedAtBlock  int64     `db:"created_at_block"`
	UpdatedAtBlock  int64     `db:"updated_at_block"`
	CreatedAt       time.Time `db:"created_at"`
	UpdatedAt       time.Time `db:"updated_at"`
}

const stakerColumns = `
	s.address, s.operator_address, s.created_at_block, s.updated_at_block, s.created_at, s.updated_at`

// StakersByAddresses returns the stakers with the given addresses, in no
// particular order; addresses never seen are left out.
func (db *DB) StakersByAddresses(ctx context.Context, addresses []string) ([]Staker, error) {
	var out []Staker
	if err := db.selectPrepared(ctx, &out, `
		SELECT `+stakerColumns+`
		FROM stakers s
		WHERE s.address = ANY($1)`, pq.Array(addresses)); err != nil {
		return nil, fmt.Errorf("stakers by address: %w", Classify(err))
	}
	return out, nil
}

// OperatorStaker is a staker delegated to the operator Key.
type OperatorStaker struct {
	Key string `db:"key"`
	Staker
}

// ListOperatorStakers returns, for each of the given operators, one page of
// the stakers delegated to it ordered by address, all in one statement. Rows
// are grouped by operator in the order of operators.
func (db *DB) ListOperatorStakers(ctx context.Context, operators []string, p Page) ([]OperatorStaker, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out []OperatorStaker
	if err := db.selectPrepared(ctx, &out, `
		SELECT k.key, x.*
		FROM unnest($1::text[]) WITH ORDINALITY AS k(key, position)
		CROSS JOIN LATERAL (
			SELECT `+stakerColumns+`
			FROM stakers s
			WHERE s.operator_address = k.key
			ORDER BY s.address
			LIMIT $2 OFFSET $3
		) x
		ORDER BY k.position, x.address`, pq.Array(operators), p.Take, p.Skip); err != nil {
		return nil, fmt.Errorf("list operator stakers: %w", Classify(err))
	}
	return out, nil
}

// CountOperatorStakers returns the number of stakers delegated to each of
// the given operators; operators with none are left out of the map.
func (db *DB) CountOperatorStakers(ctx context.Context, operators []string) (map[string]int, error) {
	return db.countByKeyPrepared(ctx, "count operator stakers", `
		SELECT operator_address AS key, count(*) AS n
		FROM stakers
		WHERE operator_address = ANY($1)
		GROUP BY operator_address`, pq.Array(operators))
}

// avsStakerCondition returns the condition that a staker delegated to an
// operator registered with an AVS is one of the stakers the AVS's
// totalStakers counts, given the expressions of the registration being
// active, of the staker's holding strategies and of the AVS's restakeable
// strategies: the registration is active and the staker holds shares in a
// strategy the AVS restakes. The refresh counts the stakers of each
// registration by it, and the lists select them by it.
func avsStakerCondition(active, holdings, strategies string) string {
	return active + " AND " + holdings + " && " + strategies
}

// registrationBuckets is the number of address buckets in which each
// registration's stakers are counted (avs_operators.staker_buckets): the
// buckets of AddressBuckets, one per first hex digit of the address after
// 0x.
const registrationBuckets = len(AddressBuckets{})

// addressBucket returns the expression of the address bucket, from 1 to
// registrationBuckets in address order, of the address expression addr.
func addressBucket(addr string) string {
	return "position(substr(" + addr + ", 3, 1) IN '0123456789abcdef')"
}

// bucketCounts returns the select-list items b1 to b16 that count, in
// a group, the rows whose bucket expression is each bucket.
func bucketCounts(bucket string) string {
	var b strings.Builder
	for i := 1; i <= registrationBuckets; i++ {
		fmt.Fprintf(&b, ",\n\t\t\t\t   count(*) FILTER (WHERE %s = %d) AS b%d", bucket, i, i)
	}
	return b.String()
}

// bucketSums returns the integer array of the sums, in a group, of the
// bucket counts b1 to b16 of the relation rel (see bucketCounts); a
// group without rows sums to zeros.
func bucketSums(rel string) string {
	sums := make([]string, registrationBuckets)
	for i := range sums {
		sums[i] = fmt.Sprintf("COALESCE(sum(%s.b%d), 0)", rel, i+1)
	}
	return "ARRAY[" + strings.Join(sums, ", ") + "]::integer[]"
}

// ListAVSStakers returns, for each of the given AVS, one page of its
// stakers (those its totalStakers counts) ordered by operator and staker
// address, all in one statement. Rows are grouped by AVS in the order of
// avs.
//
// The AVS's active operators are read in address order from the partial
// index of active registrations (a subquery the planner keeps whole, which
// gives their addresses only, so that it needs neither the table nor a
// sort and stops at the page's last operator), and each one's stakers are
// read from the staker index in address order, at most skip+take of them
// and their addresses only. Their nested loop is then already ordered by operator, so the page
// needs only an incremental sort within each operator and stops reading
// once it has skip+take rows; the page's rows alone are read from the
// table. On the bench data, a page at skip 900 of an AVS with 75,000
// stakers took 280 ms when the planner sorted the stakers of all the AVS's
// operators together, and takes 13 ms this way.
//
// A later page of all the stakers starts at the operator holding its
// first staker, found by adding the registrations' refreshed staker counts
// in operator order, and within it at the address bucket holding that
// staker, found by adding the registration's counts by bucket
// (avs_operators.staker_buckets), so that it skips only within that
// bucket: that operator's read starts at the bucket's lowest address and
// skips to the page's first staker, and every operator's read stops
// at take stakers, so that only the page's candidates are sorted. Skipping
// after the sort instead had sorted all the skipped stakers too (8,778
// stakers deep into an AVS's first operator: 6.6-8.3 ms, now 3.3-4.5 in
// EXPLAIN ANALYZE). The counts agree with the stakers while the data is
// refreshed (no batch has been applied since the last refresh); otherwise
// the page starts at the first operator, reads skip+take stakers of each
// and skips after the sort, as a shallow or filtered page does.
func (db *DB) ListAVSStakers(ctx context.Context, avs []string, f StakerFilter, p Page) ([]OperatorStaker, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	start := `SELECT ''::text AS operator_address, ''::text AS lowest, $3::bigint AS skip`
	if f == (StakerFilter{}) && p.Skip > 0 {
		start = `
			WITH refreshed AS (
			    SELECT NOT EXISTS (SELECT 1 FROM service_state WHERE id AND dirty_since IS NOT NULL) AS yes
			)
			(SELECT r.operator_address::text AS operator_address, COALESCE(b.lowest, '') AS lowest,
			        COALESCE(b.skip, r.within)::bigint AS skip
			 FROM (
			     SELECT r.operator_address, $3 - (r.through - r.total_stakers) AS within
			     FROM (
			         SELECT ao.operator_address, ao.total_stakers,
			                sum(ao.total_stakers) OVER (ORDER BY ao.operator_address) AS through
			         FROM avs_operators ao
			         WHERE ao.avs_address = k.key AND ao.is_active
			     ) r
			     WHERE r.through > $3
			     ORDER BY r.operator_address
			     LIMIT 1
			 ) r
			 CROSS JOIN refreshed
			 LEFT JOIN LATERAL (
			     -- The operator's bucket holding the page's first staker:
			     -- its lowest address, written as a whole address (which
			     -- every collation orders like the addresses), and its
			     -- stakers before the page.
			     SELECT '0x' || to_hex(u.bucket::integer - 1) || repeat('0', 39) AS lowest,
			            r.within - (u.through - u.n) AS skip
			     FROM (
			         SELECT u.n, u.bucket, sum(u.n) OVER (ORDER BY u.bucket) AS through
			         FROM avs_operators ao
			         CROSS JOIN LATERAL unnest(ao.staker_buckets) WITH ORDINALITY AS u(n, bucket)
			         WHERE ao.avs_address = k.key AND ao.operator_address = r.operator_address
			     ) u
			     WHERE u.through > r.within
			     ORDER BY u.bucket
			     LIMIT 1
			 ) b ON true
			 WHERE refreshed.yes)
			UNION ALL
			SELECT '', '', $3 FROM refreshed WHERE NOT refreshed.yes`
	}
	// A page without a date is kept prepared: its generic plan is the one
	// PostgreSQL makes for any skip and take, and planning took three
	// times as long as running a first page. The date's condition stays
	// out of it, as with "$4 IS NULL OR ..." the generic plan read and
	// sorted each operator's every staker instead of the first skip+take
	// of its staker index; a page with a date is planned for its date.
	args := []any{pq.Array(avs), p.Take, p.Skip}
	since, run := "", db.selectPrepared
	if !f.UpdatedSince.IsZero() {
		since, run = "\n\t\t\t\t  AND s.updated_at >= $4", db.selectContext
		args = append(args, f.UpdatedSince.UTC())
	}
	out := make([]OperatorStaker, 0, rowsFor(p.Take*len(avs)))
	if err := run(ctx, &out, `
		SELECT k.key, `+stakerColumns+`
		FROM unnest($1::text[]) WITH ORDINALITY AS k(key, position)
		CROSS JOIN LATERAL (`+start+`
		) start
		JOIN avs a ON a.address = k.key
		CROSS JOIN LATERAL (
			SELECT ao.operator_address, x.address
			FROM (
				-- The active registrations only, from the partial index
				-- of them, which also gives their order.
				SELECT ao.operator_address
				FROM avs_operators ao
				WHERE ao.avs_address = k.key AND ao.is_active AND ao.operator_address >= start.operator_address
				ORDER BY ao.operator_address
				OFFSET 0
			) ao
			CROSS JOIN LATERAL (
				SELECT s.address
				FROM stakers s
				WHERE s.operator_address = ao.operator_address
				  AND s.address >= CASE WHEN ao.operator_address = start.operator_address THEN start.lowest ELSE '' END
				  AND `+avsStakerCondition("TRUE", "s.holding_strategies", "a.restakeable_strategies")+since+`
				ORDER BY s.address
				LIMIT CASE WHEN start.operator_address = '' THEN $2::bigint + start.skip ELSE $2::bigint END
				OFFSET CASE WHEN ao.operator_address = start.operator_address THEN start.skip ELSE 0 END
			) x
			ORDER BY ao.operator_address, x.address
			LIMIT $2 OFFSET CASE WHEN start.operator_address = '' THEN start.skip ELSE 0 END
		) page
		JOIN stakers s ON s.address = page.address
		ORDER BY k.position, page.operator_address, page.address`, args...); err != nil {
		return nil, fmt.Errorf("list avs stakers: %w", Classify(err))
	}
	return out, nil
}

// CountAVSStakers returns the number of stakers (as ListAVSStakers selects
// them) of each of the given AVS; AVS with none are left out of the map.
// The number of all an AVS's stakers is its totalStakers, which every
// refresh derives by the same rule, instead of a count of the stakers of
// all its operators.
func (db *DB) CountAVSStakers(ctx context.Context, avs []string, f StakerFilter) (map[string]int, error) {
	if f == (StakerFilter{}) {
		return db.countByKey(ctx, "count avs stakers", `
			SELECT a.address AS key, a.total_stakers AS n
			FROM avs a
			WHERE a.address = ANY($1) AND a.total_stakers > 0`, pq.Array(avs))
	}
	return db.countByKey(ctx, "count avs stakers", `
		SELECT a.address AS key, count(*) AS n
		FROM avs a
		JOIN avs_operators ao ON ao.avs_address = a.address
		JOIN stakers s ON s.operator_address = ao.operator_address
		WHERE a.address = ANY($1) AND `+avsStakerCondition("ao.is_active", "s.holding_strategies", "a.restakeable_strategies")+`
		  AND ($2::timestamptz IS NULL OR s.updated_at >= $2)
		GROUP BY a.address`, pq.Array(avs), f.since())
}

// StakerFilter narrows a list of stakers; the zero value selects them
// all. It is comparable, so that it can key a batch.
type StakerFilter struct {
	// UpdatedSince, when not zero, keeps the stakers whose record (their
	// delegation or their shares) last changed at or after it.
	UpdatedSince time.Time
}

// since is UpdatedSince as a statement argument: nil when zero.
func (f StakerFilter) since() any {
	if f.UpdatedSince.IsZero() {
		return nil
	}
	return f.UpdatedSince.UTC()
}

// ListStakers returns one page of the stakers matching f, by address. A
// page of the stakers updated since a time reads their address buckets
// first (see ListStakersUpdatedSince, which takes buckets already read).
func (db *DB) ListStakers(ctx context.Context, f StakerFilter, p Page) ([]Staker, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if f.UpdatedSince.IsZero() {
		// A page of all the stakers is kept prepared: its addresses come
		// from the address index whatever the skip and take, and planning
		// it took as long as running it. The rows are then read by
		// address with = ANY, a plan that does not depend on how many the
		// page holds; a join with the page's addresses had a generic plan
		// that hashed the whole table, estimated for a tenth of it.
		//
		// A deep page starts in the address bucket that holds its first
		// staker: the kept bucket counts, summed in address order (a row
		// per bucket), give that bucket and the stakers before it, so the
		// scan skips only within the bucket. The bucket's lower bound is
		// written as a whole address, which every collation orders like
		// the addresses. Planning a deep page had been half of its time
		// in PostgreSQL (0.6 of 1.2 ms).
		addresses := `
				SELECT s.address
				FROM stakers s
				ORDER BY s.address
				LIMIT $1 OFFSET $2`
		if p.Skip >= bucketSkip {
			addresses = bucketStart(`
				SELECT b.bucket, b.n FROM staker_address_buckets b`, "ASC", "$2") + `
				SELECT s.address
				FROM stakers s
				WHERE s.address >= (SELECT rpad(start.bucket, 42, '0') FROM start)
				ORDER BY s.address
				LIMIT $1 OFFSET (SELECT start.skip FROM start)`
		}
		out := make([]Staker, 0, rowsFor(p.Take))
		if err := db.selectPrepared(ctx, &out, `
			SELECT `+stakerColumns+`
			FROM stakers s
			WHERE s.address = ANY(ARRAY(`+addresses+`))
			ORDER BY s.address`, p.Take, p.Skip); err != nil {
			return nil, fmt.Errorf("list stakers: %w", Classify(err))
		}
		return out, nil
	}
	buckets, err := db.StakerUpdateBuckets(ctx, f.UpdatedSince)
	if err != nil {
		return nil, err
	}
	return db.ListStakersUpdatedSince(ctx, f.UpdatedSince, buckets, p)
}

// AddressBuckets are the numbers of the records of a list in each address
// bucket, the first hex digit of the address after 0x, in address order:
// the counts from which a page of the list, ordered by address, finds the
// bucket it starts in.
type AddressBuckets [16]int

// Total returns the number of records in all the buckets.
func (b AddressBuckets) Total() int {
	n := 0
	for _, c := range b {
		n += c
	}
	return n
}

// start returns the lowest address of the bucket holding the list's record
// at position skip (from 0) and the number of that bucket's records before
// it; ok is false when skip is at or past the end of the list.
func (b AddressBuckets) start(skip int) (lowest string, within int, ok bool) {
	i, within, ok := bucketOf(b[:], skip)
	if !ok {
		return "", 0, false
	}
	return "0x" + strconv.FormatInt(int64(i), 16) + strings.Repeat("0", 39), within, true
}

// bucketOf returns the index of the bucket, of buckets holding counts
// rows in list order, that holds the list's row at position skip (from 0),
// and the number of that bucket's rows before it; ok is false when skip is
// at or past the end of the list.
func bucketOf(counts []int, skip int) (i, within int, ok bool) {
	for i, n := range counts {
		if skip < n {
			return i, skip, true
		}
		skip -= n
	}
	return 0, 0, false
}

// StakerUpdateBuckets returns the number of stakers last updated at or
// after since in each address bucket, from the kept counts of stakers by
// bucket and day of last update (see stakerUpdateBuckets). Their total is
// the number of such stakers (CountStakers), and a page of them starts in
// its bucket (ListStakersUpdatedSince).
func (db *DB) StakerUpdateBuckets(ctx context.Context, since time.Time) (AddressBuckets, error) {
	var q queryArgs
	var rows []struct {
		Bucket string `db:"bucket"`
		N      int    `db:"n"`
	}
	var out AddressBuckets
	if err := db.selectContext(ctx, &rows, `
		SELECT b.bucket, b.n::bigint AS n
		FROM (`+stakerUpdateBuckets(&q, since)+`
		) b`, q.args...); err != nil {
		return out, fmt.Errorf("staker update buckets: %w", Classify(err))
	}
	for _, r := range rows {
		i, err := strconv.ParseUint(strings.TrimPrefix(r.Bucket, "0x"), 16, 8)
		if err != nil || i >= uint64(len(out)) || !strings.HasPrefix(r.Bucket, "0x") {
			return out, fmt.Errorf("staker update buckets: unexpected bucket %q", r.Bucket)
		}
		out[i] += r.N
	}
	return out, nil
}

// ListStakersUpdatedSince returns one page, by address, of the stakers last
// updated at or after since, whose numbers by address bucket are buckets
// (StakerUpdateBuckets with the same since). The page starts in the bucket
// that holds its first staker and skips only within it, reading the
// addresses from an index-only scan of the address index with the update
// time; only the page's rows are read. The statement's plan is the same
// for every time, bucket and page, so it is kept prepared: planning had
// been a fifth of such a page's time, and one plan for all dates had read
// and sorted every staker of a recent date before skipping. Buckets read
// at an earlier data version than the page place it as of that version.
func (db *DB) ListStakersUpdatedSince(ctx context.Context, since time.Time, buckets AddressBuckets, p Page) ([]Staker, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	lowest, within, ok := buckets.start(p.Skip)
	if !ok {
		return []Staker{}, nil
	}
	out := make([]Staker, 0, rowsFor(p.Take))
	if err := db.selectPrepared(ctx, &out, `
		SELECT `+stakerColumns+`
		FROM stakers s
		WHERE s.address = ANY(ARRAY(
			SELECT s.address
			FROM stakers s
			WHERE s.address >= $1 AND s.updated_at >= $2
			ORDER BY s.address
			LIMIT $3 OFFSET $4))
		ORDER BY s.address`, lowest, since.UTC(), p.Take, within); err != nil {
		return nil, fmt.Errorf("list stakers: %w", Classify(err))
	}
	return out, nil
}

// stakerUpdateBuckets returns a statement of the number of stakers updated
// at or after since in each bucket of addresses (their first hex digit):
// the kept counts of the whole UTC days of the range, a row per bucket and
// day, completed at the partial first day by counting its stakers from the
// nearer midnight (see dayCountedEdges).
func stakerUpdateBuckets(q *queryArgs, since time.Time) string {
	byBucket := func(from, to time.Time) string {
		return `SELECT left(s.address, 3) AS bucket, count(*) AS n
		        FROM stakers s
		        WHERE s.updated_at >= ` + q.add(from) + ` AND s.updated_at <= ` + q.add(to) + `
		        GROUP BY 1`
	}
	first, _, edges := dayCountedEdges(since.UTC(), time.Time{}, byBucket)
	parts := []string{`
		        SELECT p.bucket, d.n
		        FROM (SELECT '0x' || to_hex(i) AS bucket FROM generate_series(0, 15) i) p
		        CROSS JOIN LATERAL (
		            SELECT COALESCE(sum(c.n), 0) AS n
		            FROM event_day_counts c
		            WHERE c.feed = ` + q.add(dayCountedStakerUpdates) + ` AND c.subject = p.bucket
		              AND c.day >= ` + q.add(first.Format(time.DateOnly)) + `::date
		        ) d`}
	for _, e := range edges {
		n := "e.n"
		if e.sign == "-" {
			n = "-e.n"
		}
		parts = append(parts, `
		        SELECT e.bucket, `+n+` FROM (`+e.rows+`) e`)
	}
	return `
		    SELECT b.bucket, sum(b.n) AS n
		    FROM (` + strings.Join(parts, `
		        UNION ALL`) + `
		    ) b
		    GROUP BY b.bucket`
}

// CountStakers returns the number of stakers matching f. The number of all
// stakers is the latest daily snapshot's, which every refresh derives in
// the transaction that applies events; the number updated since a time is
// the total of their address buckets (StakerUpdateBuckets).
func (db *DB) CountStakers(ctx context.Context, f StakerFilter) (int, error) {
	if f == (StakerFilter{}) {
		return db.countRows(ctx, "count stakers", `
			SELECT COALESCE((SELECT total_stakers FROM daily_snapshots ORDER BY day DESC LIMIT 1), 0)`)
	}
	buckets, err := db.StakerUpdateBuckets(ctx, f.UpdatedSince)
	if err != nil {
		return 0, err
	}
	return buckets.Total(), nil
}

// DelegationEvent is a stored delegation event. Strategy, Shares and the
// values are set for share events only; UnderlyingValue and ETHValue are
// decimal text at the strategy's current rate and price.
type DelegationEvent struct {
	Key             string    `db:"key"`
	TxHash          string    `db:"tx_hash"`
	BlockNumber     int64     `db:"block_number"`
	LogIndex        int       `db:"log_index"`
	BlockTime       time.Time `db:"block_time"`
	Type            string    `db:"type"`
	StakerAddress   string    `db:"staker_address"`
	OperatorAddress string    `db:"operator_address"`
	StrategyAddress *string   `db:"strategy_address"`
	Shares          *string   `db:"shares"`
	UnderlyingToken *string   `db:"underlying_token"`
	UnderlyingValue *string   `db:"underlying_value"`
	ETHValue        *string   `db:"eth_value"`
}

// DelegationEventFilter selects delegation events. The time range
// [Start, End] is required (the caller applies the contract's date rules);
// the other fields are optional. Type is one of the chain.DelegationType
// values.
type DelegationEventFilter struct {
	Start    time.Time
	End      time.Time
	TxHash   string
	Type     string
	Strategy string
	Operator string
	Staker   string
}

func (f DelegationEventFilter) conditions(q *queryArgs) []string {
	conds := []string{
		"e.block_time >= " + q.add(f.Start.UTC()),
		"e.block_time <= " + q.add(f.End.UTC()),
	}
	if f.TxHash != "" {
		conds = append(conds, "e.tx_hash = "+q.add(f.TxHash))
	}
	if f.Type != "" {
		conds = append(conds, "e.type = "+q.add(f.Type)+"::delegation_type")
	}
	if f.Strategy != "" {
		conds = append(conds, "e.strategy_address = "+q.add(f.Strategy))
	}
	if f.Operator != "" {
		conds = append(conds, "e.operator_address = "+q.add(f.Operator))
	}
	if f.Staker != "" {
		conds = append(conds, "e.staker_address = "+q.add(f.Staker))
	}
	return conds
}

// delegationEventOwners are the columns delegation events can be listed by;
// each leads an index with the event time.
var delegationEventOwners = map[string]string{
	"staker":   "e.staker_address",
	"operator": "e.operator_address",
}

// ListDelegationEventsByStakers returns, for each of the given stakers, one
// page of its delegation events matching f, newest first, all in one
// statement. Rows are grouped by staker (Key) in the order of stakers.
func (db *DB) ListDelegationEventsByStakers(ctx context.Context, stakers []string, f DelegationEventFilter, p Page) ([]DelegationEvent, error) {
	return db.listDelegationEvents(ctx, "staker", stakers, f, p)
}

// ListDelegationEventsByOperators returns, for each of the given operators,
// one page of the delegation events with it matching f, newest first, all in
// one statement. Rows are grouped by operator (Key) in the order of operators.
func (db *DB) ListDelegationEventsByOperators(ctx context.Context, operators []string, f DelegationEventFilter, p Page) ([]DelegationEvent, error) {
	return db.listDelegationEvents(ctx, "operator", operators, f, p)
}

// listDelegationEvents reads each key's page in two steps. The page's sort
// keys come from an index-only scan of the owner's (owner, block_time DESC,
// block_number DESC, log_index DESC) index, read in order and stopped at the
// page's end, and only the page's rows are then fetched by primary key, joined
// with their strategy and valued. Inside the LATERAL the key is a parameter
// whose row estimate is the average owner's, far below that of the busiest
// operators (hundreds of thousands of events): selecting the whole rows
// there let the planner prefer a bitmap scan of every event of the range, a
// strategy join and two value functions per event and a top-N sort. The
// index-only scan is the cheapest plan whatever the estimate, as it never
// visits the heap.
func (db *DB) listDelegationEvents(ctx context.Context, owner string, keys []string, f DelegationEventFilter, p Page) ([]DelegationEvent, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var q queryArgs
	k := q.add(pq.Array(keys))
	conds := f.conditions(&q)
	out := make([]DelegationEvent, 0, rowsFor(p.Take*len(keys)))
	if err := db.selectPrepared(ctx, &out, `
		SELECT k.key, e.tx_hash, e.block_number, e.log_index, e.block_time, e.type::text AS type,
		       e.staker_address, e.operator_address, e.strategy_address, e.shares::text AS shares,
		       s.underlying_token,
		       strategy_underlying(e.shares, s.shares_to_underlying, s.decimals)::text AS underlying_value,
		       strategy_eth(e.shares, s.shares_to_underlying, s.decimals, s.eth_price)::text AS eth_value
		FROM unnest(`+k+`::text[]) WITH ORDINALITY AS k(key, position)
		CROSS JOIN LATERAL (
			SELECT e.block_time, e.block_number, e.log_index
			FROM delegation_events e
			WHERE `+delegationEventOwners[owner]+` = k.key`+and(conds...)+`
			ORDER BY e.block_time DESC, e.block_number DESC, e.log_index DESC
			LIMIT `+q.add(p.Take)+` OFFSET `+q.add(p.Skip)+`
		) x
		JOIN delegation_events e ON e.block_number = x.block_number AND e.log_index = x.log_index
		LEFT JOIN strategies s ON s.address = e.strategy_address
		ORDER BY k.position, x.block_time DESC, x.block_number DESC, x.log_index DESC`, q.args...); err != nil {
		return nil, fmt.Errorf("list delegation events: %w", Classify(err))
	}
	return out, nil
}

// CountDelegationEventsByStakers returns the number of delegation events
// matching f of each of the given stakers; stakers with none are left out.
func (db *DB) CountDelegationEventsByStakers(ctx context.Context, stakers []string, f DelegationEventFilter) (map[string]int, error) {
	return db.countDelegationEvents(ctx, "staker", stakers, f)
}

// CountDelegationEventsByOperators returns the number of delegation events
// matching f with each of the given operators; operators with none are left
// out.
func (db *DB) CountDelegationEventsByOperators(ctx context.Context, operators []string, f DelegationEventFilter) (map[string]int, error) {
	return db.countDelegationEvents(ctx, "operator", operators, f)
}

func (db *DB) countDelegationEvents(ctx context.Context, owner string, keys []string, f DelegationEventFilter) (map[string]int, error) {
	var q queryArgs
	k := q.add(pq.Array(keys))
	col := delegationEventOwners[owner]
	if owner == "operator" && f.TxHash == "" && f.Strategy == "" && f.Staker == "" && f.Operator == "" {
		// Operators' events of a type or all of them are counted by day
		// (subjects "TYPE operator" and "operator", as in
		// CountDelegationEvents): the whole days from the kept counts
		// and the partial ones row by row, each operator in a lateral
		// subquery. Counting every event of a busy operator's month had
		// taken 1.3 ms on average in the bench's operator pages.
		subject := func() string { return "k.key" }
		if f.Type != "" {
			subject = func() string { return q.add(f.Type+" ") + " || k.key" }
		}
		count := func(from, to time.Time) string {
			g := f
			g.Start, g.End = from, to
			return `SELECT count(*) FROM delegation_events e WHERE e.operator_address = k.key` + and(g.conditions(&q)...)
		}
		return db.countByKeyPrepared(ctx, "count delegation events", `
			SELECT k.key, c.n
			FROM unnest(`+k+`::text[]) AS k(key)
			CROSS JOIN LATERAL (SELECT `+dayCountedOf(&q, dayCountedDelegations, subject, f.Start, f.End, count)+` AS n) c
			WHERE c.n > 0`, q.args...)
	}
	conds := f.conditions(&q)
	return db.countByKeyPrepared(ctx, "count delegation events", `
		SELECT `+col+` AS key, count(*) AS n
		FROM delegation_events e
		WHERE `+col+` = ANY(`+k+`)`+and(conds...)+`
		GROUP BY `+col, q.args...)
}

// Deposit is a stored deposit of tokens into a strategy.
type Deposit struct {
	Key           string    `db:"key"`
	TxHash        string    `db:"tx_hash"`
	BlockNumber   int64     `db:"block_number"`
	LogIndex      int       `db:"log_index"`
	BlockTime     time.Time `db:"block_time"`
	StakerAddress string    `db:"staker_address"`
	// TokenAddress is the deposited token: the event's (deposits before
	// the slashing upgrade name it), else the strategy's underlying token,
	// which is what a strategy takes in; nil when neither is known.
	TokenAddress    *string `db:"token_address"`
	StrategyAddress string  `db:"strategy_address"`
	Shares          string  `db:"shares"`
	// UnderlyingToken, UnderlyingValue and ETHValue are the strategy's
	// underlying token and the shares' value in it and in ETH at the
	// strategy's current rate and price; only ListDeposits sets them.
	UnderlyingToken *string `db:"underlying_token"`
	UnderlyingValue *string `db:"underlying_value"`
	ETHValue        *string `db:"eth_value"`
}

// ListDepositsByStakers returns, for each of the given stakers, one page of
// its deposits, newest first, all in one statement. Rows are grouped by
// staker (Key) in the order of stakers.
func (db *DB) ListDepositsByStakers(ctx context.Context, stakers []string, p Page) ([]Deposit, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out []Deposit
	if err := db.selectPrepared(ctx, &out, `
		SELECT k.key, x.*
		FROM unnest($1::text[]) WITH ORDINALITY AS k(key, position)
		CROSS JOIN LATERAL (
			SELECT d.tx_hash, d.block_number, d.log_index, d.block_time, d.staker_address,
			       COALESCE(d.token_address, s.underlying_token) AS token_address,
			       d.strategy_address, d.shares::text AS shares
			FROM deposits d
			LEFT JOIN strategies s ON s.address = d.strategy_address
			WHERE d.staker_address = k.key
			ORDER BY d.block_time DESC, d.block_number DESC, d.log_index DESC
			LIMIT $2 OFFSET $3
		) x
		ORDER BY k.position, x.block_time DESC, x.block_number DESC, x.log_index DESC`,
		pq.Array(stakers), p.Take, p.Skip); err != nil {
		return nil, fmt.Errorf("list deposits: %w", Classify(err))
	}
	return out, nil
}

// CountDepositsByStakers returns the number of deposits of each of the given
// stakers; stakers with none are left out of the map.
func (db *DB) CountDepositsByStakers(ctx context.Context, stakers []string) (map[string]int, error) {
	return db.countByKeyPrepared(ctx, "count deposits", `
		SELECT staker_address AS key, count(*) AS n
		FROM deposits
		WHERE staker_address = ANY($1)
		GROUP BY staker_address`, pq.Array(stakers))
}
