-- +goose Up
-- GET /deposits?tokenAddress= lists and counts the deposits of one token:
-- those naming it, and those naming none into a strategy whose underlying
-- token it is (store.DepositFilter). This index serves the first half; the
-- strategy index serves the second.
CREATE INDEX deposits_token_idx ON deposits (token_address, block_time DESC, block_number DESC, log_index DESC);

-- +goose Down
DROP INDEX deposits_token_idx;
