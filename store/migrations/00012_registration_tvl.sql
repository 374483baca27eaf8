-- +goose Up
-- The ETH value of each registration's restaked strategies, kept by
-- Tx.Refresh, so that an AVS's operator list sorted by TVL reads an index
-- instead of valuing every registration of the AVS twice per request
-- (ORDER BY and row_number()). It is the operator's shares in the
-- registration's restaked strategies, EIGEN excluded, valued by
-- strategy_eth: the TVL every response shows for the operator in that AVS.
ALTER TABLE avs_operators ADD COLUMN tvl_eth NUMERIC NOT NULL DEFAULT 0;

UPDATE avs_operators ao
SET tvl_eth = v.eth
FROM (
    SELECT ao.avs_address, ao.operator_address,
           COALESCE(sum(strategy_eth(os.shares, s.shares_to_underlying, s.decimals, s.eth_price)), 0) AS eth
    FROM avs_operators ao
    JOIN operator_shares os
      ON os.operator_address = ao.operator_address
     AND os.strategy_address = ANY (ao.restaked_strategies)
    JOIN strategies s ON s.address = os.strategy_address AND s.kind <> 'eigen'
    GROUP BY ao.avs_address, ao.operator_address
) v
WHERE ao.avs_address = v.avs_address AND ao.operator_address = v.operator_address;

CREATE INDEX avs_operators_tvl_idx ON avs_operators (avs_address, tvl_eth, operator_address);

ANALYZE avs_operators;

-- +goose Down
DROP INDEX avs_operators_tvl_idx;
ALTER TABLE avs_operators DROP COLUMN tvl_eth;
