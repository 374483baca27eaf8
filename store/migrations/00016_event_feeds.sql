-- +goose Up
-- The event feeds (store.ListDelegationEvents, ListDepositEvents,
-- ListWithdrawalEvents, ListRewardsEvents, ListRegistrationEvents) list
-- events newest first within a date range, globally or for one subject.
-- Each order is backed by an index that reads the range backwards and stops
-- at the page's end, instead of sorting every event of the range.
CREATE INDEX delegation_events_feed_idx ON delegation_events (block_time DESC, block_number DESC, log_index DESC);
DROP INDEX delegation_events_time_idx;
CREATE INDEX deposits_feed_idx ON deposits (block_time DESC, block_number DESC, log_index DESC);
DROP INDEX deposits_time_idx;
CREATE INDEX deposits_staker_feed_idx ON deposits (staker_address, block_time DESC, block_number DESC, log_index DESC);
DROP INDEX deposits_staker_idx;
CREATE INDEX deposits_tx_idx ON deposits (tx_hash);
CREATE INDEX withdrawals_queued_feed_idx ON withdrawals (created_at DESC, block_number DESC, log_index DESC);
DROP INDEX withdrawals_created_at_idx;
CREATE INDEX withdrawals_completed_feed_idx ON withdrawals (completed_at DESC, completed_block DESC, completed_log_index DESC) WHERE is_completed;
DROP INDEX withdrawals_completed_at_idx;
CREATE INDEX withdrawals_tx_idx ON withdrawals (tx_hash);
CREATE INDEX withdrawals_completed_tx_idx ON withdrawals (completed_tx_hash) WHERE is_completed;
CREATE INDEX rewards_submissions_feed_idx ON rewards_submissions (block_time DESC, block_number DESC, log_index DESC);
DROP INDEX rewards_submissions_time_idx;
CREATE INDEX rewards_submissions_tx_idx ON rewards_submissions (tx_hash);
CREATE INDEX registration_events_feed_idx ON registration_events (block_time DESC, block_number DESC, log_index DESC);
CREATE INDEX registration_events_avs_feed_idx ON registration_events (avs_address, block_time DESC, block_number DESC, log_index DESC);
CREATE INDEX registration_events_operator_feed_idx ON registration_events (operator_address, block_time DESC, block_number DESC, log_index DESC);
DROP INDEX registration_events_operator_idx;
CREATE INDEX registration_events_tx_idx ON registration_events (tx_hash);

-- +goose Down
CREATE INDEX registration_events_operator_idx ON registration_events (operator_address);
DROP INDEX registration_events_tx_idx;
DROP INDEX registration_events_operator_feed_idx;
DROP INDEX registration_events_avs_feed_idx;
DROP INDEX registration_events_feed_idx;
CREATE INDEX rewards_submissions_time_idx ON rewards_submissions (block_time);
DROP INDEX rewards_submissions_tx_idx;
DROP INDEX rewards_submissions_feed_idx;
CREATE INDEX withdrawals_completed_at_idx ON withdrawals (completed_at) WHERE is_completed;
CREATE INDEX withdrawals_created_at_idx ON withdrawals (created_at);
DROP INDEX withdrawals_completed_tx_idx;
DROP INDEX withdrawals_tx_idx;
DROP INDEX withdrawals_completed_feed_idx;
DROP INDEX withdrawals_queued_feed_idx;
CREATE INDEX deposits_staker_idx ON deposits (staker_address, block_time DESC);
CREATE INDEX deposits_time_idx ON deposits (block_time);
DROP INDEX deposits_tx_idx;
DROP INDEX deposits_staker_feed_idx;
DROP INDEX deposits_feed_idx;
CREATE INDEX delegation_events_time_idx ON delegation_events (block_time);
DROP INDEX delegation_events_feed_idx;
