package store

import (
	"context"
	"fmt"
	"time"

	"github.com/lib/pq"

	"github.com/stakegraph/stakegraph/internal/derrors"
)

// Slashing is an OperatorSlashed event: an AVS slashed an operator through
// one of its operator sets. Strategies, WadsSlashed, SharesSlashed and
// SharesBurned are parallel: in Strategies[i] the slash took WadsSlashed[i]
// (a proportion of 1e18) of the operator's allocated magnitude, the
// operator's delegated shares fell by SharesSlashed[i], and SharesBurned[i]
// shares were burned, those of queued withdrawals still slashable
// included. Amounts are decimal text. Key is the parent the row was listed
// for (empty in the root list).
type Slashing struct {
	Key             string         `db:"key"`
	BlockNumber     int64          `db:"block_number"`
	LogIndex        int            `db:"log_index"`
	TxHash          string         `db:"tx_hash"`
	BlockTime       time.Time      `db:"block_time"`
	OperatorAddress string         `db:"operator_address"`
	AVSAddress      string         `db:"avs_address"`
	OperatorSetID   int64          `db:"operator_set_id"`
	Strategies      pq.StringArray `db:"strategies"`
	WadsSlashed     pq.StringArray `db:"wads_slashed"`
	SharesSlashed   pq.StringArray `db:"shares_slashed"`
	SharesBurned    pq.StringArray `db:"shares_burned"`
	Description     string         `db:"description"`
}

// Set returns the reference of the operator set the slash went through.
func (s Slashing) Set() OperatorSetRef {
	return OperatorSetRef{AVS: s.AVSAddress, ID: s.OperatorSetID}
}

// slashingColumns selects a Slashing (but its key) from slashings s. A
// slash emits, for each strategy and before its OperatorSlashed, the
// OperatorSharesDecreased of the operator's shares that it took (stored in
// slashed_operator_shares) and the OperatorSharesSlashed of the shares it
// burned, in the same transaction. So the shares of a slashing are those
// events of its operator and strategy in its transaction that come after
// the operator's previous slashing of that transaction, if any, and before
// it.
const slashingColumns = `
	s.block_number, s.log_index, s.tx_hash, s.block_time, s.operator_address, s.avs_address,
	s.operator_set_id, s.strategies::text[] AS strategies, s.wads_slashed::text[] AS wads_slashed, s.description,
	ARRAY(
	    SELECT COALESCE((
	        SELECT sum(o.shares) FROM slashed_operator_shares o
	        WHERE o.tx_hash = s.tx_hash AND o.block_number = s.block_number
	          AND o.operator_address = s.operator_address AND o.strategy_address = u.strategy
	          AND o.log_index < s.log_index AND o.log_index > prev.log_index), 0)::text
	    FROM unnest(s.strategies) WITH ORDINALITY AS u(strategy, ord)
	    ORDER BY u.ord) AS shares_slashed,
	ARRAY(
	    SELECT COALESCE((
	        SELECT sum(o.burned_shares) FROM operator_shares_slashed_events o
	        WHERE o.tx_hash = s.tx_hash AND o.block_number = s.block_number
	          AND o.operator_address = s.operator_address AND o.strategy_address = u.strategy
	          AND o.log_index < s.log_index AND o.log_index > prev.log_index), 0)::text
	    FROM unnest(s.strategies) WITH ORDINALITY AS u(strategy, ord)
	    ORDER BY u.ord) AS shares_burned`

// slashingPrevious is the FROM item prev of slashingColumns: the log index
// of the previous slashing of the same operator in the slashing's
// transaction, -1 when there is none.
const slashingPrevious = `
	CROSS JOIN LATERAL (
	    SELECT COALESCE(max(p.log_index), -1) AS log_index FROM slashings p
	    WHERE p.tx_hash = s.tx_hash AND p.block_number = s.block_number
	      AND p.operator_address = s.operator_address AND p.log_index < s.log_index
	) prev`

// slashingOrder is the order of every list of slashings: newest first.
const slashingOrder = `s.block_number DESC, s.log_index DESC`

// SlashingFilter selects slashings; every field is optional. Start and End
// bound the block time, both inclusive.
type SlashingFilter struct {
	AVS      string
	Operator string
	Strategy string
	Start    *time.Time
	End      *time.Time
}

// conditions returns the WHERE conditions of f over slashings s; each
// filter has an index.
func (f SlashingFilter) conditions(q *queryArgs) ([]string, error) {
	if f.Start != nil && f.End != nil && f.End.Before(*f.Start) {
		return nil, fmt.Errorf("%w: endAt is before startAt", derrors.InvalidArgument)
	}
	var conds []string
	if f.AVS != "" {
		conds = append(conds, "s.avs_address = "+q.add(f.AVS))
	}
	if f.Operator != "" {
		conds = append(conds, "s.operator_address = "+q.add(f.Operator))
	}
	if f.Strategy != "" {
		conds = append(conds, "s.strategies @> ARRAY["+q.add(f.Strategy)+"::address]")
	}
	if f.Start != nil {
		conds = append(conds, "s.block_time >= "+q.add(f.Start.UTC()))
	}
	if f.End != nil {
		conds = append(conds, "s.block_time <= "+q.add(f.End.UTC()))
	}
	return conds, nil
}

// ListSlashings returns one page of the slashings matching f, newest first.
func (db *DB) ListSlashings(ctx context.Context, f SlashingFilter, p Page) ([]Slashing, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var q queryArgs
	conds, err := f.conditions(&q)
	if err != nil {
		return nil, err
	}
	// Kept prepared, one statement per combination of filters: planning
	// the slashed and burned shares' subqueries took three times as long
	// as running a page (2.2 against 0.8 ms per statement under load),
	// and a page of slashings, newest first, is read the same way
	// whatever the arguments: there are few slashings, and each filter
	// has an index.
	out := make([]Slashing, 0, rowsFor(p.Take))
	if err := db.selectPrepared(ctx, &out, `
		SELECT `+slashingColumns+`
		FROM (
		    SELECT s.block_number, s.log_index
		    FROM slashings s
		    `+where(conds...)+`
		    ORDER BY `+slashingOrder+`
		    LIMIT `+q.add(p.Take)+` OFFSET `+q.add(p.Skip)+`
		) page
		JOIN slashings s ON s.block_number = page.block_number AND s.log_index = page.log_index`+slashingPrevious+`
		ORDER BY `+slashingOrder, q.args...); err != nil {
		return nil, fmt.Errorf("list slashings: %w", Classify(err))
	}
	return out, nil
}

// CountSlashings returns the number of slashings matching f.
func (db *DB) CountSlashings(ctx context.Context, f SlashingFilter) (int, error) {
	var q queryArgs
	conds, err := f.conditions(&q)
	if err != nil {
		return 0, err
	}
	var n int
	if err := db.getContext(ctx, &n, `
		SELECT count(*)
		FROM slashings s
		`+where(conds...), q.args...); err != nil {
		return 0, fmt.Errorf("count slashings: %w", Classify(err))
	}
	return n, nil
}

// ListSlashingsByOperators returns, for each of the given operators, one
// page of its slashings, newest first, all in one statement. Rows are
// grouped by operator (Key) in the order of operators.
func (db *DB) ListSlashingsByOperators(ctx context.Context, operators []string, p Page) ([]Slashing, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out []Slashing
	if err := db.selectPrepared(ctx, &out, `
		SELECT k.key,`+slashingColumns+`
		FROM unnest($1::text[]) WITH ORDINALITY AS k(key, position)
		CROSS JOIN LATERAL (
		    SELECT s.block_number, s.log_index
		    FROM slashings s
		    WHERE s.operator_address = k.key
		    ORDER BY `+slashingOrder+`
		    LIMIT $2 OFFSET $3
		) page
		JOIN slashings s ON s.block_number = page.block_number AND s.log_index = page.log_index`+slashingPrevious+`
		ORDER BY k.position, `+slashingOrder, pq.Array(operators), p.Take, p.Skip); err != nil {
		return nil, fmt.Errorf("list operator slashings: %w", Classify(err))
	}
	return out, nil
}

// CountSlashingsByOperators returns the number of slashings of each of the
// given operators; operators never slashed are left out of the map.
func (db *DB) CountSlashingsByOperators(ctx context.Context, operators []string) (map[string]int, error) {
	return db.countByKeyPrepared(ctx, "count operator slashings", `
		SELECT operator_address AS key, count(*) AS n
		FROM slashings
		WHERE operator_address = ANY($1)
		GROUP BY operator_address`, pq.Array(operators))
}

// ListSlashingsBySets returns, for each of the given operator sets, one
// page of the slashings through it, newest first, all in one statement.
// Rows are grouped by set (Key, the set's key) in the order of sets.
func (db *DB) ListSlashingsBySets(ctx context.Context, sets []OperatorSetRef, p Page) ([]Slashing, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	avs, ids := refArrays(sets)
	var out []Slashing
	if err := db.selectPrepared(ctx, &out, `
		SELECT `+operatorSetKey("k.avs_address", "k.operator_set_id")+` AS key,`+slashingColumns+`
		FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS k(avs_address, operator_set_id, position)
		CROSS JOIN LATERAL (
		    SELECT s.block_number, s.log_index
		    FROM slashings s
		    WHERE s.avs_address = k.avs_address AND s.operator_set_id = k.operator_set_id
		    ORDER BY `+slashingOrder+`
		    LIMIT $3 OFFSET $4
		) page
		JOIN slashings s ON s.block_number = page.block_number AND s.log_index = page.log_index`+slashingPrevious+`
		ORDER BY k.position, `+slashingOrder, avs, ids, p.Take, p.Skip); err != nil {
		return nil, fmt.Errorf("list operator set slashings: %w", Classify(err))
	}
	return out, nil
}

// CountSlashingsBySets returns the number of slashings through each of the
// given operator sets, by the set's key; sets without any are left out of
// the map.
func (db *DB) CountSlashingsBySets(ctx context.Context, sets []OperatorSetRef) (map[string]int, error) {
	avs, ids := refArrays(sets)
	return db.countByKeyPrepared(ctx, "count operator set slashings", `
		SELECT `+operatorSetKey("s.avs_address", "s.operator_set_id")+` AS key, count(*) AS n
		FROM unnest($1::text[], $2::bigint[]) AS k(avs_address, operator_set_id)
		JOIN slashings s ON s.avs_address = k.avs_address AND s.operator_set_id = k.operator_set_id
		GROUP BY s.avs_address, s.operator_set_id`, avs, ids)
}
