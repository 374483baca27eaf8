-- +goose Up
-- The stakers updated since a time, by address (GET /stakers with
-- updatedSince): where few stakers were updated since then, the planner
-- reads them from the update-time index and sorts them by address rather
-- than walking the address index past the others. It read their rows from
-- the table to find their addresses (a bitmap heap scan: 99 ms for the
-- 16,400 stakers of the bench data's last day when not cached); with the
-- address in the index it reads the index alone (2-3 ms, 12 ms with the
-- sort), and a deep page that walked the address index (skip 10,000 of
-- that day's stakers: 178,000 index entries, 66 ms) is sorted this way
-- too. It replaces the update-time index, whose every use (the counts of
-- stakers updated in part of a day) it serves.
CREATE INDEX stakers_updated_address_idx ON stakers (updated_at) INCLUDE (address);
DROP INDEX stakers_updated_at_idx;

-- +goose Down
CREATE INDEX stakers_updated_at_idx ON stakers (updated_at);
DROP INDEX stakers_updated_address_idx;
