-- +goose Up
-- A change of the data version or of the API keys' version is announced
-- to the sessions that LISTEN on the channel named after it, at the
-- commit of the changing transaction, with the new version as payload:
-- servers drop their caches at once instead of at their next poll.
-- +goose StatementBegin
CREATE FUNCTION notify_version_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'service_state' THEN
        PERFORM pg_notify('stakegraph_data_version', NEW.data_version::text);
    ELSE
        PERFORM pg_notify('stakegraph_api_keys_version', NEW.version::text);
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER service_state_notify AFTER UPDATE OF data_version ON service_state
    FOR EACH ROW WHEN (NEW.data_version IS DISTINCT FROM OLD.data_version)
    EXECUTE FUNCTION notify_version_change();
CREATE TRIGGER api_keys_version_notify AFTER UPDATE OF version ON api_keys_version
    FOR EACH ROW WHEN (NEW.version IS DISTINCT FROM OLD.version)
    EXECUTE FUNCTION notify_version_change();

-- +goose Down
DROP TRIGGER api_keys_version_notify ON api_keys_version;
DROP TRIGGER service_state_notify ON service_state;
DROP FUNCTION notify_version_change();
