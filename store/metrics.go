package store

import (
	"context"
	"fmt"
	"time"

	"github.com/lib/pq"
)

// DailySnapshot is the ecosystem as of the end of one UTC day (the latest
// day: as of the last refresh). Values are decimal text.
type DailySnapshot struct {
	Day                  time.Time `db:"day"`
	TotalAVS             int       `db:"total_avs"`
	TotalOperators       int       `db:"total_operators"`
	TotalStakers         int       `db:"total_stakers"`
	NewStakers           int       `db:"new_stakers"`
	TotalWithdrawals     int       `db:"total_withdrawals"`
	CompletedWithdrawals int       `db:"completed_withdrawals"`
	TotalDeposits        int       `db:"total_deposits"`
	TVLETH               string    `db:"tvl_eth"`
	TVLBeaconChain       string    `db:"tvl_beacon_chain"`
	TVLRestaking         string    `db:"tvl_restaking"`
	DelegatedETH         string    `db:"delegated_eth"`
	DeploymentRatio      string    `db:"deployment_ratio"`
	// ETHSupply is the ETH supply that day (see LatestSnapshots), and
	// RestakingRatio the TVL in ETH divided by it; both are "" when no
	// supply was ever recorded.
	ETHSupply      string `db:"eth_supply"`
	RestakingRatio string `db:"restaking_ratio"`
}

// SnapshotTrio is the latest daily snapshot and the snapshots one and seven
// days before it, from which metrics and their 24-hour and 7-day changes are
// computed. A missing snapshot (before the first event, or an empty
// database) is the zero DailySnapshot: every count and value was 0 then.
type SnapshotTrio struct {
	Latest, DayBefore, WeekBefore DailySnapshot
}

// LatestSnapshots returns the latest daily snapshot with the ones one and
// seven days before it, in one statement. Each carries the ETH supply
// observed last by the end of its day (or, for a day before the first
// observation, the first one: the supply moves by a fraction of a percent a
// year) and the restaking ratio it gives.
func (db *DB) LatestSnapshots(ctx context.Context) (SnapshotTrio, error) {
	var rows []DailySnapshot
	if err := db.selectContext(ctx, &rows, `
		SELECT d.day::timestamp AT TIME ZONE 'UTC' AS day, d.total_avs, d.total_operators, d.total_stakers, d.new_stakers,
		       d.total_withdrawals, d.completed_withdrawals, d.total_deposits, d.tvl_eth::text AS tvl_eth,
		       d.tvl_beacon_chain::text AS tvl_beacon_chain, d.tvl_restaking::text AS tvl_restaking,
		       d.delegated_eth::text AS delegated_eth, d.deployment_ratio::text AS deployment_ratio,
		       COALESCE(e.supply::text, '') AS eth_supply,
		       COALESCE(trim_scale(round(d.tvl_eth / e.supply, 18))::text, '') AS restaking_ratio
		FROM daily_snapshots d
		LEFT JOIN LATERAL (
		    SELECT COALESCE(
		        (SELECT supply FROM eth_supply_observations
		         WHERE observed_at < (d.day + 1)::timestamp AT TIME ZONE 'UTC'
		         ORDER BY observed_at DESC LIMIT 1),
		        (SELECT supply FROM eth_supply_observations ORDER BY observed_at LIMIT 1)) AS supply
		) e ON TRUE
		WHERE d.day IN (
			SELECT l.day - o.days
			FROM (SELECT max(day) AS day FROM daily_snapshots) l
			CROSS JOIN (VALUES (0), (1), (7)) AS o(days))
		ORDER BY d.day DESC`); err != nil {
		return SnapshotTrio{}, fmt.Errorf("latest snapshots: %w", Classify(err))
	}
	var trio SnapshotTrio
	if len(rows) == 0 {
		return trio, nil
	}
	latest := rows[0].Day.UTC()
	for _, r := range rows {
		switch {
		case r.Day.Equal(latest):
			trio.Latest = r
		case r.Day.Equal(latest.AddDate(0, 0, -1)):
			trio.DayBefore = r
		case r.Day.Equal(latest.AddDate(0, 0, -7)):
			trio.WeekBefore = r
		}
	}
	return trio, nil
}

// StrategySnapshot is one strategy as of the end of one UTC day: its total
// shares and their value in the native token and in ETH (decimal text).
type StrategySnapshot struct {
	Day             time.Time `db:"day"`
	StrategyAddress string    `db:"strategy_address"`
	Symbol          string    `db:"symbol"`
	Kind            string    `db:"kind"`
	TotalShares     string    `db:"total_shares"`
	TVL             string    `db:"tvl"`
	TVLETH          string    `db:"tvl_eth"`
}

// StrategySnapshotTrio holds, for each strategy, its snapshots of the latest
// day and of one and seven days before it, in strategy symbol order.
type StrategySnapshotTrio struct {
	Latest, DayBefore, WeekBefore []StrategySnapshot
}

// LatestStrategySnapshots returns the per-strategy snapshots of the latest
// snapshot day and of one and seven days before it, in one statement. When
// strategy is not empty, only that strategy's are returned.
func (db *DB) LatestStrategySnapshots(ctx context.Context, strategy string) (StrategySnapshotTrio, error) {
	var rows []StrategySnapshot
	if err := db.selectContext(ctx, &rows, `
		SELECT sds.day::timestamp AT TIME ZONE 'UTC' AS day, sds.strategy_address, s.symbol, s.kind::text AS kind,
		       sds.total_shares::text AS total_shares, sds.tvl::text AS tvl, sds.tvl_eth::text AS tvl_eth
		FROM strategy_daily_snapshots sds
		JOIN strategies s ON s.address = sds.strategy_address
		WHERE sds.day IN (
			SELECT l.day - o.days
			FROM (SELECT max(day) AS day FROM strategy_daily_snapshots) l
			CROSS JOIN (VALUES (0), (1), (7)) AS o(days))
		  AND ($1 = '' OR sds.strategy_address = $1)
		ORDER BY sds.day DESC, s.symbol, sds.strategy_address`, strategy); err != nil {
		return StrategySnapshotTrio{}, fmt.Errorf("latest strategy snapshots: %w", Classify(err))
	}
	var trio StrategySnapshotTrio
	if len(rows) == 0 {
		return trio, nil
	}
	latest := rows[0].Day.UTC()
	for _, r := range rows {
		switch {
		case r.Day.Equal(latest):
			trio.Latest = append(trio.Latest, r)
		case r.Day.Equal(latest.AddDate(0, 0, -1)):
			trio.DayBefore = append(trio.DayBefore, r)
		case r.Day.Equal(latest.AddDate(0, 0, -7)):
			trio.WeekBefore = append(trio.WeekBefore, r)
		}
	}
	return trio, nil
}

// CountDay is one day's figures in the daily snapshots: the AVS (those the
// listings show), operators, stakers, queued withdrawals and deposits seen
// by the end of the day, the value in ETH of those deposits and
// withdrawals, and the TVL in ETH then (values are decimal text). Each
// count and cumulative value only grows, so what appeared in a range of
// days is the difference of the figures at its ends.
type CountDay struct {
	Day            time.Time `db:"day"` // UTC midnight
	AVS            int       `db:"total_avs"`
	Operators      int       `db:"total_operators"`
	Stakers        int       `db:"total_stakers"`
	Withdrawals    int       `db:"total_withdrawals"`
	Deposits       int       `db:"total_deposits"`
	DepositsETH    string    `db:"deposits_eth"`
	WithdrawalsETH string    `db:"withdrawals_eth"`
	TVLETH         string    `db:"tvl_eth"`
	TVLBeaconChain string    `db:"tvl_beacon_chain"`
}

// CountDays returns the counts of every daily snapshot, oldest first.
// There is one per day since the chain's first event (a few hundred to a
// few thousand rows, about 40 bytes each): the count histories are
// computed from them in memory for any range and bucket size.
func (db *DB) CountDays(ctx context.Context) ([]CountDay, error) {
	var out []CountDay
	if err := db.selectContext(ctx, &out, `
		SELECT d.day::timestamp AT TIME ZONE 'UTC' AS day,
		       d.total_avs, d.total_operators, d.total_stakers, d.total_withdrawals, d.total_deposits,
		       d.deposits_eth::text AS deposits_eth, d.withdrawals_eth::text AS withdrawals_eth,
		       d.tvl_eth::text AS tvl_eth, d.tvl_beacon_chain::text AS tvl_beacon_chain
		FROM daily_snapshots d
		ORDER BY d.day`); err != nil {
		return nil, fmt.Errorf("count days: %w", Classify(err))
	}
	return out, nil
}

// StrategyDay is one strategy's TVL in ETH at the end of one day (decimal
// text).
type StrategyDay struct {
	Strategy string    `db:"strategy_address"`
	Day      time.Time `db:"day"` // UTC midnight
	TVLETH   string    `db:"tvl_eth"`
}

// StrategyDays returns the daily TVLs of the given strategies, by strategy
// and oldest first: one row per day since the chain's first event, as for
// CountDays.
func (db *DB) StrategyDays(ctx context.Context, strategies []string) ([]StrategyDay, error) {
	var out []StrategyDay
	if err := db.selectContext(ctx, &out, `
		SELECT sds.strategy_address, sds.day::timestamp AT TIME ZONE 'UTC' AS day, sds.tvl_eth::text AS tvl_eth
		FROM strategy_daily_snapshots sds
		WHERE sds.strategy_address = ANY($1)
		ORDER BY sds.strategy_address, sds.day`, pq.Array(strategies)); err != nil {
		return nil, fmt.Errorf("strategy days: %w", Classify(err))
	}
	return out, nil
}

// OperatorDay is an operator's figures at the end of a day on which any of
// them changed: the ETH value of its delegated shares in every strategy but
// EIGEN (at the strategies' current rates and prices), the stakers
// delegated to it and the AVS it is registered with. Days without a change
// carry the figures of the day before.
type OperatorDay struct {
	Operator string    `db:"operator_address"`
	Day      time.Time `db:"day"` // UTC midnight
	TVLETH   string    `db:"tvl_eth"`
	Stakers  int       `db:"total_stakers"`
	AVS      int       `db:"total_avs"`
}

// OperatorDays returns the days on which the figures of the given
// operators changed, by operator and oldest first, derived from their
// events: the delegated shares from their ledger (operatorShareLedger),
// the stakers from the DELEGATION (+1) and UNDELEGATION (−1) events, the
// AVS from each (AVS, operator) pair's registration and operator set
// membership events (+1 when a pair becomes active, −1 when it stops being
// so).
func (db *DB) OperatorDays(ctx context.Context, operators []string) ([]OperatorDay, error) {
	var out []OperatorDay
	if err := db.selectContext(ctx, &out, `
		WITH tvl AS (
		    SELECT l.operator_address, l.block_time::date AS day,
		           sum(strategy_eth(l.delta, s.shares_to_underlying, s.decimals, s.eth_price)) AS eth
		    FROM (`+operatorShareLedger("operator_address = ANY($1)")+`) l
		    JOIN strategies s ON s.address = l.strategy_address AND s.kind <> 'eigen'
		    GROUP BY 1, 2
		), delegations AS (
		    SELECT operator_address, block_time::date AS day,
		           sum(CASE type WHEN 'DELEGATION' THEN 1 ELSE -1 END) AS n
		    FROM delegation_events
		    WHERE operator_address = ANY($1) AND type IN ('DELEGATION', 'UNDELEGATION')
		    GROUP BY 1, 2
		), pair_events AS (
		    -- The events of each (AVS, operator) pair: AVSDirectory statuses,
		    -- and the changes of the number of the AVS's operator sets the
		    -- operator is a member of.
		    SELECT avs_address, operator_address, block_number, log_index, block_time,
		           registered AS status, 0 AS member_change
		    FROM registration_events WHERE operator_address = ANY($1)
		    UNION ALL
		    SELECT avs_address, operator_address, block_number, log_index, block_time, NULL,
		           added::int - COALESCE(lag(added::int) OVER (
		               PARTITION BY avs_address, operator_address, operator_set_id ORDER BY block_number, log_index), 0)
		    FROM operator_set_membership_events WHERE operator_address = ANY($1)
		), pair_states AS (
		    SELECT *, count(status) OVER w AS status_group, sum(member_change) OVER w AS memberships
		    FROM pair_events
		    WINDOW w AS (PARTITION BY avs_address, operator_address ORDER BY block_number, log_index)
		), pair_active AS (
		    -- A pair is active while its latest status says registered or the
		    -- operator is a member of any of the AVS's sets, as
		    -- recomputeRegistrations derives avs_operators.is_active.
		    SELECT avs_address, operator_address, block_number, log_index, block_time,
		           (COALESCE(first_value(status) OVER (
		                PARTITION BY avs_address, operator_address, status_group ORDER BY block_number, log_index), FALSE)
		            OR memberships > 0)::int AS active
		    FROM pair_states
		), registrations AS (
		    SELECT operator_address, block_time::date AS day, sum(change) AS n
		    FROM (
		        SELECT operator_address, block_time,
		               active - COALESCE(lag(active) OVER (
		                   PARTITION BY avs_address, operator_address ORDER BY block_number, log_index), 0) AS change
		        FROM pair_active
		    ) r
		    GROUP BY 1, 2
		), days AS (
		    SELECT operator_address, day FROM tvl
		    UNION SELECT operator_address, day FROM delegations
		    UNION SELECT operator_address, day FROM registrations
		)
		SELECT d.operator_address, d.day::timestamp AT TIME ZONE 'UTC' AS day,
		       (sum(COALESCE(t.eth, 0)) OVER w)::text AS tvl_eth,
		       sum(COALESCE(g.n, 0)) OVER w AS total_stakers,
		       sum(COALESCE(r.n, 0)) OVER w AS total_avs
		FROM days d
		LEFT JOIN tvl t USING (operator_address, day)
		LEFT JOIN delegations g USING (operator_address, day)
		LEFT JOIN registrations r USING (operator_address, day)
		WINDOW w AS (PARTITION BY d.operator_address ORDER BY d.day)
		ORDER BY d.operator_address, d.day`, pq.Array(operators)); err != nil {
		return nil, fmt.Errorf("operator days: %w", Classify(err))
	}
	return out, nil
}
