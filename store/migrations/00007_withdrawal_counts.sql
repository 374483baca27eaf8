-- +goose Up
-- Exact counts of withdrawals, overall, per operator delegated to and per
-- strategy, each split by completion. Statement-level triggers keep them up
-- to date in the transaction that changes withdrawals (apply, completion,
-- rollback), so the withdrawal list's meta.total reads a row or two instead
-- of counting hundreds of thousands (CountWithdrawals).
CREATE TABLE withdrawal_counts (
    kind      TEXT NOT NULL CHECK (kind IN ('all', 'operator', 'strategy')),
    key       TEXT NOT NULL, -- '' for 'all', else the operator or strategy address
    completed BOOLEAN NOT NULL,
    n         BIGINT NOT NULL,
    PRIMARY KEY (kind, key, completed)
);

INSERT INTO withdrawal_counts (kind, key, completed, n)
SELECT 'all', '', is_completed, count(*) FROM withdrawals GROUP BY is_completed
UNION ALL
SELECT 'operator', delegated_to, is_completed, count(*) FROM withdrawals GROUP BY delegated_to, is_completed
UNION ALL
SELECT 'strategy', s.strategy, w.is_completed, count(*)
FROM withdrawals w CROSS JOIN LATERAL (SELECT DISTINCT unnest(w.strategies) AS strategy) s
GROUP BY s.strategy, w.is_completed;

-- withdrawal_counts_track adds the rows a statement inserted (new_rows) and
-- subtracts those it deleted (old_rows); an update does both. The table
-- holds a few rows per operator and strategy, so dropping the zero counts
-- costs little.
-- +goose StatementBegin
CREATE FUNCTION withdrawal_counts_track() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changed TEXT := CASE TG_OP
        WHEN 'INSERT' THEN 'SELECT is_completed, delegated_to, strategies, 1 AS sign FROM new_rows'
        WHEN 'DELETE' THEN 'SELECT is_completed, delegated_to, strategies, -1 AS sign FROM old_rows'
        ELSE 'SELECT is_completed, delegated_to, strategies, -1 AS sign FROM old_rows
              UNION ALL SELECT is_completed, delegated_to, strategies, 1 FROM new_rows'
    END;
BEGIN
    EXECUTE format($sql$
        INSERT INTO withdrawal_counts AS c (kind, key, completed, n)
        SELECT d.kind, d.key, d.completed, sum(d.sign)
        FROM (
            SELECT 'all' AS kind, '' AS key, ch.is_completed AS completed, ch.sign FROM (%1$s) ch
            UNION ALL
            SELECT 'operator', ch.delegated_to, ch.is_completed, ch.sign FROM (%1$s) ch
            UNION ALL
            SELECT 'strategy', s.strategy, ch.is_completed, ch.sign
            FROM (%1$s) ch CROSS JOIN LATERAL (SELECT DISTINCT unnest(ch.strategies) AS strategy) s
        ) d
        GROUP BY d.kind, d.key, d.completed
        HAVING sum(d.sign) <> 0
        ON CONFLICT (kind, key, completed) DO UPDATE SET n = c.n + EXCLUDED.n
    $sql$, changed);
    -- A count back at zero leaves no row, as if its rows had never been.
    DELETE FROM withdrawal_counts WHERE n = 0;
    RETURN NULL;
END $$;

CREATE FUNCTION withdrawal_counts_clear() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM withdrawal_counts;
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER withdrawal_counts_insert AFTER INSERT ON withdrawals
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION withdrawal_counts_track();
CREATE TRIGGER withdrawal_counts_update AFTER UPDATE ON withdrawals
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION withdrawal_counts_track();
CREATE TRIGGER withdrawal_counts_delete AFTER DELETE ON withdrawals
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION withdrawal_counts_track();
CREATE TRIGGER withdrawal_counts_truncate AFTER TRUNCATE ON withdrawals
    FOR EACH STATEMENT EXECUTE FUNCTION withdrawal_counts_clear();

-- +goose Down
DROP TRIGGER withdrawal_counts_truncate ON withdrawals;
DROP TRIGGER withdrawal_counts_delete ON withdrawals;
DROP TRIGGER withdrawal_counts_update ON withdrawals;
DROP TRIGGER withdrawal_counts_insert ON withdrawals;
DROP FUNCTION withdrawal_counts_clear();
DROP FUNCTION withdrawal_counts_track();
DROP TABLE withdrawal_counts;
