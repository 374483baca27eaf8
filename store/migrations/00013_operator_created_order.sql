-- +goose Up
-- The operator list's default order is (created_at, address): with the
-- address in the index, a page of it is an index-only scan like the other
-- orders (ListOperatorAddresses), instead of a sort of every operator.
CREATE INDEX operators_created_at_address_idx ON operators (created_at, address);
DROP INDEX operators_created_at_idx;

-- +goose Down
CREATE INDEX operators_created_at_idx ON operators (created_at);
DROP INDEX operators_created_at_address_idx;
