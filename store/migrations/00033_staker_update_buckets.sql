-- +goose Up
-- Stakers by the day of their last update and the bucket of their
-- address (its first hex digit: 16 buckets), in the feed
-- 'staker_updated' of event_day_counts with the bucket ('0x0' to '0xf')
-- as subject, beside the whole feed's counts (subject ''). A deep
-- page of GET /stakers?updatedSince= walked the address index past every
-- staker before it, updated or not: 217,000 index entries (49 ms) for
-- skip 61,470 of the stakers of the bench data's last week. With these
-- counts it finds the bucket holding its first staker by summing a row
-- per bucket and whole day, counts the partial first day's stakers from
-- the update-time index, and walks only within that bucket
-- (store.ListStakers). Sixteen buckets keep the sum to a few hundred
-- rows for a month, which the table's scattered rows make the dearer
-- part: 256 buckets took 7-9 ms to sum a month. The same statement
-- triggers keep the counts exact.
DROP TRIGGER event_day_counts_insert ON stakers;
DROP TRIGGER event_day_counts_update ON stakers;
DROP TRIGGER event_day_counts_delete ON stakers;
CREATE TRIGGER event_day_counts_insert AFTER INSERT ON stakers
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('staker_updated', 'updated_at', 'left(address, 3)', 'TRUE');
CREATE TRIGGER event_day_counts_update AFTER UPDATE ON stakers
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('staker_updated', 'updated_at', 'left(address, 3)', 'TRUE');
CREATE TRIGGER event_day_counts_delete AFTER DELETE ON stakers
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('staker_updated', 'updated_at', 'left(address, 3)', 'TRUE');

INSERT INTO event_day_counts (feed, subject, day, n)
SELECT 'staker_updated', left(address, 3), (updated_at AT TIME ZONE 'UTC')::date, count(*)
FROM stakers
GROUP BY 2, 3;

ANALYZE event_day_counts;

-- +goose Down
DELETE FROM event_day_counts WHERE feed = 'staker_updated' AND subject <> '';
DROP TRIGGER event_day_counts_insert ON stakers;
DROP TRIGGER event_day_counts_update ON stakers;
DROP TRIGGER event_day_counts_delete ON stakers;
CREATE TRIGGER event_day_counts_insert AFTER INSERT ON stakers
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('staker_updated', 'updated_at', 'NULL::text', 'TRUE');
CREATE TRIGGER event_day_counts_update AFTER UPDATE ON stakers
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('staker_updated', 'updated_at', 'NULL::text', 'TRUE');
CREATE TRIGGER event_day_counts_delete AFTER DELETE ON stakers
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('staker_updated', 'updated_at', 'NULL::text', 'TRUE');
