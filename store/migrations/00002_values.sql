-- +goose Up
-- The value of shares, in one place: every query that turns shares into
-- tokens or ETH calls these, so refresh and reads cannot disagree.

-- strategy_underlying converts shares to whole underlying tokens:
-- shares × sharesToUnderlying(1e18) / 1e18 / 10^decimals.
CREATE FUNCTION strategy_underlying(shares NUMERIC, rate NUMERIC, decimals INTEGER)
RETURNS NUMERIC LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT shares * rate / 1000000000000000000::numeric / power(10::numeric, decimals) $$;

-- strategy_eth converts shares to ETH: underlying × the token's ETH price.
CREATE FUNCTION strategy_eth(shares NUMERIC, rate NUMERIC, decimals INTEGER, eth_price NUMERIC)
RETURNS NUMERIC LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT shares * rate / 1000000000000000000::numeric / power(10::numeric, decimals) * eth_price $$;

-- token_eth converts a raw token amount (wei-like units) to ETH.
CREATE FUNCTION token_eth(amount NUMERIC, decimals INTEGER, eth_price NUMERIC)
RETURNS NUMERIC LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS $$ SELECT amount / power(10::numeric, decimals) * eth_price $$;

-- The earliest block time touched by events applied since the last refresh;
-- refresh recomputes the daily snapshots from that day on.
ALTER TABLE service_state ADD COLUMN dirty_since TIMESTAMPTZ;

-- +goose Down
ALTER TABLE service_state DROP COLUMN dirty_since;
DROP FUNCTION token_eth(NUMERIC, INTEGER, NUMERIC);
DROP FUNCTION strategy_eth(NUMERIC, NUMERIC, INTEGER, NUMERIC);
DROP FUNCTION strategy_underlying(NUMERIC, NUMERIC, INTEGER);
