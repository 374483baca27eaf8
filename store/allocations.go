package store

import (
	"context"
	"fmt"
	"time"

	"github.com/lib/pq"
)

// Allocation is the magnitude an operator allocates to an operator set in
// one strategy, as of the indexed head (Tx.Refresh derives it), with the
// stake it makes slashable. Magnitudes are decimal text out of 1e18 (WAD);
// PendingMagnitude and EffectBlock describe a change that takes effect at a
// later block, nil without one. MaxMagnitude is the operator's max
// magnitude in the strategy (1e18 when it was never slashed).
// AllocatedShares is the allocated stake, see allocationRows. Key is the
// parent the row was read for.
type Allocation struct {
	Key              string    `db:"key"`
	OperatorAddress  string    `db:"operator_address"`
	AVSAddress       string    `db:"avs_address"`
	OperatorSetID    int64     `db:"operator_set_id"`
	StrategyAddress  string    `db:"strategy_address"`
	Magnitude        string    `db:"magnitude"`
	PendingMagnitude *string   `db:"pending_magnitude"`
	EffectBlock      *int64    `db:"effect_block"`
	MaxMagnitude     string    `db:"max_magnitude"`
	AllocatedShares  string    `db:"allocated_shares"`
	UpdatedAtBlock   int64     `db:"updated_at_block"`
	UpdatedAt        time.Time `db:"updated_at"`
}

// Set returns the reference of the allocation's operator set.
func (a Allocation) Set() OperatorSetRef {
	return OperatorSetRef{AVS: a.AVSAddress, ID: a.OperatorSetID}
}

// allocationRows is the one definition of allocated stake, which every
// read of allocations and of the stake allocated to a set goes through: the
// rows of allocations a matching cond, each with its allocated stake (the
// contracts' slashable stake, AllocationManager.getAllocatedStake) = the
// operator's shares in the strategy × the slashable proportion, where the
// proportion is the allocated magnitude × 1e18 ÷ the operator's max
// magnitude (1e18 without a row in operator_max_magnitudes); each of the
// two steps rounds down as the contract's divWad and mulWad do. It is 0
// when the operator has no shares or its max magnitude is 0 (then nothing
// can be allocated).
func allocationRows(cond string) string {
	return `
		SELECT a.operator_address, a.avs_address, a.operator_set_id, a.strategy_address,
		       a.magnitude, a.pending_magnitude, a.effect_block,
		       a.updated_block AS updated_at_block, a.updated_at,
		       COALESCE(mm.max_magnitude, 1000000000000000000) AS max_magnitude,
		       CASE WHEN COALESCE(mm.max_magnitude, 1000000000000000000) = 0 THEN 0
		            ELSE mul_wad(COALESCE(os.shares, 0),
		                         div(a.magnitude * 1000000000000000000, COALESCE(mm.max_magnitude, 1000000000000000000)))
		       END AS allocated_shares
		FROM allocations a
		LEFT JOIN operator_shares os
		       ON os.operator_address = a.operator_address AND os.strategy_address = a.strategy_address
		LEFT JOIN operator_max_magnitudes mm
		       ON mm.operator_address = a.operator_address AND mm.strategy_address = a.strategy_address
		WHERE ` + cond
}

// allocationColumns selects an Allocation (but its key) from the rows of
// allocationRows aliased x.
const allocationColumns = `
	x.operator_address, x.avs_address, x.operator_set_id, x.strategy_address,
	x.magnitude::text AS magnitude, x.pending_magnitude::text AS pending_magnitude, x.effect_block,
	x.max_magnitude::text AS max_magnitude, x.allocated_shares::text AS allocated_shares,
	x.updated_at_block, x.updated_at`

// MemberRef names the allocations of one operator in one operator set.
type MemberRef struct {
	Operator string
	Set      OperatorSetRef
}

// Key returns the text form of m, "operator/avs:id", which
// AllocationsByMembers returns as the key of each row.
func (m MemberRef) Key() string { return m.Operator + "/" + m.Set.Key() }

// AllocationsByMembers returns the allocations of each of the given
// operators in the given operator sets, ordered by member (Key, the
// member's key) in the order of members and then by strategy.
func (db *DB) AllocationsByMembers(ctx context.Context, members []MemberRef) ([]Allocation, error) {
	ops := make([]string, len(members))
	avs := make([]string, len(members))
	ids := make([]int64, len(members))
	for i, m := range members {
		ops[i], avs[i], ids[i] = m.Operator, m.Set.AVS, m.Set.ID
	}
	var out []Allocation
	if err := db.selectPrepared(ctx, &out, `
		SELECT k.operator_address || '/' || `+operatorSetKey("k.avs_address", "k.operator_set_id")+` AS key,`+allocationColumns+`
		FROM unnest($1::text[], $2::text[], $3::bigint[]) WITH ORDINALITY AS k(operator_address, avs_address, operator_set_id, position)
		CROSS JOIN LATERAL (`+allocationRows(`a.operator_address = k.operator_address
		      AND a.avs_address = k.avs_address AND a.operator_set_id = k.operator_set_id`)+`
		) x
		ORDER BY k.position, x.strategy_address`, pq.Array(ops), pq.Array(avs), pq.Array(ids)); err != nil {
		return nil, fmt.Errorf("allocations by member: %w", Classify(err))
	}
	return out, nil
}

// ListAllocationsByOperators returns, for each of the given operators, one
// page of its allocations ordered by AVS, set id and strategy (the
// allocations' primary key), all in one statement. Rows are grouped by
// operator (Key) in the order of operators.
func (db *DB) ListAllocationsByOperators(ctx context.Context, operators []string, p Page) ([]Allocation, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out []Allocation
	if err := db.selectContext(ctx, &out, `
		SELECT k.key,`+allocationColumns+`
		FROM unnest($1::text[]) WITH ORDINALITY AS k(key, position)
		CROSS JOIN LATERAL (`+allocationRows(`a.operator_address = k.key`)+`
			ORDER BY a.avs_address, a.operator_set_id, a.strategy_address
			LIMIT $2 OFFSET $3
		) x
		ORDER BY k.position, x.avs_address, x.operator_set_id, x.strategy_address`,
		pq.Array(operators), p.Take, p.Skip); err != nil {
		return nil, fmt.Errorf("list operator allocations: %w", Classify(err))
	}
	return out, nil
}

// CountAllocationsByOperators returns the number of allocations of each of
// the given operators; operators without any are left out of the map.
func (db *DB) CountAllocationsByOperators(ctx context.Context, operators []string) (map[string]int, error) {
	return db.countByKeyPrepared(ctx, "count operator allocations", `
		SELECT operator_address AS key, count(*) AS n
		FROM allocations
		WHERE operator_address = ANY($1)
		GROUP BY operator_address`, pq.Array(operators))
}

// AllocatedStakeBySets returns the stake allocated to each of the given
// operator sets in each of its strategies, with its value: the sum of the
// allocated stake (allocationRows) of the set's members, the operators
// currently in it, and 0 in a strategy none of them allocated to. Owner
// is the set's key (OperatorSetRef.Key); rows are ordered by set and
// strategy.
func (db *DB) AllocatedStakeBySets(ctx context.Context, sets []OperatorSetRef) ([]StrategyShares, error) {
	avs, ids := refArrays(sets)
	out, err := db.selectShares(ctx, nil, withoutPositions, `
		SELECT `+operatorSetKey("k.avs_address", "k.operator_set_id")+` AS owner, x.strategy_address,
		       x.shares::text AS shares,`+sharesValueColumns("x.shares")+`
		FROM unnest($1::text[], $2::bigint[]) AS k(avs_address, operator_set_id)
		CROSS JOIN LATERAL (
			SELECT st.strategy_address, COALESCE(sum(y.allocated_shares), 0) AS shares
			FROM operator_set_strategies st
			LEFT JOIN (`+allocationRows(`a.avs_address = k.avs_address AND a.operator_set_id = k.operator_set_id
			      AND EXISTS (SELECT 1 FROM operator_set_members m
			                  WHERE m.avs_address = a.avs_address AND m.operator_set_id = a.operator_set_id
			                    AND m.operator_address = a.operator_address AND m.is_active)`)+`
			) y ON y.strategy_address = st.strategy_address
			WHERE st.avs_address = k.avs_address AND st.operator_set_id = k.operator_set_id
			GROUP BY st.strategy_address
		) x
		LEFT JOIN strategies s ON s.address = x.strategy_address
		ORDER BY k.avs_address, k.operator_set_id, x.strategy_address`, avs, ids)
	if err != nil {
		return nil, fmt.Errorf("allocated stake by set: %w", Classify(err))
	}
	return out, nil
}

// MaxMagnitude is an operator's max magnitude in one strategy, decimal text
// out of 1e18: it starts at 1e18 and every slash lowers it.
type MaxMagnitude struct {
	OperatorAddress string `db:"operator_address"`
	StrategyAddress string `db:"strategy_address"`
	MaxMagnitude    string `db:"max_magnitude"`
}

// MaxMagnitudesByOperators returns the max magnitudes of the given
// operators in every strategy in which each holds shares, has an
// allocation or has had a magnitude event (1e18 in those where it was never
// slashed), ordered by operator and strategy.
func (db *DB) MaxMagnitudesByOperators(ctx context.Context, operators []string) ([]MaxMagnitude, error) {
	var out []MaxMagnitude
	if err := db.selectPrepared(ctx, &out, `
		SELECT k.operator_address, k.strategy_address,
		       COALESCE(mm.max_magnitude, 1000000000000000000)::text AS max_magnitude
		FROM (
		    SELECT operator_address, strategy_address FROM operator_shares WHERE operator_address = ANY($1)
		    UNION SELECT operator_address, strategy_address FROM operator_max_magnitudes WHERE operator_address = ANY($1)
		    UNION SELECT operator_address, strategy_address FROM allocations WHERE operator_address = ANY($1)
		    UNION SELECT operator_address, strategy_address FROM encumbered_magnitude_events WHERE operator_address = ANY($1)
		) k
		LEFT JOIN operator_max_magnitudes mm
		       ON mm.operator_address = k.operator_address AND mm.strategy_address = k.strategy_address
		ORDER BY k.operator_address, k.strategy_address`, pq.Array(operators)); err != nil {
		return nil, fmt.Errorf("max magnitudes by operator: %w", Classify(err))
	}
	return out, nil
}
