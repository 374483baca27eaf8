-- +goose Up
-- The ETH supply is not on the chain's JSON-RPC interface: the indexer
-- records it from a configured source at each reference update, one row
-- per change (store.Tx.RecordETHSupply). The restaking ratio of a snapshot
-- day divides its TVL by the supply observed last by the end of that day
-- (store.LatestSnapshots).
CREATE TABLE eth_supply_observations (
    observed_at TIMESTAMPTZ PRIMARY KEY,
    supply      NUMERIC NOT NULL CHECK (supply > 0)
);

-- +goose Down
DROP TABLE eth_supply_observations;
