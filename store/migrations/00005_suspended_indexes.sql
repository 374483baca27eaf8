-- +goose Up
-- Secondary indexes of the large event tables that a bulk load dropped, with
-- the statements that rebuild them. A bulk load that dies leaves its rows
-- here, and the next migrate rebuilds them.
CREATE TABLE suspended_indexes (
    name       TEXT PRIMARY KEY,
    definition TEXT NOT NULL
);

-- +goose Down
DROP TABLE suspended_indexes;
