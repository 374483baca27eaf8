-- +goose Up
-- GET /deposits?strategyAddress= pages through a strategy's deposits in
-- the feed's order (time, block, log index, newest first). The strategy
-- index held only the time, so every skipped deposit was read from the
-- table to order ties and to return its keys: 0.2-0.9 s under load for a
-- page at skip 1,000-5,000 of the bench data's largest strategies. With
-- the whole order in the index, the page's keys come from an index-only
-- scan. It replaces the strategy index, whose every use it serves.
CREATE INDEX deposits_strategy_feed_idx ON deposits (strategy_address, block_time DESC, block_number DESC, log_index DESC);
DROP INDEX deposits_strategy_idx;

-- +goose Down
CREATE INDEX deposits_strategy_idx ON deposits (strategy_address, block_time DESC);
DROP INDEX deposits_strategy_feed_idx;
