-- +goose Up
-- Exact counts of the events of each global feed by UTC day, for the
-- feeds' meta.total. Counting a month of delegation events or all of a
-- strategy's deposits walked hundreds of thousands of index entries per
-- request; with these counts a total reads a row per whole day in the
-- range and counts only the partial days at its edges (store.dayCounted).
--
-- feed is what is counted: 'deposit' (deposits by block time),
-- 'delegation' (delegation events by block time), 'withdrawal_queued'
-- (withdrawals by queuing time) and 'withdrawal_completed' (completed
-- withdrawals by completion time). subject is '' for the whole feed, or
-- the deposit's strategy or the delegation event's operator. Statement
-- triggers keep the counts exact in the transaction that changes the
-- events (apply, completion, rollback, bulk load), as for
-- withdrawal_counts; a count back at zero leaves no row.
CREATE TABLE event_day_counts (
    feed    TEXT NOT NULL CHECK (feed IN ('deposit', 'delegation', 'withdrawal_queued', 'withdrawal_completed')),
    subject TEXT NOT NULL,
    day     DATE NOT NULL,
    -- No CHECK (n > 0): an insert's row is checked before ON CONFLICT
    -- turns it into an update, and the triggers insert negative changes.
    n       BIGINT NOT NULL,
    PRIMARY KEY (feed, subject, day)
);

-- event_day_counts_track adds the events a statement inserted (new_rows)
-- and subtracts those it deleted (old_rows); an update does both. Its
-- arguments say what an event is: the feed, the row's event time, its
-- subject (NULL for a feed counted only as a whole) and the condition a
-- row must meet to be an event of the feed.
-- +goose StatementBegin
CREATE FUNCTION event_day_counts_track() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE FUNCTION event_day_counts_clear() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM event_day_counts WHERE feed = ANY(TG_ARGV);
    RETURN NULL;
END $$;
-- +goose StatementEnd

INSERT INTO event_day_counts (feed, subject, day, n)
SELECT 'deposit', COALESCE(g.subject, ''), g.day, g.n
FROM (
    SELECT strategy_address AS subject, (block_time AT TIME ZONE 'UTC')::date AS day, count(*) AS n
    FROM deposits
    GROUP BY GROUPING SETS ((2), (1, 2))
) g
UNION ALL
SELECT 'delegation', COALESCE(g.subject, ''), g.day, g.n
FROM (
    SELECT operator_address AS subject, (block_time AT TIME ZONE 'UTC')::date AS day, count(*) AS n
    FROM delegation_events
    GROUP BY GROUPING SETS ((2), (1, 2))
) g
UNION ALL
SELECT 'withdrawal_queued', '', (created_at AT TIME ZONE 'UTC')::date, count(*)
FROM withdrawals
GROUP BY 3
UNION ALL
SELECT 'withdrawal_completed', '', (completed_at AT TIME ZONE 'UTC')::date, count(*)
FROM withdrawals
WHERE is_completed
GROUP BY 3;

ANALYZE event_day_counts;

CREATE TRIGGER event_day_counts_insert AFTER INSERT ON deposits
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('deposit', 'block_time', 'strategy_address', 'TRUE');
CREATE TRIGGER event_day_counts_update AFTER UPDATE ON deposits
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('deposit', 'block_time', 'strategy_address', 'TRUE');
CREATE TRIGGER event_day_counts_delete AFTER DELETE ON deposits
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('deposit', 'block_time', 'strategy_address', 'TRUE');
CREATE TRIGGER event_day_counts_truncate AFTER TRUNCATE ON deposits
    FOR EACH STATEMENT EXECUTE FUNCTION event_day_counts_clear('deposit');

CREATE TRIGGER event_day_counts_insert AFTER INSERT ON delegation_events
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('delegation', 'block_time', 'operator_address', 'TRUE');
CREATE TRIGGER event_day_counts_update AFTER UPDATE ON delegation_events
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('delegation', 'block_time', 'operator_address', 'TRUE');
CREATE TRIGGER event_day_counts_delete AFTER DELETE ON delegation_events
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('delegation', 'block_time', 'operator_address', 'TRUE');
CREATE TRIGGER event_day_counts_truncate AFTER TRUNCATE ON delegation_events
    FOR EACH STATEMENT EXECUTE FUNCTION event_day_counts_clear('delegation');

CREATE TRIGGER event_day_counts_queued_insert AFTER INSERT ON withdrawals
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('withdrawal_queued', 'created_at', 'NULL::text', 'TRUE');
CREATE TRIGGER event_day_counts_queued_update AFTER UPDATE ON withdrawals
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('withdrawal_queued', 'created_at', 'NULL::text', 'TRUE');
CREATE TRIGGER event_day_counts_queued_delete AFTER DELETE ON withdrawals
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('withdrawal_queued', 'created_at', 'NULL::text', 'TRUE');
CREATE TRIGGER event_day_counts_completed_insert AFTER INSERT ON withdrawals
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('withdrawal_completed', 'completed_at', 'NULL::text', 'is_completed');
CREATE TRIGGER event_day_counts_completed_update AFTER UPDATE ON withdrawals
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('withdrawal_completed', 'completed_at', 'NULL::text', 'is_completed');
CREATE TRIGGER event_day_counts_completed_delete AFTER DELETE ON withdrawals
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION event_day_counts_track('withdrawal_completed', 'completed_at', 'NULL::text', 'is_completed');
CREATE TRIGGER event_day_counts_truncate AFTER TRUNCATE ON withdrawals
    FOR EACH STATEMENT EXECUTE FUNCTION event_day_counts_clear('withdrawal_queued', 'withdrawal_completed');

-- +goose Down
DROP TRIGGER event_day_counts_truncate ON withdrawals;
DROP TRIGGER event_day_counts_completed_delete ON withdrawals;
DROP TRIGGER event_day_counts_completed_update ON withdrawals;
DROP TRIGGER event_day_counts_completed_insert ON withdrawals;
DROP TRIGGER event_day_counts_queued_delete ON withdrawals;
DROP TRIGGER event_day_counts_queued_update ON withdrawals;
DROP TRIGGER event_day_counts_queued_insert ON withdrawals;
DROP TRIGGER event_day_counts_truncate ON delegation_events;
DROP TRIGGER event_day_counts_delete ON delegation_events;
DROP TRIGGER event_day_counts_update ON delegation_events;
DROP TRIGGER event_day_counts_insert ON delegation_events;
DROP TRIGGER event_day_counts_truncate ON deposits;
DROP TRIGGER event_day_counts_delete ON deposits;
DROP TRIGGER event_day_counts_update ON deposits;
DROP TRIGGER event_day_counts_insert ON deposits;
DROP FUNCTION event_day_counts_clear();
DROP FUNCTION event_day_counts_track();
DROP TABLE event_day_counts;
