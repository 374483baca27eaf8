package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/lib/pq"

	"github.com/stakegraph/stakegraph/chain"
)

// keySet names the rows a derivation rebuilds: the given keys, or every row
// when all is set (a bulk load, which starts from empty tables).
type keySet struct {
	keys []string
	all  bool
}

// allKeys is the keySet of every row.
var allKeys = keySet{all: true}

// someKeys is the keySet of the given keys.
func someKeys(keys []string) keySet { return keySet{keys: keys} }

func (k keySet) empty() bool { return !k.all && len(k.keys) == 0 }

// filter returns the SQL condition that column is one of the keys ($1), or
// one true of every row (that still names $1, an empty array). Writing the
// condition out, rather than testing $1 for NULL inside one statement, lets
// the planner use the column's index.
func (k keySet) filter(column string) string {
	if k.all {
		return "$1::text[] IS NOT NULL"
	}
	return column + " = ANY($1)"
}

func (k keySet) arg() any {
	if k.all {
		return pq.Array([]string{})
	}
	return pq.Array(k.keys)
}

// deriveStakers rebuilds the given stakers and their positions from the raw
// event tables. It is the one derivation of the stakers and staker_shares
// tables: ApplyBatch runs it for the stakers a batch touched, a rollback for
// those the removed events touched, and a bulk load for all of them.
//
//   - A staker exists from its first to its last delegation event, deposit,
//     pod share update or queued withdrawal; its operator is the one of its
//     latest DELEGATION (none after an UNDELEGATION); its beacon-chain
//     slashing factor is the latest BeaconChainSlashingFactorDecreased's.
//   - A position's deposit shares are Σ deposits + Σ pod share deltas
//     (beacon ETH) − Σ the deposit shares its queued withdrawals took; a zero
//     sum leaves no row. Its deposit scaling factor is the latest
//     DepositScalingFactorUpdated's (1e18 without one).
//   - A staker's holding strategies are those of its positions with
//     positive deposit shares, in address order; the positions are derived
//     first for that.
func (tx *Tx) deriveStakers(ctx context.Context, k keySet) error {
	if k.empty() {
		return nil
	}
	if _, err := tx.execContext(ctx, `DELETE FROM staker_shares WHERE `+k.filter("staker_address"), k.arg()); err != nil {
		return fmt.Errorf("derive staker shares: %w", err)
	}
	sharesSQL := fmt.Sprintf(`
		WITH balances AS (
		    SELECT staker_address, strategy_address, sum(delta) AS shares
		    FROM (`+stakerShareLedger(k.filter)+`) d
		    GROUP BY staker_address, strategy_address
		    HAVING sum(delta) <> 0
		), factors AS (
		    SELECT DISTINCT ON (staker_address, strategy_address) staker_address, strategy_address, factor
		    FROM deposit_scaling_factor_events WHERE %[1]s
		    ORDER BY staker_address, strategy_address, block_number DESC, log_index DESC
		)
		INSERT INTO staker_shares (staker_address, strategy_address, shares, deposit_scaling_factor)
		SELECT b.staker_address, b.strategy_address, b.shares, COALESCE(f.factor, 1000000000000000000)
		FROM balances b
		LEFT JOIN factors f USING (staker_address, strategy_address)
		ORDER BY b.staker_address, b.strategy_address`,
		k.filter("staker_address"))
	if _, err := tx.execContext(ctx, sharesSQL, k.arg()); err != nil {
		return fmt.Errorf("derive staker shares: %w", err)
	}
	stakersSQL := fmt.Sprintf(`
		WITH activity AS (
		    SELECT staker_address AS address, block_number, block_time FROM delegation_events WHERE %[1]s
		    UNION ALL SELECT staker_address, block_number, block_time FROM deposits WHERE %[1]s
		    UNION ALL SELECT pod_owner, block_number, block_time FROM pod_share_events WHERE %[2]s
		    UNION ALL SELECT staker_address, block_number, created_at FROM withdrawals WHERE %[1]s
		), spans AS (
		    SELECT address, min(block_number) AS first_block, max(block_number) AS last_block,
		           min(block_time) AS first_time, max(block_time) AS last_time
		    FROM activity GROUP BY address
		), delegation AS (
		    SELECT DISTINCT ON (staker_address) staker_address,
		           CASE WHEN type = 'DELEGATION' THEN operator_address END AS operator_address,
		           block_number, log_index
		    FROM delegation_events
		    WHERE %[1]s AND type IN ('DELEGATION', 'UNDELEGATION')
		    ORDER BY staker_address, block_number DESC, log_index DESC
		), beacon AS (
		    SELECT DISTINCT ON (staker_address) staker_address, new_factor
		    FROM beacon_slashing_factor_events WHERE %[1]s
		    ORDER BY staker_address, block_number DESC, log_index DESC
		), holdings AS (
		    SELECT staker_address, array_agg(strategy_address ORDER BY strategy_address) AS strategies
		    FROM staker_shares WHERE %[1]s AND shares > 0
		    GROUP BY staker_address
		), gone AS (
		    DELETE FROM stakers s
		    WHERE %[3]s AND NOT EXISTS (SELECT 1 FROM spans WHERE spans.address = s.address)
		)
		INSERT INTO stakers (address, created_at_block, updated_at_block, created_at, updated_at,
		                     operator_address, delegation_block, delegation_log_index, beacon_slashing_factor,
		                     holding_strategies)
		SELECT sp.address, sp.first_block, sp.last_block, sp.first_time, sp.last_time,
		       d.operator_address, d.block_number, d.log_index, COALESCE(b.new_factor, 1000000000000000000),
		       COALESCE(h.strategies, '{}')
		FROM spans sp
		LEFT JOIN delegation d ON d.staker_address = sp.address
		LEFT JOIN beacon b ON b.staker_address = sp.address
		LEFT JOIN holdings h ON h.staker_address = sp.address
		ON CONFLICT (address) DO UPDATE
		SET created_at_block = EXCLUDED.created_at_block, updated_at_block = EXCLUDED.updated_at_block,
		    created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at,
		    operator_address = EXCLUDED.operator_address, delegation_block = EXCLUDED.delegation_block,
		    delegation_log_index = EXCLUDED.delegation_log_index,
		    beacon_slashing_factor = EXCLUDED.beacon_slashing_factor,
		    holding_strategies = EXCLUDED.holding_strategies`,
		k.filter("staker_address"), k.filter("pod_owner"), k.filter("s.address"))
	if _, err := tx.execContext(ctx, stakersSQL, k.arg()); err != nil {
		return fmt.Errorf("derive stakers: %w", err)
	}
	return nil
}

// deriveOperatorShares rebuilds the delegated shares of the given operators
// from their ledger: Σ SHARES_INCREASED − Σ SHARES_DECREASED − Σ the shares
// slashes took, per strategy, as the DelegationManager's operatorShares
// moves; a zero sum leaves no row. ApplyBatch runs it for the operators a
// batch touched, a rollback for those the removed events touched, a bulk
// load for all of them.
func (tx *Tx) deriveOperatorShares(ctx context.Context, k keySet) error {
	if k.empty() {
		return nil
	}
	if _, err := tx.execContext(ctx, `DELETE FROM operator_shares WHERE `+k.filter("operator_address"), k.arg()); err != nil {
		return fmt.Errorf("derive operator shares: %w", err)
	}
	_, err := tx.execContext(ctx, `
		INSERT INTO operator_shares (operator_address, strategy_address, shares)
		SELECT operator_address, strategy_address, sum(delta)
		FROM (`+operatorShareLedger(k.filter("operator_address"))+`) l
		GROUP BY operator_address, strategy_address
		HAVING sum(delta) > 0
		ORDER BY operator_address, strategy_address`, k.arg())
	if err != nil {
		return fmt.Errorf("derive operator shares: %w", err)
	}
	return nil
}

// operatorShareLedger returns the statement selecting the movements of
// the delegated shares of the operators that cond (a condition on
// operator_address) selects, as the DelegationManager's operatorShares
// moves: (operator_address, strategy_address, block_time, delta) for each
// SHARES_INCREASED (+), SHARES_DECREASED (−) and share a slash took (−).
// An operator's shares in a strategy are the sum of its deltas, at any
// time the sum of those up to it (store.OperatorDays).
func operatorShareLedger(cond string) string {
	return `
		    SELECT operator_address, strategy_address, block_time,
		           CASE WHEN type = 'SHARES_INCREASED' THEN shares ELSE -shares END AS delta
		    FROM delegation_events
		    WHERE ` + cond + ` AND type IN ('SHARES_INCREASED', 'SHARES_DECREASED')
		    UNION ALL
		    SELECT operator_address, strategy_address, block_time, -shares
		    FROM slashed_operator_shares WHERE ` + cond
}

// stakerShareLedger returns the statement selecting the movements of the
// deposit shares of the stakers that cond selects (cond gives the
// condition on a column naming the staker), as the StrategyManager's and
// EigenPodManager's deposit shares move: (staker_address,
// strategy_address, block_time, delta) for each deposit (+), change of a
// pod's shares (±) and queued withdrawal (−). A staker's shares in a
// strategy are the sum of its deltas, at any time the sum of those up to
// it (store.AVSDays).
func stakerShareLedger(cond func(column string) string) string {
	return `
		    SELECT staker_address, strategy_address, block_time, shares AS delta FROM deposits
		    WHERE ` + cond("staker_address") + `
		    UNION ALL
		    SELECT pod_owner, '` + chain.BeaconStrategy + `', block_time, shares_delta FROM pod_share_events
		    WHERE ` + cond("pod_owner") + `
		    UNION ALL
		    SELECT w.staker_address, x.strategy, w.created_at, -x.shares
		    FROM withdrawals w CROSS JOIN LATERAL unnest(w.strategies, w.deposit_shares) AS x(strategy, shares)
		    WHERE ` + cond("w.staker_address")
}

// joinKeys merges key lists, dropping duplicates and empty strings.
func joinKeys(lists ...[]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range lists {
		for _, k := range l {
			k = strings.ToLower(k)
			if k == "" || seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}
