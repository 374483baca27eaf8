-- +goose Up
-- An operator's delegation feed filtered by type (GET
-- /operators/{address}/events/delegation?type=) walked the operator's
-- events in time order and read each one's row to check its type: 0.2-1.5
-- s under load for a busy operator's month on the bench data. With the
-- type in the operator index, the walk filters on the index alone, in an
-- index-only scan. It replaces the operator index, whose every use it
-- serves; a separate (operator, type, time) index would serve the filtered
-- pages better but cost another index on the largest table.
CREATE INDEX delegation_events_operator_feed_idx
    ON delegation_events (operator_address, block_time DESC, block_number DESC, log_index DESC) INCLUDE (type);
DROP INDEX delegation_events_operator_time_idx;

-- +goose Down
CREATE INDEX delegation_events_operator_time_idx
    ON delegation_events (operator_address, block_time DESC, block_number DESC, log_index DESC);
DROP INDEX delegation_events_operator_feed_idx;
