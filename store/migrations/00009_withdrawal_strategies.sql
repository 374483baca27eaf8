-- +goose Up
-- Two side tables of withdrawals kept by triggers, for the withdrawal list
-- filtered by strategy and for queued_withdrawable counts.
--
-- One row per (withdrawal, strategy it withdraws from), with what the
-- withdrawal list filters and orders by. The GIN index on
-- withdrawals.strategies finds a strategy's withdrawals but cannot give them
-- newest first, so a strategy-filtered page walked the whole list's order
-- index and dropped the other strategies' rows; these b-tree indexes give a
-- strategy's withdrawals in the list's order, per status, in index-only
-- scans (ListWithdrawals), and count the pending ones still inside the
-- minimum delay (CountWithdrawals). Statement-level triggers keep the table
-- equal to what it derives from withdrawals in the transaction that changes
-- them (apply, completion, rollback), as for withdrawal_counts. Nothing
-- else reads or writes it, so a binary older than this migration keeps
-- working on a migrated database.
CREATE TABLE withdrawal_strategies (
    withdrawal_root  hash32 NOT NULL,
    strategy_address address NOT NULL,
    is_completed     BOOLEAN NOT NULL,
    created_at_block BIGINT NOT NULL,
    PRIMARY KEY (withdrawal_root, strategy_address)
);

INSERT INTO withdrawal_strategies (withdrawal_root, strategy_address, is_completed, created_at_block)
SELECT DISTINCT w.withdrawal_root, s.strategy, w.is_completed, w.created_at_block
FROM withdrawals w CROSS JOIN LATERAL unnest(w.strategies) AS s(strategy);

-- Every status: the list by strategy. Queued, withdrawable and completed:
-- the same with the status fixed (and, for withdrawable, a bound on the
-- creation block).
CREATE INDEX withdrawal_strategies_list_idx
    ON withdrawal_strategies (strategy_address, created_at_block DESC, withdrawal_root DESC);
CREATE INDEX withdrawal_strategies_status_idx
    ON withdrawal_strategies (strategy_address, is_completed, created_at_block DESC, withdrawal_root DESC);

ANALYZE withdrawal_strategies;

-- withdrawal_strategies_track deletes the rows of the withdrawals a
-- statement deleted or updated (old_rows) and inserts those of the ones it
-- inserted or updated (new_rows): exact whatever the update changed.
-- +goose StatementBegin
CREATE FUNCTION withdrawal_strategies_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        DELETE FROM withdrawal_strategies ws
        WHERE ws.withdrawal_root IN (SELECT withdrawal_root FROM old_rows);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO withdrawal_strategies (withdrawal_root, strategy_address, is_completed, created_at_block)
        SELECT DISTINCT n.withdrawal_root, s.strategy, n.is_completed, n.created_at_block
        FROM new_rows n CROSS JOIN LATERAL unnest(n.strategies) AS s(strategy);
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION withdrawal_strategies_clear() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM withdrawal_strategies;
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER withdrawal_strategies_insert AFTER INSERT ON withdrawals
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION withdrawal_strategies_track();
CREATE TRIGGER withdrawal_strategies_update AFTER UPDATE ON withdrawals
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION withdrawal_strategies_track();
CREATE TRIGGER withdrawal_strategies_delete AFTER DELETE ON withdrawals
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION withdrawal_strategies_track();
CREATE TRIGGER withdrawal_strategies_truncate AFTER TRUNCATE ON withdrawals
    FOR EACH STATEMENT EXECUTE FUNCTION withdrawal_strategies_clear();

-- Pending (not completed) withdrawals counted by creation block bucket of
-- 7200 blocks (a day of 12-second blocks), overall, per operator delegated
-- to and per strategy. A queued_withdrawable count is the pending total
-- (withdrawal_counts) minus the pending ones created after head − minimum
-- delay: the buckets after that block's bucket, summed from a dozen rows,
-- plus the rows of that one bucket (CountWithdrawals), instead of every
-- pending withdrawal of the last two weeks.
CREATE FUNCTION withdrawal_block_bucket(block BIGINT) RETURNS BIGINT
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT block / 7200';

CREATE TABLE withdrawal_pending_buckets (
    kind   TEXT NOT NULL CHECK (kind IN ('all', 'operator', 'strategy')),
    key    TEXT NOT NULL, -- '' for 'all', else the operator or strategy address
    bucket BIGINT NOT NULL,
    n      BIGINT NOT NULL,
    PRIMARY KEY (kind, key, bucket)
);

INSERT INTO withdrawal_pending_buckets (kind, key, bucket, n)
SELECT 'all', '', withdrawal_block_bucket(created_at_block), count(*)
FROM withdrawals WHERE NOT is_completed GROUP BY 3
UNION ALL
SELECT 'operator', delegated_to, withdrawal_block_bucket(created_at_block), count(*)
FROM withdrawals WHERE NOT is_completed GROUP BY 2, 3
UNION ALL
SELECT 'strategy', strategy_address, withdrawal_block_bucket(created_at_block), count(*)
FROM withdrawal_strategies WHERE NOT is_completed GROUP BY 2, 3;

-- A count back at zero leaves no row, as if its rows had never been; this
-- index finds those rows without reading the table.
CREATE INDEX withdrawal_pending_buckets_zero_idx ON withdrawal_pending_buckets (bucket) WHERE n = 0;

ANALYZE withdrawal_pending_buckets;

-- +goose StatementBegin
CREATE FUNCTION withdrawal_pending_buckets_track() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changed TEXT := CASE TG_OP
        WHEN 'INSERT' THEN 'SELECT delegated_to, strategies, created_at_block, 1 AS sign
                            FROM new_rows WHERE NOT is_completed'
        WHEN 'DELETE' THEN 'SELECT delegated_to, strategies, created_at_block, -1 AS sign
                            FROM old_rows WHERE NOT is_completed'
        ELSE 'SELECT delegated_to, strategies, created_at_block, -1 AS sign FROM old_rows WHERE NOT is_completed
              UNION ALL
              SELECT delegated_to, strategies, created_at_block, 1 FROM new_rows WHERE NOT is_completed'
    END;
BEGIN
    EXECUTE format($sql$
        INSERT INTO withdrawal_pending_buckets AS c (kind, key, bucket, n)
        SELECT d.kind, d.key, d.bucket, sum(d.sign)
        FROM (
            SELECT 'all' AS kind, '' AS key, withdrawal_block_bucket(ch.created_at_block) AS bucket, ch.sign
            FROM (%1$s) ch
            UNION ALL
            SELECT 'operator', ch.delegated_to, withdrawal_block_bucket(ch.created_at_block), ch.sign
            FROM (%1$s) ch
            UNION ALL
            SELECT 'strategy', s.strategy, withdrawal_block_bucket(ch.created_at_block), ch.sign
            FROM (%1$s) ch CROSS JOIN LATERAL (SELECT DISTINCT unnest(ch.strategies) AS strategy) s
        ) d
        GROUP BY d.kind, d.key, d.bucket
        HAVING sum(d.sign) <> 0
        ON CONFLICT (kind, key, bucket) DO UPDATE SET n = c.n + EXCLUDED.n
    $sql$, changed);
    DELETE FROM withdrawal_pending_buckets WHERE n = 0;
    RETURN NULL;
END $$;

CREATE FUNCTION withdrawal_pending_buckets_clear() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM withdrawal_pending_buckets;
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER withdrawal_pending_buckets_insert AFTER INSERT ON withdrawals
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION withdrawal_pending_buckets_track();
CREATE TRIGGER withdrawal_pending_buckets_update AFTER UPDATE ON withdrawals
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION withdrawal_pending_buckets_track();
CREATE TRIGGER withdrawal_pending_buckets_delete AFTER DELETE ON withdrawals
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION withdrawal_pending_buckets_track();
CREATE TRIGGER withdrawal_pending_buckets_truncate AFTER TRUNCATE ON withdrawals
    FOR EACH STATEMENT EXECUTE FUNCTION withdrawal_pending_buckets_clear();

-- +goose Down
DROP TRIGGER withdrawal_pending_buckets_truncate ON withdrawals;
DROP TRIGGER withdrawal_pending_buckets_delete ON withdrawals;
DROP TRIGGER withdrawal_pending_buckets_update ON withdrawals;
DROP TRIGGER withdrawal_pending_buckets_insert ON withdrawals;
DROP FUNCTION withdrawal_pending_buckets_clear();
DROP FUNCTION withdrawal_pending_buckets_track();
DROP TABLE withdrawal_pending_buckets;
DROP FUNCTION withdrawal_block_bucket(BIGINT);
DROP TRIGGER withdrawal_strategies_truncate ON withdrawals;
DROP TRIGGER withdrawal_strategies_delete ON withdrawals;
DROP TRIGGER withdrawal_strategies_update ON withdrawals;
DROP TRIGGER withdrawal_strategies_insert ON withdrawals;
DROP FUNCTION withdrawal_strategies_clear();
DROP FUNCTION withdrawal_strategies_track();
DROP TABLE withdrawal_strategies;
