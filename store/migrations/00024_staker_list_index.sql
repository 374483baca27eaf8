-- +goose Up
-- GET /stakers?updatedSince= pages through the stakers updated since a
-- time in address order (store.ListStakers). With the update time beside
-- the address in one index, the page's keys come from an index-only scan
-- that skips the other stakers without reading the table; before, a deep
-- page read every skipped staker's row.
CREATE INDEX stakers_address_updated_idx ON stakers (address) INCLUDE (updated_at);

-- +goose Down
DROP INDEX stakers_address_updated_idx;
