-- +goose Up
-- The daily snapshots gain the deposits seen by the end of each day (their
-- number and value in ETH) and the value in ETH of the withdrawals queued
-- by then, for the deposit and withdrawal histories and the deposit total.
-- Existing snapshots lack them, so every snapshot day is marked for
-- recomputation; DB.Migrate runs the refresh that recomputes them.
ALTER TABLE daily_snapshots
    ADD COLUMN total_deposits  INTEGER NOT NULL DEFAULT 0 CHECK (total_deposits >= 0),
    ADD COLUMN deposits_eth    NUMERIC NOT NULL DEFAULT 0,
    ADD COLUMN withdrawals_eth NUMERIC NOT NULL DEFAULT 0;
UPDATE service_state
SET dirty_since = LEAST(COALESCE(dirty_since, 'infinity'), (SELECT min(day)::timestamptz FROM daily_snapshots))
WHERE EXISTS (SELECT 1 FROM daily_snapshots);

-- +goose Down
ALTER TABLE daily_snapshots
    DROP COLUMN total_deposits,
    DROP COLUMN deposits_eth,
    DROP COLUMN withdrawals_eth;
