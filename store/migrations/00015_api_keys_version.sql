-- +goose Up
-- api_keys_version counts the changes to api_keys: every statement that
-- writes api_keys increments it in the same transaction, so a server that
-- caches the active keys notices a created or revoked key by reading this
-- one row, and never sees the new count before the change itself.
CREATE TABLE api_keys_version (
    id      BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (id),
    version BIGINT NOT NULL
);
INSERT INTO api_keys_version (version) VALUES (0);

-- +goose StatementBegin
CREATE FUNCTION api_keys_version_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE api_keys_version SET version = version + 1;
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER api_keys_version_bump AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION api_keys_version_bump();

-- +goose Down
DROP TRIGGER api_keys_version_bump ON api_keys;
DROP FUNCTION api_keys_version_bump();
DROP TABLE api_keys_version;
