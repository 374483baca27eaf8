-- +goose Up
-- Where a staker's current delegation was decided: the position of its latest
-- DELEGATION or UNDELEGATION event. Applying a batch compares positions with
-- it instead of reading the staker's delegation history back.
ALTER TABLE stakers ADD COLUMN delegation_block BIGINT, ADD COLUMN delegation_log_index INTEGER;

UPDATE stakers s
SET delegation_block = l.block_number, delegation_log_index = l.log_index
FROM (
    SELECT DISTINCT ON (staker_address) staker_address, block_number, log_index
    FROM delegation_events
    WHERE type IN ('DELEGATION', 'UNDELEGATION')
    ORDER BY staker_address, block_number DESC, log_index DESC
) l
WHERE s.address = l.staker_address;

-- +goose Down
ALTER TABLE stakers DROP COLUMN delegation_block, DROP COLUMN delegation_log_index;
