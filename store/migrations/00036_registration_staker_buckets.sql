-- +goose Up
-- The stakers each registration brings its AVS (those total_stakers
-- counts) by address bucket: 16 counts, one per first hex digit of the
-- staker's address after 0x, in address order, which sum to
-- total_stakers. The refresh derives both in one statement
-- (store.Tx.Refresh, "registration stakers"). A deep page of an AVS's
-- stakers finds the operator holding its first staker from the
-- registrations' totals, then the bucket within that operator from these
-- counts, and walks the staker index from the bucket's lowest address:
-- within the operator it had walked every staker before the page's first
-- (up to 34,644 on the bench data, 2.3 ms for a page at skip 5,000 of the
-- AVS with the most stakers).
ALTER TABLE avs_operators ADD COLUMN staker_buckets INTEGER[] NOT NULL DEFAULT '{}'
    CHECK (cardinality(staker_buckets) IN (0, 16));

-- The counts are derived by the refresh that DB.Migrate runs while the
-- data is marked as not refreshed; until then pages start at the
-- operator's first staker, as they do whenever the data is so marked.
UPDATE service_state
SET dirty_since = LEAST(COALESCE(dirty_since, 'infinity'), (SELECT max(day)::timestamptz FROM daily_snapshots))
WHERE id AND EXISTS (SELECT 1 FROM daily_snapshots);

-- +goose Down
ALTER TABLE avs_operators DROP COLUMN staker_buckets;
