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
	if err := db.selectPrepared(ctx, &rows, `
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

// pairActivity returns the statement selecting, for each event of the
// (AVS, operator) pairs that cond (a condition on avs_address and
// operator_address) selects, whether the pair is active after it:
// (avs_address, operator_address, block_number, log_index, block_time,
// active 0 or 1). The events are the AVSDirectory's registration statuses
// and the operator's operator set memberships of the AVS; a pair is active
// while its latest status says registered or the operator is a member of
// any of the AVS's sets, as recomputeRegistrations derives
// avs_operators.is_active.
func pairActivity(cond string) string {
	return `
		    WITH pair_events AS (
		        SELECT avs_address, operator_address, block_number, log_index, block_time,
		               registered AS status, 0 AS member_change
		        FROM registration_events WHERE ` + cond + `
		        UNION ALL
		        SELECT avs_address, operator_address, block_number, log_index, block_time, NULL,
		               added::int - COALESCE(lag(added::int) OVER (
		                   PARTITION BY avs_address, operator_address, operator_set_id ORDER BY block_number, log_index), 0)
		        FROM operator_set_membership_events WHERE ` + cond + `
		    ), pair_states AS (
		        SELECT *, count(status) OVER w AS status_group, sum(member_change) OVER w AS memberships
		        FROM pair_events
		        WINDOW w AS (PARTITION BY avs_address, operator_address ORDER BY block_number, log_index)
		    )
		    SELECT avs_address, operator_address, block_number, log_index, block_time,
		           (COALESCE(first_value(status) OVER (
		                PARTITION BY avs_address, operator_address, status_group ORDER BY block_number, log_index), FALSE)
		            OR memberships > 0)::int AS active
		    FROM pair_states`
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
		), pair_active AS (`+pairActivity("operator_address = ANY($1)")+`
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

// AVSDay is an AVS's figures at the end of a day on which any of them
// changed: the ETH value of its active operators' delegated shares in the
// strategies it restakes, but EIGEN (at the strategies' current rates and
// prices), the stakers restaking with it and its active operators. Days
// without a change carry the figures of the day before.
type AVSDay struct {
	Day       time.Time `db:"day"` // UTC midnight
	TVLETH    string    `db:"tvl_eth"`
	Stakers   int       `db:"total_stakers"`
	Operators int       `db:"total_operators"`
}

// AVSDays returns the days on which the figures of the AVS avs changed,
// oldest first, derived from events by the rules of the current figures
// (refresh's "avs totals"), each as of the end of every day:
//
//   - an operator counts while its (AVS, operator) pair is active
//     (pairActivity);
//   - the TVL is Σ over the active operators of their delegated shares in
//     the AVS's strategies (operatorShareLedger), valued in ETH;
//   - a staker counts while it is delegated to an active operator and
//     holds positive deposit shares (stakerShareLedger) in at least one of
//     the AVS's strategies.
//
// The AVS's strategies are the ones it restakes now: the chain records
// the service manager's strategy list only at the blocks it was read.
func (db *DB) AVSDays(ctx context.Context, avs string) ([]AVSDay, error) {
	var out []AVSDay
	if err := db.selectContext(ctx, &out, avsDaysSQL(), avs); err != nil {
		return nil, fmt.Errorf("AVS days: %w", Classify(err))
	}
	return out, nil
}

// avsDaysSQL is AVSDays' statement; $1 is the AVS.
func avsDaysSQL() string {
	candidates := func(column string) string { return column + " IN (SELECT staker_address FROM candidates)" }
	return `
		WITH pairs AS (
		    SELECT operator_address, block_number, log_index, block_time, active
		    FROM (` + pairActivity("avs_address = $1") + `) p
		), ops AS (
		    SELECT DISTINCT operator_address FROM pairs
		), op_intervals AS (
		    -- The periods between an operator's pair events, with whether
		    -- it is active for the AVS during each.
		    SELECT operator_address, active, block_time AS from_time,
		           COALESCE(lead(block_time) OVER (PARTITION BY operator_address ORDER BY block_number, log_index),
		                    'infinity') AS to_time
		    FROM pairs
		), avs_strategies AS (
		    SELECT unnest(restakeable_strategies) AS strategy_address FROM avs WHERE address = $1
		), registrations AS (
		    SELECT block_time::date AS day, sum(change) AS n
		    FROM (
		        SELECT block_time,
		               active - COALESCE(lag(active) OVER (PARTITION BY operator_address ORDER BY block_number, log_index), 0) AS change
		        FROM pairs
		    ) r
		    GROUP BY 1
		), op_moves AS (
		    SELECT l.operator_address, l.block_time,
		           sum(strategy_eth(l.delta, s.shares_to_underlying, s.decimals, s.eth_price)) AS eth
		    FROM (` + operatorShareLedger("operator_address IN (SELECT operator_address FROM ops)") + `) l
		    JOIN strategies s ON s.address = l.strategy_address AND s.kind <> 'eigen'
		    WHERE l.strategy_address IN (SELECT strategy_address FROM avs_strategies)
		    GROUP BY 1, 2
		), op_values AS (
		    -- Each operator's delegated ETH at each time it or its status
		    -- changed, counted only while it is active.
		    SELECT p.operator_address, p.block_time,
		           sum(COALESCE(m.eth, 0)) OVER (PARTITION BY p.operator_address ORDER BY p.block_time)
		             * COALESCE(i.active, 0) AS eth
		    FROM (SELECT operator_address, block_time FROM op_moves
		          UNION SELECT operator_address, block_time FROM pairs) p
		    LEFT JOIN op_moves m USING (operator_address, block_time)
		    LEFT JOIN op_intervals i
		           ON i.operator_address = p.operator_address AND p.block_time >= i.from_time AND p.block_time < i.to_time
		), tvl AS (
		    SELECT block_time::date AS day, sum(change) AS eth
		    FROM (
		        SELECT block_time, eth - COALESCE(lag(eth) OVER (PARTITION BY operator_address ORDER BY block_time), 0) AS change
		        FROM op_values
		    ) c
		    GROUP BY 1
		), candidates AS (
		    SELECT DISTINCT staker_address FROM delegation_events
		    WHERE type = 'DELEGATION' AND operator_address IN (SELECT operator_address FROM ops)
		), delegation_intervals AS (
		    -- The periods between a staker's delegation events, with its
		    -- operator during each (NULL once undelegated).
		    SELECT staker_address, CASE type WHEN 'DELEGATION' THEN operator_address END AS operator_address,
		           block_time AS from_time,
		           COALESCE(lead(block_time) OVER (PARTITION BY staker_address ORDER BY block_number, log_index),
		                    'infinity') AS to_time
		    FROM delegation_events
		    WHERE type IN ('DELEGATION', 'UNDELEGATION') AND staker_address IN (SELECT staker_address FROM candidates)
		), holding_moves AS (
		    -- +1 when a staker's deposit shares in one of the AVS's
		    -- strategies become positive, −1 when they stop being so.
		    SELECT staker_address, block_time, sum(flip) AS flips
		    FROM (
		        SELECT staker_address, block_time,
		               (balance > 0)::int - COALESCE(lag((balance > 0)::int) OVER (
		                   PARTITION BY staker_address, strategy_address ORDER BY block_time), 0) AS flip
		        FROM (
		            SELECT staker_address, strategy_address, block_time,
		                   sum(sum(delta)) OVER (PARTITION BY staker_address, strategy_address ORDER BY block_time) AS balance
		            FROM (` + stakerShareLedger(candidates) + `) l
		            WHERE strategy_address IN (SELECT strategy_address FROM avs_strategies)
		            GROUP BY staker_address, strategy_address, block_time
		        ) b
		    ) f
		    GROUP BY 1, 2
		), staker_values AS (
		    -- Whether each staker counts at each time its delegation, its
		    -- holdings or its operator's status changed.
		    SELECT p.staker_address, p.block_time,
		           (sum(COALESCE(h.flips, 0)) OVER (PARTITION BY p.staker_address ORDER BY p.block_time) > 0
		            AND COALESCE(i.active, 0) = 1)::int AS counted
		    FROM (SELECT staker_address, from_time AS block_time FROM delegation_intervals
		          UNION SELECT staker_address, block_time FROM holding_moves
		          UNION SELECT d.staker_address, p.block_time
		                FROM pairs p
		                JOIN delegation_intervals d
		                  ON d.operator_address = p.operator_address
		                 AND p.block_time >= d.from_time AND p.block_time < d.to_time) p
		    LEFT JOIN holding_moves h USING (staker_address, block_time)
		    LEFT JOIN delegation_intervals d
		           ON d.staker_address = p.staker_address AND p.block_time >= d.from_time AND p.block_time < d.to_time
		    LEFT JOIN op_intervals i
		           ON i.operator_address = d.operator_address AND p.block_time >= i.from_time AND p.block_time < i.to_time
		), stakers AS (
		    SELECT block_time::date AS day, sum(change) AS n
		    FROM (
		        SELECT block_time,
		               counted - COALESCE(lag(counted) OVER (PARTITION BY staker_address ORDER BY block_time), 0) AS change
		        FROM staker_values
		    ) c
		    GROUP BY 1
		), days AS (
		    SELECT day FROM tvl UNION SELECT day FROM registrations UNION SELECT day FROM stakers
		)
		SELECT d.day::timestamp AT TIME ZONE 'UTC' AS day,
		       (sum(COALESCE(t.eth, 0)) OVER w)::text AS tvl_eth,
		       sum(COALESCE(s.n, 0)) OVER w AS total_stakers,
		       sum(COALESCE(r.n, 0)) OVER w AS total_operators
		FROM days d
		LEFT JOIN tvl t USING (day)
		LEFT JOIN stakers s USING (day)
		LEFT JOIN registrations r USING (day)
		WINDOW w AS (ORDER BY d.day)
		ORDER BY d.day`
}
