// Package store is the only package of stakegraph that speaks SQL. It keeps
// the restaking ecosystem in PostgreSQL (schema in migrations/, applied with
// goose) and offers typed reads and writes over sqlx.
//
// # One path for state
//
// All state is derived from an ordered stream of chain events (package
// chain), whether they were decoded by the indexer or generated as demo
// data. Tx.ApplyBatch stores the raw events and derives the entity state
// they touch; each derived table has one derivation, which ApplyBatch runs
// for the keys a batch touches, a reorganisation's rollback
// (Tx.RollbackAfter) for the keys the removed events touched, and a bulk
// load (BulkApplier) once for every key:
//
//   - a staker exists from its first event; its operator is the one named by
//     its latest DELEGATION, or none after an UNDELEGATION (deriveStakers);
//   - a staker's deposit shares per strategy = Σ deposits + Σ pod share
//     deltas (beacon ETH) − Σ the deposit shares its queued withdrawals took
//     (deriveStakers). A withdrawal queued before the slashing upgrade took
//     the shares it names; a slashing-era one took ⌈scaled shares × 1e18 ÷
//     the deposit scaling factor at queue time⌉ (SQL function
//     withdrawal_deposit_shares);
//   - a staker's deposit scaling factor per strategy is the latest
//     DepositScalingFactorUpdated (1e18 without one); its beacon-chain
//     slashing factor the latest BeaconChainSlashingFactorDecreased (1e18);
//   - a staker's withdrawable shares = deposit shares × deposit scaling
//     factor × slashing factor, each product rounded down, where the slashing
//     factor is the max magnitude of its operator in the strategy (1e18 when
//     undelegated or never slashed), times the beacon-chain slashing factor
//     for beacon ETH (SQL function withdrawable_shares, view
//     staker_positions). This is DelegationManager.getWithdrawableShares;
//   - an operator's shares per strategy = Σ SHARES_INCREASED − Σ
//     SHARES_DECREASED − Σ the shares slashes took (the OperatorSharesDecreased
//     a slash emits for the zero staker), which is the DelegationManager's
//     operatorShares (deriveOperatorShares);
//   - an AVS exists from its first metadata URI update; its restakeable
//     strategies are its latest strategies observation followed by the
//     strategies of its operator sets;
//   - an AVS–operator registration is active when its latest AVSDirectory
//     status event says registered, or the operator is a member of any of
//     the AVS's operator sets (its latest membership event of the set added
//     it).
//
// Tx.Refresh then recomputes every aggregate in the same transaction:
//
//   - operator max magnitudes: the latest MaxMagnitudeUpdated per operator
//     and strategy (no row: 1e18);
//   - operator sets: a strategy belongs to a set while its latest event for
//     the set added it; an operator is a member while its latest membership
//     event added it;
//   - allocations, as of the head block, replaying each allocation's
//     AllocationUpdated events in order as the AllocationManager keeps its
//     state (current magnitude, pending magnitude, effect block): a pending
//     change takes effect once its effect block is reached; an event whose
//     effect block is after its own block is a pending change; one for its
//     own block (a slash, or a change that takes effect at once) sets the
//     current magnitude, and a pending increase keeps its difference from
//     it (a slash leaves the stored difference as it was), while a pending
//     decrease keeps its magnitude (the slash restated it in an event just
//     before). An allocation's stake (its slashable
//     shares, AllocationManager.getAllocatedStake) = the operator's shares
//     × (magnitude × 1e18 ÷ max magnitude, rounded down) ÷ 1e18, rounded
//     down (allocationRows);
//   - operator: totalStakers = stakers delegated to it; totalAvs = its active
//     registrations;
//   - strategy: total shares = Σ stakers' withdrawable shares; delegated
//     shares = Σ operators' shares;
//   - AVS: totalOperators = its active registrations; shares = Σ shares of its
//     active operators in the strategies it restakes; totalStakers = distinct
//     stakers delegated to those operators holding > 0 shares of any of those
//     strategies (a staker has one operator, so this is a sum over operators of
//     stakers grouped by the set of strategies they hold);
//   - a registration's restaked strategies = the AVS's restakeable strategies
//     in which the operator holds shares; its TVL = the ETH value of the
//     operator's shares in those strategies, EIGEN excluded;
//   - value: underlying = shares × sharesToUnderlying(1e18) / 1e18 / 10^decimals
//     and ETH = underlying × the token's ETH price (SQL functions
//     strategy_underlying and strategy_eth); beacon shares count 1:1 as ETH.
//     The TVL object: tvlBeaconChain = beacon ETH; tvlRestaking = Σ ETH of
//     liquid strategies; tvl = tvlBeaconChain + tvlRestaking; EIGEN TVL is in
//     EIGEN and is excluded from tvl and tvlRestaking;
//   - maxApy per strategy rewarded by an AVS = (ETH value of the strategy's
//     part of the AVS's submissions made in the 365 days before now ÷ the
//     AVS's TVL in that strategy in ETH) × (seconds per year ÷ Σ the
//     durations of those submissions) × 100; an AVS's maxApy is the max over
//     its strategies; an operator's is the max over its active AVS;
//   - deployment ratio = ETH value of shares delegated to operators ÷ total
//     TVL (both without EIGEN);
//   - daily snapshots, as of the end of each UTC day (today: as of now, or as
//     of the newest indexed block if its time is later): per strategy total
//     and delegated shares and their value, moved day by day by deposits,
//     pod share deltas, withdrawals (the shares they were queued for), the
//     operator share changes and the shares slashes took; counts of AVS,
//     visible AVS (not hidden by curated metadata), operators, stakers
//     (cumulative by first event), withdrawals queued and
//     completed; TVL and deployment ratio. Only days from the earliest event
//     applied since the last refresh are recomputed.
//
// Each refresh increments service_state.data_version, which caches key on.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/stakegraph/stakegraph/chain"
)

// visibleAVS is the condition, on a row of avs, that the AVS is not hidden
// by curated metadata. The ecosystem's AVS count counts visible AVS only, as
// the AVS list shows only those.
const visibleAVS = `NOT EXISTS (SELECT 1 FROM curated_avs_metadata c WHERE c.avs_address = avs.address AND NOT c.is_visible)`

// secondsPerYear is 365 days, the year of the APY formula.
const secondsPerYear = 365 * 24 * 3600

// Refresh recomputes every derived aggregate and the daily snapshots as of
// now (or as of the newest indexed block, if its time is later), and
// increments the data version. Run it in the transaction that
// applied the batches so readers never see events without their aggregates.
func (tx *Tx) Refresh(ctx context.Context, now time.Time) error {
	// The figures are as of the newest indexed block even when its time
	// stamp is ahead of this clock: its events count at once.
	var headTime *time.Time
	if err := tx.getContext(ctx, &headTime, `SELECT head_time FROM service_state WHERE id`); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("refresh: read head: %w", Classify(err))
	}
	if headTime != nil && !headTime.Before(now) {
		now = headTime.Add(time.Microsecond)
	}
	steps := []struct {
		name string
		sql  string
		args []any
	}{
		{"timezone", `SET LOCAL timezone = 'UTC'`, nil},
		{"max magnitudes", `
			DELETE FROM operator_max_magnitudes;
			INSERT INTO operator_max_magnitudes (operator_address, strategy_address, max_magnitude)
			SELECT DISTINCT ON (operator_address, strategy_address) operator_address, strategy_address, max_magnitude
			FROM max_magnitude_events
			ORDER BY operator_address, strategy_address, block_number DESC, log_index DESC`, nil},
		{"operator set strategies", `
			DELETE FROM operator_set_strategies;
			INSERT INTO operator_set_strategies (avs_address, operator_set_id, strategy_address)
			SELECT avs_address, operator_set_id, strategy_address FROM (
			    SELECT DISTINCT ON (avs_address, operator_set_id, strategy_address)
			           avs_address, operator_set_id, strategy_address, added
			    FROM operator_set_strategy_events
			    ORDER BY avs_address, operator_set_id, strategy_address, block_number DESC, log_index DESC
			) l WHERE added`, nil},
		{"operator set members", `
			DELETE FROM operator_set_members;
			INSERT INTO operator_set_members (avs_address, operator_set_id, operator_address, is_active,
			    created_at_block, updated_at_block, created_at, updated_at)
			SELECT avs_address, operator_set_id, operator_address,
			       (array_agg(added ORDER BY block_number DESC, log_index DESC))[1],
			       min(block_number), max(block_number), min(block_time), max(block_time)
			FROM operator_set_membership_events
			GROUP BY avs_address, operator_set_id, operator_address;
			UPDATE operator_sets s SET total_operators = COALESCE(m.n, 0)
			FROM operator_sets s2
			LEFT JOIN (SELECT avs_address, operator_set_id, count(*) AS n FROM operator_set_members
			           WHERE is_active GROUP BY avs_address, operator_set_id) m
			       ON m.avs_address = s2.avs_address AND m.operator_set_id = s2.operator_set_id
			WHERE s.avs_address = s2.avs_address AND s.operator_set_id = s2.operator_set_id
			  AND s.total_operators IS DISTINCT FROM COALESCE(m.n, 0)`, nil},
		{"allocations", `
			DELETE FROM allocations;
			WITH RECURSIVE head AS (
			    SELECT COALESCE((SELECT head_block FROM service_state WHERE id), 0) AS head_block
			), events AS (
			    SELECT operator_address, avs_address, operator_set_id, strategy_address,
			           magnitude, effect_block, block_number, block_time,
			           row_number() OVER (PARTITION BY operator_address, avs_address, operator_set_id, strategy_address
			                              ORDER BY block_number, log_index) AS n
			    FROM allocation_events
			), state AS (
			    -- Before its first event an allocation is 0 with nothing pending.
			    SELECT DISTINCT operator_address, avs_address, operator_set_id, strategy_address,
			           0::bigint AS n, 0::numeric AS cur, NULL::numeric AS pend, NULL::bigint AS eff,
			           0::bigint AS updated_block, NULL::timestamptz AS updated_at
			    FROM events
			  UNION ALL
			    SELECT e.operator_address, e.avs_address, e.operator_set_id, e.strategy_address, e.n,
			           -- An event for a later block is a change to come; one for its
			           -- own block sets the current magnitude. The pending change the
			           -- state had takes effect first if its block is reached.
			           CASE WHEN e.effect_block > e.block_number THEN
			                     CASE WHEN s.eff <= e.block_number THEN s.pend ELSE s.cur END
			                ELSE e.magnitude END,
			           CASE WHEN e.effect_block > e.block_number THEN e.magnitude
			                WHEN s.eff <= e.block_number THEN NULL
			                -- A slash lowers the current magnitude; a pending increase
			                -- keeps its difference (the contract stores the
			                -- difference), a pending decrease was restated by the
			                -- slash's own event just before.
			                WHEN s.pend > s.cur THEN s.pend + e.magnitude - s.cur
			                ELSE s.pend END,
			           CASE WHEN e.effect_block > e.block_number THEN e.effect_block
			                WHEN s.eff <= e.block_number THEN NULL
			                ELSE s.eff END,
			           e.block_number, e.block_time
			    FROM state s
			    JOIN events e
			      ON e.operator_address = s.operator_address AND e.avs_address = s.avs_address
			     AND e.operator_set_id = s.operator_set_id AND e.strategy_address = s.strategy_address
			     AND e.n = s.n + 1
			)
			INSERT INTO allocations (operator_address, avs_address, operator_set_id, strategy_address,
			    magnitude, pending_magnitude, effect_block, updated_block, updated_at)
			SELECT DISTINCT ON (s.operator_address, s.avs_address, s.operator_set_id, s.strategy_address)
			       s.operator_address, s.avs_address, s.operator_set_id, s.strategy_address,
			       CASE WHEN s.eff <= h.head_block THEN s.pend ELSE s.cur END,
			       CASE WHEN s.eff <= h.head_block THEN NULL ELSE s.pend END,
			       CASE WHEN s.eff <= h.head_block THEN NULL ELSE s.eff END,
			       s.updated_block, s.updated_at
			FROM state s
			CROSS JOIN head h
			ORDER BY s.operator_address, s.avs_address, s.operator_set_id, s.strategy_address, s.n DESC`, nil},
		{"strategy totals", `
			UPDATE strategies st
			SET total_shares = COALESCE(t.total, 0), delegated_shares = COALESCE(d.delegated, 0)
			FROM strategies s
			LEFT JOIN (SELECT strategy_address, sum(withdrawable_shares) AS total FROM staker_positions
			           WHERE withdrawable_shares > 0 GROUP BY strategy_address) t ON t.strategy_address = s.address
			LEFT JOIN (SELECT strategy_address, sum(shares) AS delegated FROM operator_shares
			           GROUP BY strategy_address) d ON d.strategy_address = s.address
			WHERE st.address = s.address`, nil},
		{"registration strategies", `
			UPDATE avs_operators ao
			SET restaked_strategies = r.strategies
			FROM (
			    SELECT ao.avs_address, ao.operator_address,
			           COALESCE(array_agg(os.strategy_address ORDER BY os.strategy_address)
			                    FILTER (WHERE os.strategy_address IS NOT NULL), '{}') AS strategies
			    FROM avs_operators ao
			    JOIN avs a ON a.address = ao.avs_address
			    LEFT JOIN operator_shares os
			           ON os.operator_address = ao.operator_address
			          AND os.strategy_address = ANY (a.restakeable_strategies)
			          AND os.shares > 0
			    GROUP BY ao.avs_address, ao.operator_address
			) r
			WHERE ao.avs_address = r.avs_address AND ao.operator_address = r.operator_address
			  AND ao.restaked_strategies IS DISTINCT FROM r.strategies`, nil},
		{"registration tvl", `
			UPDATE avs_operators ao
			SET tvl_eth = r.eth
			FROM (
			    SELECT ao.avs_address, ao.operator_address,
			           COALESCE(sum(strategy_eth(os.shares, s.shares_to_underlying, s.decimals, s.eth_price)), 0) AS eth
			    FROM avs_operators ao
			    LEFT JOIN (operator_shares os JOIN strategies s ON s.address = os.strategy_address AND s.kind <> 'eigen')
			           ON os.operator_address = ao.operator_address
			          AND os.strategy_address = ANY (ao.restaked_strategies)
			    GROUP BY ao.avs_address, ao.operator_address
			) r
			WHERE ao.avs_address = r.avs_address AND ao.operator_address = r.operator_address
			  AND ao.tvl_eth IS DISTINCT FROM r.eth`, nil},
		{"avs shares", `
			DELETE FROM avs_shares;
			INSERT INTO avs_shares (avs_address, strategy_address, shares)
			SELECT ao.avs_address, os.strategy_address, sum(os.shares)
			FROM avs_operators ao
			JOIN avs a ON a.address = ao.avs_address
			JOIN operator_shares os
			  ON os.operator_address = ao.operator_address
			 AND os.strategy_address = ANY (a.restakeable_strategies)
			WHERE ao.is_active
			GROUP BY ao.avs_address, os.strategy_address`, nil},
		{"operator totals", `
			UPDATE operators o
			SET total_stakers = COALESCE(s.n, 0), total_avs = COALESCE(r.n, 0), tvl_eth = COALESCE(v.eth, 0)
			FROM operators o2
			LEFT JOIN (SELECT operator_address, count(*) AS n FROM stakers
			           WHERE operator_address IS NOT NULL GROUP BY operator_address) s
			       ON s.operator_address = o2.address
			LEFT JOIN (SELECT operator_address, count(*) AS n FROM avs_operators
			           WHERE is_active GROUP BY operator_address) r
			       ON r.operator_address = o2.address
			LEFT JOIN (SELECT os.operator_address,
			                  sum(strategy_eth(os.shares, st.shares_to_underlying, st.decimals, st.eth_price)) AS eth
			           FROM operator_shares os JOIN strategies st ON st.address = os.strategy_address
			           WHERE st.kind <> 'eigen' GROUP BY os.operator_address) v
			       ON v.operator_address = o2.address
			WHERE o.address = o2.address`, nil},
		{"registration stakers", `
			-- The stakers each registration brings its AVS (the stakers
			-- ListAVSStakers lists): those delegated to the operator that
			-- hold shares in a strategy the AVS restakes, while the
			-- registration is active; in all and by address bucket.
			WITH holding_counts AS (
			    -- The delegated stakers by operator and set of strategies
			    -- with positive shares (their holding strategies), in all
			    -- and in each address bucket (b1 to b16).
			    SELECT operator_address, holding_strategies AS strategies, count(*) AS n` + bucketCounts("bucket") + `
			    FROM (
			        SELECT operator_address, holding_strategies, ` + addressBucket("address") + ` AS bucket
			        FROM stakers
			        WHERE operator_address IS NOT NULL AND holding_strategies <> '{}'
			    ) s
			    GROUP BY operator_address, holding_strategies
			), registration_stakers AS (
			    SELECT ao.avs_address, ao.operator_address, COALESCE(sum(hc.n), 0) AS n,
			           ` + bucketSums("hc") + ` AS buckets
			    FROM avs_operators ao
			    JOIN avs a ON a.address = ao.avs_address
			    LEFT JOIN holding_counts hc
			      ON hc.operator_address = ao.operator_address
			     AND ` + avsStakerCondition("ao.is_active", "hc.strategies", "a.restakeable_strategies") + `
			    GROUP BY ao.avs_address, ao.operator_address
			)
			UPDATE avs_operators ao
			SET total_stakers = r.n, staker_buckets = r.buckets
			FROM registration_stakers r
			WHERE ao.avs_address = r.avs_address AND ao.operator_address = r.operator_address
			  AND (ao.total_stakers, ao.staker_buckets) IS DISTINCT FROM (r.n, r.buckets)`, nil},
		{"avs totals", `
			WITH avs_stakers AS (
			    SELECT avs_address, sum(total_stakers) AS n
			    FROM avs_operators
			    WHERE is_active
			    GROUP BY avs_address
			)
			UPDATE avs a
			SET total_operators = COALESCE(r.n, 0), total_stakers = COALESCE(s.n, 0), tvl_eth = COALESCE(v.eth, 0)
			FROM avs a2
			LEFT JOIN (SELECT avs_address, count(*) AS n FROM avs_operators WHERE is_active GROUP BY avs_address) r
			       ON r.avs_address = a2.address
			LEFT JOIN avs_stakers s ON s.avs_address = a2.address
			LEFT JOIN (SELECT ash.avs_address,
			                  sum(strategy_eth(ash.shares, st.shares_to_underlying, st.decimals, st.eth_price)) AS eth
			           FROM avs_shares ash JOIN strategies st ON st.address = ash.strategy_address
			           WHERE st.kind <> 'eigen' GROUP BY ash.avs_address) v
			       ON v.avs_address = a2.address
			WHERE a.address = a2.address`, nil},
		{"apy reset", `DELETE FROM avs_strategy_apy`, nil},
		{"apy", `
			WITH rewarded AS (
			    SELECT rs.avs_address, rss.strategy_address,
			           sum(token_eth(rss.amount, t.decimals, t.eth_price)) AS eth,
			           sum(rs.duration) AS duration
			    FROM rewards_submissions rs
			    JOIN rewards_submission_strategies rss ON rss.rewards_submission_hash = rs.rewards_submission_hash
			    JOIN tokens t ON t.address = rs.token_address
			    WHERE rs.block_time > $1::timestamptz - interval '365 days' AND rs.block_time <= $1::timestamptz
			    GROUP BY rs.avs_address, rss.strategy_address
			)
			INSERT INTO avs_strategy_apy (avs_address, strategy_address, apy)
			SELECT r.avs_address, r.strategy_address,
			       CASE WHEN tvl.eth > 0 AND r.duration > 0
			            THEN trim_scale(round(r.eth / tvl.eth * ($2::numeric / r.duration) * 100, 8))
			            ELSE 0 END
			FROM rewarded r
			JOIN avs a ON a.address = r.avs_address
			LEFT JOIN LATERAL (
			    SELECT strategy_eth(ash.shares, st.shares_to_underlying, st.decimals, st.eth_price) AS eth
			    FROM avs_shares ash JOIN strategies st ON st.address = ash.strategy_address
			    WHERE ash.avs_address = r.avs_address AND ash.strategy_address = r.strategy_address
			) tvl ON TRUE`, []any{now.UTC(), secondsPerYear}},
		{"max apy", `
			UPDATE avs a SET max_apy = COALESCE(m.apy, 0)
			FROM avs a2
			LEFT JOIN (SELECT avs_address, max(apy) AS apy FROM avs_strategy_apy GROUP BY avs_address) m
			       ON m.avs_address = a2.address
			WHERE a.address = a2.address AND a.max_apy IS DISTINCT FROM COALESCE(m.apy, 0);
			UPDATE operators o SET max_apy = COALESCE(m.apy, 0)
			FROM operators o2
			LEFT JOIN (SELECT ao.operator_address, max(a.max_apy) AS apy
			           FROM avs_operators ao JOIN avs a ON a.address = ao.avs_address
			           WHERE ao.is_active GROUP BY ao.operator_address) m
			       ON m.operator_address = o2.address
			WHERE o.address = o2.address AND o.max_apy IS DISTINCT FROM COALESCE(m.apy, 0)`, nil},
	}
	for _, s := range steps {
		if _, err := tx.execContext(ctx, s.sql, s.args...); err != nil {
			return fmt.Errorf("refresh %s: %w", s.name, Classify(err))
		}
	}
	if err := tx.refreshSnapshots(ctx, now); err != nil {
		return fmt.Errorf("refresh snapshots: %w", Classify(err))
	}
	if _, err := tx.execContext(ctx, `
		UPDATE service_state
		SET data_version = data_version + 1, refreshed_at = $1, dirty_since = NULL
		WHERE id`, now.UTC()); err != nil {
		return fmt.Errorf("refresh version: %w", Classify(err))
	}
	return nil
}

// refreshSnapshots recomputes the daily snapshots from the first day that
// events applied since the last refresh touched (or the day after the last
// snapshot, if earlier) up to now's day. Values of earlier days carry over
// from the snapshot of the day before the first recomputed one.
func (tx *Tx) refreshSnapshots(ctx context.Context, now time.Time) error {
	var from, lastSnap, firstEvent *time.Time
	if err := tx.queryRowxContext(ctx, `
		SELECT (SELECT dirty_since FROM service_state WHERE id),
		       (SELECT max(day)::timestamptz FROM daily_snapshots),
		       (SELECT min(t) FROM (
		            SELECT min(block_time) AS t FROM delegation_events
		            UNION ALL SELECT min(block_time) FROM deposits
		            UNION ALL SELECT min(block_time) FROM pod_share_events
		            UNION ALL SELECT min(created_at) FROM withdrawals
		            UNION ALL SELECT min(created_at) FROM avs
		            UNION ALL SELECT min(created_at) FROM operators) x)`).Scan(&from, &lastSnap, &firstEvent); err != nil {
		return err
	}
	if firstEvent == nil {
		return nil // nothing has happened yet
	}
	today := now.UTC().Truncate(24 * time.Hour)
	start := today
	if from != nil && from.Before(start) {
		start = *from
	}
	if lastSnap == nil {
		start = *firstEvent
	} else if next := lastSnap.AddDate(0, 0, 1); next.Before(start) {
		start = next
	}
	start = start.UTC().Truncate(24 * time.Hour)
	if start.After(today) {
		start = today
	}
	startDay, endDay := start.Format("2006-01-02"), today.Format("2006-01-02")

	if _, err := tx.execContext(ctx, `
		DELETE FROM strategy_daily_snapshots WHERE day >= $1::date`, startDay); err != nil {
		return err
	}
	if _, err := tx.execContext(ctx, `
		WITH days AS (
		    SELECT d::date AS day FROM generate_series($1::date, $2::date, interval '1 day') AS d
		), deltas AS (
		    SELECT block_time::date AS day, strategy_address, sum(total) AS total, sum(delegated) AS delegated
		    FROM (
		        SELECT block_time, strategy_address, shares AS total, 0 AS delegated
		        FROM deposits WHERE block_time >= $1::date AND block_time < $3
		        UNION ALL
		        SELECT block_time, $4, shares_delta, 0
		        FROM pod_share_events WHERE block_time >= $1::date AND block_time < $3
		        UNION ALL
		        SELECT w.created_at, x.strategy, -x.shares, 0
		        FROM withdrawals w CROSS JOIN LATERAL unnest(w.strategies, w.shares) AS x(strategy, shares)
		        WHERE w.created_at >= $1::date AND w.created_at < $3
		        UNION ALL
		        SELECT block_time, strategy_address, 0,
		               CASE type WHEN 'SHARES_INCREASED' THEN shares ELSE -shares END
		        FROM delegation_events
		        WHERE strategy_address IS NOT NULL AND block_time >= $1::date AND block_time < $3
		        UNION ALL
		        SELECT block_time, strategy_address, -shares, -shares
		        FROM slashed_operator_shares WHERE block_time >= $1::date AND block_time < $3
		    ) x
		    GROUP BY 1, 2
		), base AS (
		    SELECT strategy_address, total_shares, delegated_shares
		    FROM strategy_daily_snapshots WHERE day = $1::date - 1
		), series AS (
		    SELECT d.day, s.address AS strategy_address, s.shares_to_underlying, s.decimals, s.eth_price,
		           COALESCE(b.total_shares, 0)
		             + sum(COALESCE(x.total, 0)) OVER (PARTITION BY s.address ORDER BY d.day) AS total_shares,
		           COALESCE(b.delegated_shares, 0)
		             + sum(COALESCE(x.delegated, 0)) OVER (PARTITION BY s.address ORDER BY d.day) AS delegated_shares
		    FROM days d
		    CROSS JOIN strategies s
		    LEFT JOIN deltas x ON x.day = d.day AND x.strategy_address = s.address
		    LEFT JOIN base b ON b.strategy_address = s.address
		)
		INSERT INTO strategy_daily_snapshots (day, strategy_address, total_shares, delegated_shares, tvl, tvl_eth)
		SELECT day, strategy_address, total_shares, delegated_shares,
		       strategy_underlying(GREATEST(total_shares, 0), shares_to_underlying, decimals),
		       strategy_eth(GREATEST(total_shares, 0), shares_to_underlying, decimals, eth_price)
		FROM series`, startDay, endDay, now.UTC(), chain.BeaconStrategy); err != nil {
		return err
	}

	if _, err := tx.execContext(ctx, `
		DELETE FROM daily_snapshots WHERE day >= $1::date`, startDay); err != nil {
		return err
	}
	_, err := tx.execContext(ctx, `
		WITH days AS (
		    SELECT d::date AS day FROM generate_series($1::date, $2::date, interval '1 day') AS d
		), per_day AS (
		    SELECT t::date AS day, sum(avs) AS avs, sum(ops) AS ops, sum(stakers) AS stakers,
		           sum(queued) AS queued, sum(completed) AS completed,
		           sum(deposits) AS deposits, sum(deposits_eth) AS deposits_eth, sum(withdrawals_eth) AS withdrawals_eth
		    FROM (
		        SELECT created_at AS t, 1 AS avs, 0 AS ops, 0 AS stakers, 0 AS queued, 0 AS completed,
		               0 AS deposits, 0::numeric AS deposits_eth, 0::numeric AS withdrawals_eth
		        FROM avs WHERE created_at >= $1::date AND `+visibleAVS+`
		        UNION ALL SELECT created_at, 0, 1, 0, 0, 0, 0, 0, 0 FROM operators WHERE created_at >= $1::date
		        UNION ALL SELECT created_at, 0, 0, 1, 0, 0, 0, 0, 0 FROM stakers WHERE created_at >= $1::date
		        UNION ALL SELECT w.created_at, 0, 0, 0, 1, 0, 0, 0,
		                         (SELECT COALESCE(sum(strategy_eth(x.shares, s.shares_to_underlying, s.decimals, s.eth_price)), 0)
		                          FROM unnest(w.strategies, w.shares) AS x(strategy, shares)
		                          JOIN strategies s ON s.address = x.strategy)
		                  FROM withdrawals w WHERE w.created_at >= $1::date
		        UNION ALL SELECT completed_at, 0, 0, 0, 0, 1, 0, 0, 0 FROM withdrawals
		                  WHERE is_completed AND completed_at >= $1::date
		        UNION ALL SELECT d.block_time, 0, 0, 0, 0, 0, 1,
		                         COALESCE(strategy_eth(d.shares, s.shares_to_underlying, s.decimals, s.eth_price), 0), 0
		                  FROM deposits d LEFT JOIN strategies s ON s.address = d.strategy_address
		                  WHERE d.block_time >= $1::date
		    ) x
		    WHERE t < $3
		    GROUP BY 1
		), base AS (
		    SELECT (SELECT count(*) FROM avs WHERE created_at < $1::date AND `+visibleAVS+`) AS avs,
		           (SELECT count(*) FROM operators WHERE created_at < $1::date) AS ops,
		           (SELECT count(*) FROM stakers WHERE created_at < $1::date) AS stakers,
		           (SELECT count(*) FROM withdrawals WHERE created_at < $1::date) AS queued,
		           (SELECT count(*) FROM withdrawals WHERE is_completed AND completed_at < $1::date) AS completed,
		           -- The deposit figures carry over from the day before: they
		           -- sum every earlier deposit, too many to recount each time.
		           COALESCE(p.total_deposits, 0) AS deposits,
		           COALESCE(p.deposits_eth, 0) AS deposits_eth,
		           COALESCE(p.withdrawals_eth, 0) AS withdrawals_eth
		    FROM (SELECT 1) one
		    LEFT JOIN daily_snapshots p ON p.day = $1::date - 1
		), tvl AS (
		    SELECT sds.day,
		           COALESCE(sum(sds.tvl_eth) FILTER (WHERE s.kind = 'beacon'), 0) AS beacon,
		           COALESCE(sum(sds.tvl_eth) FILTER (WHERE s.kind = 'liquid'), 0) AS restaking,
		           COALESCE(sum(strategy_eth(GREATEST(sds.delegated_shares, 0), s.shares_to_underlying, s.decimals, s.eth_price))
		                    FILTER (WHERE s.kind <> 'eigen'), 0) AS delegated
		    FROM strategy_daily_snapshots sds JOIN strategies s ON s.address = sds.strategy_address
		    WHERE sds.day >= $1::date
		    GROUP BY sds.day
		)
		INSERT INTO daily_snapshots (day, total_avs, total_operators, total_stakers, new_stakers, total_withdrawals,
		    completed_withdrawals, total_deposits, deposits_eth, withdrawals_eth,
		    tvl_eth, tvl_beacon_chain, tvl_restaking, delegated_eth, deployment_ratio)
		SELECT d.day,
		       b.avs + sum(COALESCE(p.avs, 0)) OVER w,
		       b.ops + sum(COALESCE(p.ops, 0)) OVER w,
		       b.stakers + sum(COALESCE(p.stakers, 0)) OVER w,
		       COALESCE(p.stakers, 0),
		       b.queued + sum(COALESCE(p.queued, 0)) OVER w,
		       b.completed + sum(COALESCE(p.completed, 0)) OVER w,
		       b.deposits + sum(COALESCE(p.deposits, 0)) OVER w,
		       b.deposits_eth + sum(COALESCE(p.deposits_eth, 0)) OVER w,
		       b.withdrawals_eth + sum(COALESCE(p.withdrawals_eth, 0)) OVER w,
		       COALESCE(v.beacon + v.restaking, 0), COALESCE(v.beacon, 0), COALESCE(v.restaking, 0),
		       COALESCE(v.delegated, 0),
		       CASE WHEN COALESCE(v.beacon + v.restaking, 0) > 0
		            THEN round(v.delegated / (v.beacon + v.restaking), 18) ELSE 0 END
		FROM days d
		CROSS JOIN base b
		LEFT JOIN per_day p ON p.day = d.day
		LEFT JOIN tvl v ON v.day = d.day
		WINDOW w AS (ORDER BY d.day)`, startDay, endDay, now.UTC())
	return err
}
