package store

import (
	"context"
	"fmt"

	"github.com/lib/pq"

	"github.com/stakegraph/stakegraph/chain"
)

// WithdrawalPayout is what a withdrawal pays out in one strategy. Shares
// (with its values) are the payout shares; ScaledShares are the scaled
// shares of a slashing-era withdrawal, nil for one queued before the
// slashing upgrade.
type WithdrawalPayout struct {
	StrategyShares
	ScaledShares *string `db:"scaled_shares"`
}

// WithdrawalPayoutsByRoots returns the payout of each of the given
// withdrawals per strategy, ordered by withdrawal root and then in the
// withdrawal's own strategy order.
//
// A withdrawal queued before the slashing upgrade pays out the shares it
// names. A slashing-era one pays out its scaled shares × the slashing
// factor, rounded down, as DelegationManager.completeQueuedWithdrawal
// does: the slashing factor is the max magnitude of the operator it was
// delegated to (1e18 for none) at the last block at which it is slashable,
// start block + the minimum withdrawal delay (or the indexed head, if that
// block is still to come): the latest MaxMagnitudeUpdated at or before that
// block, 1e18 without one. For beacon-chain ETH it is further multiplied
// (rounded down) by the staker's beacon-chain slashing factor when the
// withdrawal was completed, or the current one while it is queued.
func (db *DB) WithdrawalPayoutsByRoots(ctx context.Context, roots []string) ([]WithdrawalPayout, error) {
	var out []WithdrawalPayout
	if err := db.selectPrepared(ctx, &out, `
		SELECT w.withdrawal_root AS owner, u.strategy_address, p.shares::text AS shares,
		       u.scaled::text AS scaled_shares,`+sharesValueColumns("p.shares")+`
		FROM withdrawals w
		LEFT JOIN service_state st ON st.id
		CROSS JOIN LATERAL unnest(w.strategies, w.shares, w.scaled_shares)
		    WITH ORDINALITY AS u(strategy_address, shares, scaled, position)
		CROSS JOIN LATERAL (
		    SELECT COALESCE((
		        SELECT e.max_magnitude FROM max_magnitude_events e
		        WHERE e.operator_address = w.delegated_to AND e.strategy_address = u.strategy_address
		          AND e.block_number <= LEAST(w.start_block + COALESCE(st.min_withdrawal_delay_blocks, 0),
		                                      COALESCE(st.head_block, w.start_block + COALESCE(st.min_withdrawal_delay_blocks, 0)))
		        ORDER BY e.block_number DESC, e.log_index DESC
		        LIMIT 1), 1000000000000000000) AS max_magnitude,
		        COALESCE((
		        SELECT b.new_factor FROM beacon_slashing_factor_events b
		        WHERE b.staker_address = w.staker_address
		          AND (NOT w.is_completed OR (b.block_number, b.log_index) < (w.completed_block, w.completed_log_index))
		        ORDER BY b.block_number DESC, b.log_index DESC
		        LIMIT 1), 1000000000000000000) AS beacon_factor
		) f
		CROSS JOIN LATERAL (
		    SELECT CASE WHEN u.scaled IS NULL THEN u.shares
		                ELSE mul_wad(u.scaled, CASE WHEN u.strategy_address = $2 THEN mul_wad(f.max_magnitude, f.beacon_factor)
		                                            ELSE f.max_magnitude END)
		           END AS shares
		) p
		LEFT JOIN strategies s ON s.address = u.strategy_address
		WHERE w.withdrawal_root = ANY($1)
		ORDER BY w.withdrawal_root, u.position`, pq.Array(roots), chain.BeaconStrategy); err != nil {
		return nil, fmt.Errorf("withdrawal payouts: %w", Classify(err))
	}
	return out, nil
}
