package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/lib/pq"

	"github.com/stakegraph/stakegraph/chain"
)

// eventRows collects the rows of one raw event table as text columns, for
// one INSERT ... SELECT FROM unnest(...) statement whatever their number.
// Every row starts with its position (block_number, log_index, tx_hash,
// block_time); the other columns are named with their SQL types.
type eventRows struct {
	table string
	cols  []string // name and type, e.g. "operator_address address"
	p     positions
	vals  [][]sql.NullString // per column
}

func newEventRows(table string, cols ...string) *eventRows {
	return &eventRows{table: table, cols: cols, vals: make([][]sql.NullString, len(cols))}
}

// add appends one row. Values are rendered as text: strings (lowercased
// when they are addresses or hashes: the caller lowercases), integers,
// *big.Int, bool, []string and []*big.Int (as array literals); nil is NULL.
func (r *eventRows) add(pos chain.Position, vals ...any) {
	if len(vals) != len(r.cols) {
		panic(fmt.Sprintf("store: %s row with %d values for %d columns", r.table, len(vals), len(r.cols)))
	}
	r.p.add(pos)
	for i, v := range vals {
		r.vals[i] = append(r.vals[i], textValue(v))
	}
}

func textValue(v any) sql.NullString {
	switch v := v.(type) {
	case nil:
		return sql.NullString{}
	case string:
		return sql.NullString{String: v, Valid: true}
	case *string:
		if v == nil {
			return sql.NullString{}
		}
		return sql.NullString{String: *v, Valid: true}
	case bool:
		return sql.NullString{String: strconv.FormatBool(v), Valid: true}
	case uint32:
		return sql.NullString{String: strconv.FormatUint(uint64(v), 10), Valid: true}
	case *uint32:
		if v == nil {
			return sql.NullString{}
		}
		return sql.NullString{String: strconv.FormatUint(uint64(*v), 10), Valid: true}
	case uint64:
		return sql.NullString{String: strconv.FormatUint(v, 10), Valid: true}
	case int:
		return sql.NullString{String: strconv.Itoa(v), Valid: true}
	case *big.Int:
		return sql.NullString{String: bigString(v), Valid: true}
	case []string:
		return sql.NullString{String: arrayLiteral(v), Valid: true}
	case []*big.Int:
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = bigString(x)
		}
		return sql.NullString{String: "{" + strings.Join(s, ",") + "}", Valid: true}
	case json.RawMessage:
		return sql.NullString{String: string(v), Valid: true}
	}
	panic(fmt.Sprintf("store: no text form for %T", v))
}

// insert stores the rows, skipping those already stored, and marks the
// snapshots from their earliest day dirty.
func (tx *Tx) insertEventRows(ctx context.Context, r *eventRows) error {
	if len(r.p.blocks) == 0 {
		return nil
	}
	names := []string{"block_number", "log_index", "tx_hash", "block_time"}
	sel := []string{"b", "l", "t", "bt"}
	unnest := []string{"$1::bigint[]", "$2::int[]", "$3::text[]", "$4::timestamptz[]"}
	alias := []string{"b", "l", "t", "bt"}
	args := r.p.args()
	for i, c := range r.cols {
		name, typ, _ := strings.Cut(c, " ")
		names = append(names, name)
		a := fmt.Sprintf("c%d", i)
		alias = append(alias, a)
		sel = append(sel, a+"::"+typ)
		unnest = append(unnest, fmt.Sprintf("$%d::text[]", i+5))
		args = append(args, pq.Array(r.vals[i]))
	}
	q := fmt.Sprintf(`
		INSERT INTO %s (%s)
		SELECT %s
		FROM unnest(%s) AS u(%s)
		ON CONFLICT DO NOTHING`, r.table, strings.Join(names, ", "), strings.Join(sel, ", "),
		strings.Join(unnest, ", "), strings.Join(alias, ", "))
	if _, err := tx.execContext(ctx, q, args...); err != nil {
		return fmt.Errorf("%s: %w", r.table, err)
	}
	return tx.markDirty(ctx, r.p.minTime)
}

// applyOperatorSets stores the operator set events and derives the sets'
// members and strategies and the AVS registrations they make.
func (tx *Tx) applyOperatorSets(ctx context.Context, b *chain.Batch) error {
	if len(b.OperatorSetsCreated)+len(b.OperatorSetStrategies)+len(b.OperatorSetMemberships) == 0 {
		return nil
	}
	created := newEventRows("operator_sets", "avs_address address", "operator_set_id bigint")
	for _, e := range b.OperatorSetsCreated {
		created.add(e.Position, lower(e.Set.AVS), e.Set.ID)
	}
	strategies := newEventRows("operator_set_strategy_events", "avs_address address", "operator_set_id bigint",
		"strategy_address address", "added boolean")
	var avss []string
	for _, e := range b.OperatorSetStrategies {
		strategies.add(e.Position, lower(e.Set.AVS), e.Set.ID, lower(e.Strategy), e.Added)
		avss = append(avss, lower(e.Set.AVS))
	}
	members := newEventRows("operator_set_membership_events", "operator_address address", "avs_address address",
		"operator_set_id bigint", "added boolean")
	var pairAVS, pairOps []string
	for _, e := range b.OperatorSetMemberships {
		members.add(e.Position, lower(e.Operator), lower(e.Set.AVS), e.Set.ID, e.Added)
		pairAVS = append(pairAVS, lower(e.Set.AVS))
		pairOps = append(pairOps, lower(e.Operator))
	}
	for _, r := range []*eventRows{created, strategies, members} {
		if err := tx.insertEventRows(ctx, r); err != nil {
			return err
		}
	}
	if len(pairAVS) > 0 {
		if err := tx.recomputeRegistrations(ctx, pairAVS, pairOps); err != nil {
			return err
		}
	}
	if len(avss) > 0 {
		return tx.recomputeAVSStrategies(ctx, joinKeys(avss))
	}
	return nil
}

// applySlashingEvents stores allocations, magnitudes, slashings and the
// shares slashes took or burned. The state they make (max magnitudes,
// allocations) is derived by Refresh; operator shares by applyStakerState.
func (tx *Tx) applySlashingEvents(ctx context.Context, b *chain.Batch) error {
	delays := newEventRows("allocation_delay_events", "operator_address address", "delay bigint", "effect_block bigint")
	for _, e := range b.AllocationDelays {
		delays.add(e.Position, lower(e.Operator), e.Delay, e.EffectBlock)
	}
	allocs := newEventRows("allocation_events", "operator_address address", "avs_address address",
		"operator_set_id bigint", "strategy_address address", "magnitude numeric", "effect_block bigint")
	for _, e := range b.Allocations {
		allocs.add(e.Position, lower(e.Operator), lower(e.Set.AVS), e.Set.ID, lower(e.Strategy), e.Magnitude, e.EffectBlock)
	}
	maxes := newEventRows("max_magnitude_events", "operator_address address", "strategy_address address",
		"max_magnitude numeric")
	for _, e := range b.MaxMagnitudes {
		maxes.add(e.Position, lower(e.Operator), lower(e.Strategy), e.MaxMagnitude)
	}
	encumbered := newEventRows("encumbered_magnitude_events", "operator_address address", "strategy_address address",
		"encumbered_magnitude numeric")
	for _, e := range b.EncumberedMagnitudes {
		encumbered.add(e.Position, lower(e.Operator), lower(e.Strategy), e.EncumberedMagnitude)
	}
	slashings := newEventRows("slashings", "operator_address address", "avs_address address", "operator_set_id bigint",
		"strategies address[]", "wads_slashed numeric(78,0)[]", "description text")
	for _, e := range b.Slashings {
		if len(e.Strategies) != len(e.WadsSlashed) {
			return fmt.Errorf("slashing at block %d log %d: %d strategies but %d wads", e.BlockNumber, e.LogIndex,
				len(e.Strategies), len(e.WadsSlashed))
		}
		ss := make([]string, len(e.Strategies))
		for i, s := range e.Strategies {
			ss[i] = lower(s)
		}
		slashings.add(e.Position, lower(e.Operator), lower(e.Set.AVS), e.Set.ID, ss, e.WadsSlashed, e.Description)
	}
	taken := newEventRows("slashed_operator_shares", "operator_address address", "strategy_address address",
		"shares numeric")
	for _, e := range b.SlashedOperatorShares {
		taken.add(e.Position, lower(e.Operator), lower(e.Strategy), e.Shares)
	}
	burned := newEventRows("operator_shares_slashed_events", "operator_address address", "strategy_address address",
		"burned_shares numeric")
	for _, e := range b.OperatorSharesSlashed {
		burned.add(e.Position, lower(e.Operator), lower(e.Strategy), e.BurnedShares)
	}
	beacon := newEventRows("beacon_slashing_factor_events", "staker_address address", "previous_factor numeric",
		"new_factor numeric")
	for _, e := range b.BeaconSlashingFactors {
		beacon.add(e.Position, lower(e.Staker), e.Previous, e.New)
	}
	for _, r := range []*eventRows{delays, allocs, maxes, encumbered, slashings, taken, burned, beacon} {
		if err := tx.insertEventRows(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// applyDepositScalingFactors stores the deposit scaling factor events. It
// runs before the withdrawals are stored, whose deposit shares are derived
// from the factors.
func (tx *Tx) applyDepositScalingFactors(ctx context.Context, b *chain.Batch) error {
	rows := newEventRows("deposit_scaling_factor_events", "staker_address address", "strategy_address address",
		"factor numeric")
	for _, e := range b.DepositScalingFactors {
		rows.add(e.Position, lower(e.Staker), lower(e.Strategy), e.Factor)
	}
	return tx.insertEventRows(ctx, rows)
}

// applyProtocolEvents stores the other events of the core contracts with
// their arguments.
func (tx *Tx) applyProtocolEvents(ctx context.Context, b *chain.Batch) error {
	rows := newEventRows("protocol_events", "contract_address address", "name text", "args jsonb")
	for _, e := range b.ProtocolEvents {
		args := e.Args
		if args == nil {
			args = map[string]any{}
		}
		js, err := json.Marshal(args)
		if err != nil {
			return fmt.Errorf("protocol event %s at block %d log %d: %w", e.Name, e.BlockNumber, e.LogIndex, err)
		}
		rows.add(e.Position, lower(e.Contract), e.Name, json.RawMessage(js))
	}
	return tx.insertEventRows(ctx, rows)
}
