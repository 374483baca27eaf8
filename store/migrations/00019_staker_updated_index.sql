-- +goose Up
-- GET /stakers?updatedSince= lists the stakers updated since a time
-- (store.ListStakers, CountStakers).
CREATE INDEX stakers_updated_at_idx ON stakers (updated_at);

-- +goose Down
DROP INDEX stakers_updated_at_idx;
