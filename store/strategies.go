package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/lib/pq"
)

// StrategyState is a strategy as the read API shows it: its reference data,
// its share totals, and their value (TVL) in the native token and in ETH.
// Amounts are decimal text: shares are integers, values are decimals.
type StrategyState struct {
	Address            string  `db:"address"`
	Symbol             string  `db:"symbol"`
	Kind               string  `db:"kind"`
	UnderlyingToken    *string `db:"underlying_token"`
	Decimals           int     `db:"decimals"`
	SharesToUnderlying string  `db:"shares_to_underlying"`
	ETHPrice           string  `db:"eth_price"`
	TotalShares        string  `db:"total_shares"`
	DelegatedShares    string  `db:"delegated_shares"`
	TVL                string  `db:"tvl"`
	TVLETH             string  `db:"tvl_eth"`
}

// strategyStateColumns selects a StrategyState from strategies s.
const strategyStateColumns = `
	s.address, s.symbol, s.kind::text AS kind, s.underlying_token, s.decimals,
	s.shares_to_underlying::text AS shares_to_underlying, s.eth_price::text AS eth_price,
	s.total_shares::text AS total_shares, s.delegated_shares::text AS delegated_shares,
	strategy_underlying(s.total_shares, s.shares_to_underlying, s.decimals)::text AS tvl,
	strategy_eth(s.total_shares, s.shares_to_underlying, s.decimals, s.eth_price)::text AS tvl_eth`

// ListStrategies returns every strategy, ordered by symbol. A network has a
// few dozen strategies at most.
func (db *DB) ListStrategies(ctx context.Context) ([]StrategyState, error) {
	var out []StrategyState
	if err := db.selectContext(ctx, &out, `
		SELECT `+strategyStateColumns+`
		FROM strategies s
		ORDER BY s.symbol, s.address`); err != nil {
		return nil, fmt.Errorf("list strategies: %w", Classify(err))
	}
	return out, nil
}

// StrategiesByAddresses returns the strategies with the given addresses, in
// no particular order; unknown addresses are left out.
func (db *DB) StrategiesByAddresses(ctx context.Context, addresses []string) ([]StrategyState, error) {
	var out []StrategyState
	if err := db.selectPrepared(ctx, &out, `
		SELECT `+strategyStateColumns+`
		FROM strategies s
		WHERE s.address = ANY($1)`, pq.Array(addresses)); err != nil {
		return nil, fmt.Errorf("strategies by address: %w", Classify(err))
	}
	return out, nil
}

// StrategyShares is an amount of shares that an owner (an AVS, operator,
// staker, withdrawal or operator set) holds in one strategy, with its
// current value. Symbol, Kind and UnderlyingToken are empty (nil) when the
// strategy is unknown, in which case the values are zero. DepositShares and
// WithdrawableShares are set for a staker's positions only (see
// StakerSharesByStakers).
type StrategyShares struct {
	Owner              string  `db:"owner"`
	StrategyAddress    string  `db:"strategy_address"`
	Shares             string  `db:"shares"`
	DepositShares      *string `db:"deposit_shares"`
	WithdrawableShares *string `db:"withdrawable_shares"`
	Symbol             string  `db:"symbol"`
	Kind               string  `db:"kind"`
	UnderlyingToken    *string `db:"underlying_token"`
	UnderlyingValue    string  `db:"underlying_value"`
	ETHValue           string  `db:"eth_value"`
}

// sharesValueColumns selects the strategy fields and value columns of a
// StrategyShares from a shares expression and strategies s (left-joined).
func sharesValueColumns(shares string) string {
	return `
		COALESCE(s.symbol, '') AS symbol, COALESCE(s.kind::text, '') AS kind, s.underlying_token,
		COALESCE(strategy_underlying(` + shares + `, s.shares_to_underlying, s.decimals), 0)::text AS underlying_value,
		COALESCE(strategy_eth(` + shares + `, s.shares_to_underlying, s.decimals, s.eth_price), 0)::text AS eth_value`
}

// AVSSharesByAVS returns the shares held in each of the given AVS (the
// shares of its active operators in its restakeable strategies), ordered by
// AVS and strategy.
func (db *DB) AVSSharesByAVS(ctx context.Context, avs []string) ([]StrategyShares, error) {
	out, err := db.selectShares(ctx, nil, withoutPositions, `
		SELECT x.avs_address AS owner, x.strategy_address, x.shares::text AS shares,`+sharesValueColumns("x.shares")+`
		FROM avs_shares x
		LEFT JOIN strategies s ON s.address = x.strategy_address
		WHERE x.avs_address = ANY($1)
		ORDER BY x.avs_address, x.strategy_address`, pq.Array(avs))
	if err != nil {
		return nil, fmt.Errorf("avs shares: %w", Classify(err))
	}
	return out, nil
}

// OperatorSharesByOperators returns the shares delegated to each of the
// given operators, ordered by operator and strategy.
func (db *DB) OperatorSharesByOperators(ctx context.Context, operators []string) ([]StrategyShares, error) {
	out, err := db.selectShares(ctx, make([]StrategyShares, 0, rowsFor(4*len(operators))), withoutPositions, `
		SELECT x.operator_address AS owner, x.strategy_address, x.shares::text AS shares,`+sharesValueColumns("x.shares")+`
		FROM operator_shares x
		LEFT JOIN strategies s ON s.address = x.strategy_address
		WHERE x.operator_address = ANY($1)
		ORDER BY x.operator_address, x.strategy_address`, pq.Array(operators))
	if err != nil {
		return nil, fmt.Errorf("operator shares: %w", Classify(err))
	}
	return out, nil
}

// StakerSharesByStakers returns the positions of each of the given
// stakers, ordered by staker and strategy, from the view staker_positions.
// Shares, and the values, are the withdrawable shares: what the staker owns
// after slashing (deposit shares × deposit scaling factor × slashing
// factor, each product rounded down), which equal the deposit shares for a
// position never slashed. DepositShares are the shares the staker's
// deposits, pod share changes and withdrawals leave it, as the
// StrategyManager and EigenPodManager count them. Strategies in which a
// staker has no deposit shares are left out.
func (db *DB) StakerSharesByStakers(ctx context.Context, stakers []string) ([]StrategyShares, error) {
	out, err := db.selectShares(ctx, make([]StrategyShares, 0, rowsFor(2*len(stakers))), positionsWithValues, `
		SELECT x.staker_address AS owner, x.strategy_address, x.withdrawable_shares::text AS shares,
		       x.deposit_shares::text AS deposit_shares,`+sharesValueColumns("x.withdrawable_shares")+`
		FROM (
			-- OFFSET 0 keeps the positions a subquery of their own, so
			-- that each one's withdrawable shares, an expression of the
			-- view, is computed once rather than for each of the
			-- columns that use it.
			SELECT x.staker_address, x.strategy_address, x.deposit_shares, x.withdrawable_shares
			FROM staker_positions x
			WHERE x.staker_address = ANY($1) AND x.deposit_shares <> 0
			OFFSET 0
		) x
		LEFT JOIN strategies s ON s.address = x.strategy_address
		ORDER BY x.staker_address, x.strategy_address`, pq.Array(stakers))
	if err != nil {
		return nil, fmt.Errorf("staker shares: %w", Classify(err))
	}
	return out, nil
}

// StakerPositionsByStakers returns the positions of each of the given
// stakers as StakerSharesByStakers does, without what comes from their
// strategies: no symbol, kind, underlying token or values, which a page
// showing only the amounts does not need. Fifty stakers' positions on the
// bench data took 0.4 ms in EXPLAIN ANALYZE this way and 1.6-2.0 ms with
// the values (under load, 1.8 and 2.1 ms on average).
func (db *DB) StakerPositionsByStakers(ctx context.Context, stakers []string) ([]StrategyShares, error) {
	out, err := db.selectShares(ctx, make([]StrategyShares, 0, rowsFor(2*len(stakers))), positionsOnly, `
		SELECT x.staker_address AS owner, x.strategy_address, x.withdrawable_shares::text AS shares,
		       x.deposit_shares::text AS deposit_shares
		FROM staker_positions x
		WHERE x.staker_address = ANY($1) AND x.deposit_shares <> 0
		ORDER BY x.staker_address, x.strategy_address`, pq.Array(stakers))
	if err != nil {
		return nil, fmt.Errorf("staker positions: %w", Classify(err))
	}
	return out, nil
}

// WithdrawalSharesByRoots returns the shares of each of the given
// withdrawals, ordered by withdrawal root and then in the withdrawal's own
// strategy order.
func (db *DB) WithdrawalSharesByRoots(ctx context.Context, roots []string) ([]StrategyShares, error) {
	out, err := db.selectShares(ctx, make([]StrategyShares, 0, rowsFor(2*len(roots))), withoutPositions, `
		SELECT w.withdrawal_root AS owner, u.strategy_address, u.shares::text AS shares,`+sharesValueColumns("u.shares")+`
		FROM withdrawals w
		CROSS JOIN LATERAL unnest(w.strategies, w.shares) WITH ORDINALITY AS u(strategy_address, shares, position)
		LEFT JOIN strategies s ON s.address = u.strategy_address
		WHERE w.withdrawal_root = ANY($1)
		ORDER BY w.withdrawal_root, u.position`, pq.Array(roots))
	if err != nil {
		return nil, fmt.Errorf("withdrawal shares: %w", Classify(err))
	}
	return out, nil
}

// RewardTokensByStrategies returns, for each of the given strategies that
// has been rewarded, the distinct tokens it was rewarded in (from the
// trigger-maintained pairs of migration 00008).
func (db *DB) RewardTokensByStrategies(ctx context.Context, strategies []string) ([]StrategyRewardTokens, error) {
	var out []StrategyRewardTokens
	if err := db.selectPrepared(ctx, &out, `
		SELECT strategy_address, array_agg(token_address ORDER BY token_address) AS tokens
		FROM reward_strategy_tokens
		WHERE strategy_address = ANY($1)
		GROUP BY strategy_address`, pq.Array(strategies)); err != nil {
		return nil, fmt.Errorf("reward tokens by strategy: %w", Classify(err))
	}
	return out, nil
}

// StrategyRewardTokens is a strategy with the tokens it was rewarded in.
type StrategyRewardTokens struct {
	StrategyAddress string         `db:"strategy_address"`
	Tokens          pq.StringArray `db:"tokens"`
}

// ListRewardStrategies returns every rewarded strategy with the tokens it
// was rewarded in, ordered by strategy address (from the trigger-maintained
// pairs of migration 00008).
func (db *DB) ListRewardStrategies(ctx context.Context) ([]StrategyRewardTokens, error) {
	var out []StrategyRewardTokens
	if err := db.selectContext(ctx, &out, `
		SELECT strategy_address, array_agg(token_address ORDER BY token_address) AS tokens
		FROM reward_strategy_tokens
		GROUP BY strategy_address
		ORDER BY strategy_address`); err != nil {
		return nil, fmt.Errorf("list reward strategies: %w", Classify(err))
	}
	return out, nil
}

// shareColumns says which columns a statement read by selectShares
// selects after owner, strategy_address and shares.
type shareColumns int

const (
	// withoutPositions: sharesValueColumns.
	withoutPositions shareColumns = iota
	// positionsWithValues: a staker's deposit_shares, then
	// sharesValueColumns (see StakerSharesByStakers).
	positionsWithValues
	// positionsOnly: a staker's deposit_shares (see
	// StakerPositionsByStakers).
	positionsOnly
)

// selectShares runs the kept statement of query, which selects owner,
// strategy_address and shares, then the columns that columns says, in
// that order, and reads its rows into StrategyShares. A staker position's withdrawable shares are
// its shares, selected once. Share batches are the most rows a page of
// operators or stakers reads, and sqlx's reflection over their ten
// columns (a new value, a field walk and a reflected append per row, and
// a reflected path for each nullable column) was a tenth of the server's
// time on a page of a hundred stakers; the rows are scanned into place
// here instead, within ctx's connection limit as selectPrepared does.
func (db *DB) selectShares(ctx context.Context, out []StrategyShares, columns shareColumns, query string, args ...any) ([]StrategyShares, error) {
	stmt, release, err := db.heldStatement(ctx, query)
	if err != nil {
		return nil, err
	}
	defer release()
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	positions, values := columns != withoutPositions, columns != positionsOnly
	var deposit, token sql.NullString
	dest := make([]any, 0, 9)
	for rows.Next() {
		out = append(out, StrategyShares{})
		s := &out[len(out)-1]
		dest = append(dest[:0], &s.Owner, &s.StrategyAddress, &s.Shares)
		if positions {
			dest = append(dest, &deposit)
		}
		if values {
			dest = append(dest, &s.Symbol, &s.Kind, &token, &s.UnderlyingValue, &s.ETHValue)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if positions {
			withdrawable := s.Shares
			s.WithdrawableShares = &withdrawable
			if deposit.Valid {
				shares := deposit.String
				s.DepositShares = &shares
			}
		}
		if token.Valid {
			address := token.String
			s.UnderlyingToken = &address
		}
	}
	return out, rows.Err()
}
