-- +goose Up
-- The number of stakers per address bucket: the first three hex digits of
-- the address (4,096 buckets). GET /stakers pages through all stakers in
-- address order with skips of up to hundreds of thousands; a deep page
-- walked that many index entries. With these counts a deep page finds the
-- bucket holding its first staker by summing a few thousand rows, and
-- skips only within that bucket (store.ListStakers). Statement triggers
-- keep the counts exact as stakers are inserted and deleted (their
-- derivation, rollback, bulk load); an address never changes, so updates
-- leave them alone. A bucket back at zero leaves no row.
CREATE TABLE staker_address_buckets (
    bucket TEXT PRIMARY KEY,
    n      BIGINT NOT NULL
);

INSERT INTO staker_address_buckets (bucket, n)
SELECT left(address, 5), count(*) FROM stakers GROUP BY 1;

-- +goose StatementBegin
CREATE FUNCTION staker_address_buckets_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO staker_address_buckets AS b (bucket, n)
        SELECT left(address, 5), count(*) FROM new_rows GROUP BY 1
        ON CONFLICT (bucket) DO UPDATE SET n = b.n + EXCLUDED.n;
    ELSE
        UPDATE staker_address_buckets b
        SET n = b.n - o.n
        FROM (SELECT left(address, 5) AS bucket, count(*) AS n FROM old_rows GROUP BY 1) o
        WHERE b.bucket = o.bucket;
        DELETE FROM staker_address_buckets b
        WHERE b.n = 0 AND b.bucket IN (SELECT left(address, 5) FROM old_rows);
    END IF;
    RETURN NULL;
END $$;

CREATE FUNCTION staker_address_buckets_clear() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM staker_address_buckets;
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER staker_address_buckets_insert AFTER INSERT ON stakers
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION staker_address_buckets_track();
CREATE TRIGGER staker_address_buckets_delete AFTER DELETE ON stakers
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION staker_address_buckets_track();
CREATE TRIGGER staker_address_buckets_truncate AFTER TRUNCATE ON stakers
    FOR EACH STATEMENT EXECUTE FUNCTION staker_address_buckets_clear();

-- +goose Down
DROP TRIGGER staker_address_buckets_truncate ON stakers;
DROP TRIGGER staker_address_buckets_delete ON stakers;
DROP TRIGGER staker_address_buckets_insert ON stakers;
DROP FUNCTION staker_address_buckets_clear();
DROP FUNCTION staker_address_buckets_track();
DROP TABLE staker_address_buckets;
