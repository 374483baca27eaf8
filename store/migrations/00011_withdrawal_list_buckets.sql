-- +goose Up
-- Deep pages of the withdrawal list without walking skip index entries.
--
-- Completed withdrawals counted by creation block bucket (withdrawal_block_bucket,
-- 7200 blocks), overall, per operator delegated to and per strategy: the
-- counterpart of withdrawal_pending_buckets (migration 00009), which counts
-- the pending ones. Together they give, for every status, how many of a
-- list's rows each bucket holds, so a deep page finds the bucket where its
-- skip lands by summing a few hundred bucket counts, and reads from that
-- bucket's first key with an offset of at most one bucket's rows
-- (ListWithdrawals), instead of walking skip index entries. Statement-level
-- triggers keep the table equal to what it derives from withdrawals in the
-- transaction that changes them (apply, completion, rollback). Nothing else
-- reads or writes it, so a binary older than this migration keeps working
-- on a migrated database.
CREATE TABLE withdrawal_completed_buckets (
    kind   TEXT NOT NULL CHECK (kind IN ('all', 'operator', 'strategy')),
    key    TEXT NOT NULL, -- '' for 'all', else the operator or strategy address
    bucket BIGINT NOT NULL,
    n      BIGINT NOT NULL,
    PRIMARY KEY (kind, key, bucket)
);

INSERT INTO withdrawal_completed_buckets (kind, key, bucket, n)
SELECT 'all', '', withdrawal_block_bucket(created_at_block), count(*)
FROM withdrawals WHERE is_completed GROUP BY 3
UNION ALL
SELECT 'operator', delegated_to, withdrawal_block_bucket(created_at_block), count(*)
FROM withdrawals WHERE is_completed GROUP BY 2, 3
UNION ALL
SELECT 'strategy', strategy_address, withdrawal_block_bucket(created_at_block), count(*)
FROM withdrawal_strategies WHERE is_completed GROUP BY 2, 3;

ANALYZE withdrawal_completed_buckets;

-- +goose StatementBegin
CREATE FUNCTION withdrawal_completed_buckets_track() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changed TEXT := CASE TG_OP
        WHEN 'INSERT' THEN 'SELECT delegated_to, strategies, created_at_block, 1 AS sign
                            FROM new_rows WHERE is_completed'
        WHEN 'DELETE' THEN 'SELECT delegated_to, strategies, created_at_block, -1 AS sign
                            FROM old_rows WHERE is_completed'
        ELSE 'SELECT delegated_to, strategies, created_at_block, -1 AS sign FROM old_rows WHERE is_completed
              UNION ALL
              SELECT delegated_to, strategies, created_at_block, 1 FROM new_rows WHERE is_completed'
    END;
BEGIN
    EXECUTE format($sql$
        INSERT INTO withdrawal_completed_buckets AS c (kind, key, bucket, n)
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
    -- A count back at zero leaves no row, as if its rows had never been.
    DELETE FROM withdrawal_completed_buckets WHERE n = 0;
    RETURN NULL;
END $$;

CREATE FUNCTION withdrawal_completed_buckets_clear() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM withdrawal_completed_buckets;
    RETURN NULL;
END $$;
-- +goose StatementEnd

-- Finds the counts back at zero without reading the table.
CREATE INDEX withdrawal_completed_buckets_zero_idx ON withdrawal_completed_buckets (bucket) WHERE n = 0;

CREATE TRIGGER withdrawal_completed_buckets_insert AFTER INSERT ON withdrawals
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION withdrawal_completed_buckets_track();
CREATE TRIGGER withdrawal_completed_buckets_update AFTER UPDATE ON withdrawals
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION withdrawal_completed_buckets_track();
CREATE TRIGGER withdrawal_completed_buckets_delete AFTER DELETE ON withdrawals
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION withdrawal_completed_buckets_track();
CREATE TRIGGER withdrawal_completed_buckets_truncate AFTER TRUNCATE ON withdrawals
    FOR EACH STATEMENT EXECUTE FUNCTION withdrawal_completed_buckets_clear();

-- An operator's withdrawals of one status in the list's order: a page with a
-- status filter reads its keys from this index alone (an index-only scan)
-- instead of walking the operator's withdrawals of every status or the
-- whole list's status index.
CREATE INDEX withdrawals_delegated_to_status_idx
    ON withdrawals (delegated_to, is_completed, created_at_block DESC, withdrawal_root DESC);

-- +goose Down
DROP INDEX withdrawals_delegated_to_status_idx;
DROP TRIGGER withdrawal_completed_buckets_truncate ON withdrawals;
DROP TRIGGER withdrawal_completed_buckets_delete ON withdrawals;
DROP TRIGGER withdrawal_completed_buckets_update ON withdrawals;
DROP TRIGGER withdrawal_completed_buckets_insert ON withdrawals;
DROP FUNCTION withdrawal_completed_buckets_clear();
DROP FUNCTION withdrawal_completed_buckets_track();
DROP TABLE withdrawal_completed_buckets;
