-- +goose Up
-- Two more kinds of day counts in event_day_counts (migration 00023):
--
-- * Delegation events by type, alone and with the operator (subjects
--   'SHARES_INCREASED' and 'SHARES_INCREASED 0x...'), for the totals of
--   the delegation feeds filtered by type: a busy operator's month of
--   one type was counted row by row, with a table read per event.
-- * Stakers by the day of their last update (feed 'staker_updated'), for
--   the total of GET /stakers?updatedSince=, which counted up to every
--   staker's index entry.
--
-- The track function's subject argument may now be an array expression
-- (ARRAY[...]), each non-NULL element being a subject of the event; a
-- single expression still names one.
ALTER TABLE event_day_counts DROP CONSTRAINT event_day_counts_feed_check;
ALTER TABLE event_day_counts ADD CONSTRAINT event_day_counts_feed_check
    CHECK (feed IN ('deposit', 'delegation', 'withdrawal_queued', 'withdrawal_completed', 'staker_updated'));

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION event_day_counts_track() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    counted  TEXT := TG_ARGV[0];
    at       TEXT := TG_ARGV[1];
    subject  TEXT := TG_ARGV[2];
    keep     TEXT := TG_ARGV[3];
    old_part TEXT := format('SELECT %s AS at, ARRAY[%s]::text[] AS subjects, -1 AS sign FROM old_rows WHERE %s', at, subject, keep);
    new_part TEXT := format('SELECT %s AS at, ARRAY[%s]::text[] AS subjects, 1 AS sign FROM new_rows WHERE %s', at, subject, keep);
    changed  TEXT := CASE TG_OP
        WHEN 'INSERT' THEN new_part
        WHEN 'DELETE' THEN old_part
        ELSE old_part || ' UNION ALL ' || new_part
    END;
    subjects TEXT[];
    days     DATE[];
BEGIN
    EXECUTE format($sql$
        WITH changed AS (
            SELECT (ch.at AT TIME ZONE 'UTC')::date AS day, ch.subjects, ch.sign FROM (%s) ch
        ), d AS (
            SELECT '' AS subject, day, sign FROM changed
            UNION ALL
            SELECT s.subject, ch.day, ch.sign
            FROM changed ch CROSS JOIN LATERAL unnest(ch.subjects) AS s(subject)
            WHERE s.subject IS NOT NULL
        ), up AS (
            INSERT INTO event_day_counts AS c (feed, subject, day, n)
            SELECT %L, d.subject, d.day, sum(d.sign)
            FROM d
            GROUP BY d.subject, d.day
            HAVING sum(d.sign) <> 0
            ON CONFLICT (feed, subject, day) DO UPDATE SET n = c.n + EXCLUDED.n
            RETURNING c.subject, c.day, c.n
        )
        SELECT array_agg(subject), array_agg(day) FROM up WHERE n = 0
    $sql$, changed, counted) INTO subjects, days;
    -- A count back at zero leaves no row, as if its events had never been.
    IF subjects IS NOT NULL THEN
        DELETE FROM event_day_counts c
        USING unnest(subjects, days) AS z(subject, day)
        WHERE c.feed = counted AND c.subject = z.subject AND c.day = z.day AND c.n = 0;
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd

DROP TRIGGER event_day_counts_insert ON delegation_events;
DROP TRIGGER event_day_counts_update ON delegation_events;
DROP TRIGGER event_day_counts_delete ON delegation_events;
CREATE TRIGGER event_day_counts_insert AFTER INSERT ON delegation_events
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('delegation', 'block_time', 'ARRAY[operator_address::text, type::text, type::text || '' '' || operator_address]', 'TRUE');
CREATE TRIGGER event_day_counts_update AFTER UPDATE ON delegation_events
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('delegation', 'block_time', 'ARRAY[operator_address::text, type::text, type::text || '' '' || operator_address]', 'TRUE');
CREATE TRIGGER event_day_counts_delete AFTER DELETE ON delegation_events
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('delegation', 'block_time', 'ARRAY[operator_address::text, type::text, type::text || '' '' || operator_address]', 'TRUE');

INSERT INTO event_day_counts (feed, subject, day, n)
SELECT 'delegation', g.type || COALESCE(' ' || g.operator_address, ''), g.day, g.n
FROM (
    SELECT type::text AS type, operator_address, (block_time AT TIME ZONE 'UTC')::date AS day, count(*) AS n
    FROM delegation_events
    GROUP BY GROUPING SETS ((1, 3), (1, 2, 3))
) g
UNION ALL
SELECT 'staker_updated', '', (updated_at AT TIME ZONE 'UTC')::date, count(*)
FROM stakers
GROUP BY 3;

ANALYZE event_day_counts;

CREATE TRIGGER event_day_counts_insert AFTER INSERT ON stakers
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('staker_updated', 'updated_at', 'NULL::text', 'TRUE');
CREATE TRIGGER event_day_counts_update AFTER UPDATE ON stakers
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('staker_updated', 'updated_at', 'NULL::text', 'TRUE');
CREATE TRIGGER event_day_counts_delete AFTER DELETE ON stakers
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('staker_updated', 'updated_at', 'NULL::text', 'TRUE');
CREATE TRIGGER event_day_counts_truncate AFTER TRUNCATE ON stakers
    FOR EACH STATEMENT EXECUTE FUNCTION event_day_counts_clear('staker_updated');

-- +goose Down
DROP TRIGGER event_day_counts_truncate ON stakers;
DROP TRIGGER event_day_counts_delete ON stakers;
DROP TRIGGER event_day_counts_update ON stakers;
DROP TRIGGER event_day_counts_insert ON stakers;
DELETE FROM event_day_counts WHERE feed = 'staker_updated' OR (feed = 'delegation' AND subject NOT LIKE '0x%' AND subject <> '');

DROP TRIGGER event_day_counts_insert ON delegation_events;
DROP TRIGGER event_day_counts_update ON delegation_events;
DROP TRIGGER event_day_counts_delete ON delegation_events;
CREATE TRIGGER event_day_counts_insert AFTER INSERT ON delegation_events
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('delegation', 'block_time', 'operator_address', 'TRUE');
CREATE TRIGGER event_day_counts_update AFTER UPDATE ON delegation_events
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('delegation', 'block_time', 'operator_address', 'TRUE');
CREATE TRIGGER event_day_counts_delete AFTER DELETE ON delegation_events
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('delegation', 'block_time', 'operator_address', 'TRUE');

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION event_day_counts_track() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    counted  TEXT := TG_ARGV[0];
    at       TEXT := TG_ARGV[1];
    subject  TEXT := TG_ARGV[2];
    keep     TEXT := TG_ARGV[3];
    old_part TEXT := format('SELECT %s AS at, %s AS subject, -1 AS sign FROM old_rows WHERE %s', at, subject, keep);
    new_part TEXT := format('SELECT %s AS at, %s AS subject, 1 AS sign FROM new_rows WHERE %s', at, subject, keep);
    changed  TEXT := CASE TG_OP
        WHEN 'INSERT' THEN new_part
        WHEN 'DELETE' THEN old_part
        ELSE old_part || ' UNION ALL ' || new_part
    END;
    subjects TEXT[];
    days     DATE[];
BEGIN
    EXECUTE format($sql$
        WITH changed AS (
            SELECT (ch.at AT TIME ZONE 'UTC')::date AS day, ch.subject, ch.sign FROM (%s) ch
        ), d AS (
            SELECT '' AS subject, day, sign FROM changed
            UNION ALL
            SELECT subject, day, sign FROM changed WHERE subject IS NOT NULL
        ), up AS (
            INSERT INTO event_day_counts AS c (feed, subject, day, n)
            SELECT %L, d.subject, d.day, sum(d.sign)
            FROM d
            GROUP BY d.subject, d.day
            HAVING sum(d.sign) <> 0
            ON CONFLICT (feed, subject, day) DO UPDATE SET n = c.n + EXCLUDED.n
            RETURNING c.subject, c.day, c.n
        )
        SELECT array_agg(subject), array_agg(day) FROM up WHERE n = 0
    $sql$, changed, counted) INTO subjects, days;
    -- A count back at zero leaves no row, as if its events had never been.
    IF subjects IS NOT NULL THEN
        DELETE FROM event_day_counts c
        USING unnest(subjects, days) AS z(subject, day)
        WHERE c.feed = counted AND c.subject = z.subject AND c.day = z.day AND c.n = 0;
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd

ALTER TABLE event_day_counts DROP CONSTRAINT event_day_counts_feed_check;
ALTER TABLE event_day_counts ADD CONSTRAINT event_day_counts_feed_check
    CHECK (feed IN ('deposit', 'delegation', 'withdrawal_queued', 'withdrawal_completed'));
