-- +goose Up
-- The distinct (strategy, token) and (AVS, strategy) pairs of the rewards
-- submissions: which tokens each strategy was rewarded in, and which
-- strategies each AVS rewarded. Triggers keep them up to date in the
-- transaction that changes rewards_submission_strategies, so GET
-- /rewards/strategies and an AVS's rewardStrategies read a few rows instead
-- of aggregating every submission.
CREATE TABLE reward_strategy_tokens (
    strategy_address address NOT NULL,
    token_address    address NOT NULL,
    PRIMARY KEY (strategy_address, token_address)
);

CREATE TABLE avs_reward_strategies (
    avs_address      address NOT NULL,
    strategy_address address NOT NULL,
    PRIMARY KEY (avs_address, strategy_address)
);

INSERT INTO reward_strategy_tokens (strategy_address, token_address)
SELECT DISTINCT rss.strategy_address, rs.token_address
FROM rewards_submission_strategies rss
JOIN rewards_submissions rs ON rs.rewards_submission_hash = rss.rewards_submission_hash;

INSERT INTO avs_reward_strategies (avs_address, strategy_address)
SELECT DISTINCT rs.avs_address, rss.strategy_address
FROM rewards_submission_strategies rss
JOIN rewards_submissions rs ON rs.rewards_submission_hash = rss.rewards_submission_hash;

-- +goose StatementBegin
-- reward_pairs_insert adds the pairs of inserted submission strategies; a
-- submission is inserted before its strategies.
CREATE FUNCTION reward_pairs_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO reward_strategy_tokens (strategy_address, token_address)
    SELECT DISTINCT n.strategy_address, rs.token_address
    FROM new_rows n JOIN rewards_submissions rs ON rs.rewards_submission_hash = n.rewards_submission_hash
    ON CONFLICT DO NOTHING;
    INSERT INTO avs_reward_strategies (avs_address, strategy_address)
    SELECT DISTINCT rs.avs_address, n.strategy_address
    FROM new_rows n JOIN rewards_submissions rs ON rs.rewards_submission_hash = n.rewards_submission_hash
    ON CONFLICT DO NOTHING;
    RETURN NULL;
END $$;

-- reward_pairs_delete recomputes the pairs of the strategies whose
-- submission strategies were deleted (by a rollback deleting their
-- submissions, which cascades), from what is left.
CREATE FUNCTION reward_pairs_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM reward_strategy_tokens WHERE strategy_address IN (SELECT strategy_address FROM old_rows);
    DELETE FROM avs_reward_strategies WHERE strategy_address IN (SELECT strategy_address FROM old_rows);
    INSERT INTO reward_strategy_tokens (strategy_address, token_address)
    SELECT DISTINCT rss.strategy_address, rs.token_address
    FROM rewards_submission_strategies rss
    JOIN rewards_submissions rs ON rs.rewards_submission_hash = rss.rewards_submission_hash
    WHERE rss.strategy_address IN (SELECT strategy_address FROM old_rows);
    INSERT INTO avs_reward_strategies (avs_address, strategy_address)
    SELECT DISTINCT rs.avs_address, rss.strategy_address
    FROM rewards_submission_strategies rss
    JOIN rewards_submissions rs ON rs.rewards_submission_hash = rss.rewards_submission_hash
    WHERE rss.strategy_address IN (SELECT strategy_address FROM old_rows);
    RETURN NULL;
END $$;

CREATE FUNCTION reward_pairs_clear() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM reward_strategy_tokens;
    DELETE FROM avs_reward_strategies;
    RETURN NULL;
END $$;
-- +goose StatementEnd

CREATE TRIGGER reward_pairs_insert AFTER INSERT ON rewards_submission_strategies
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION reward_pairs_insert();
CREATE TRIGGER reward_pairs_delete AFTER DELETE ON rewards_submission_strategies
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION reward_pairs_delete();
CREATE TRIGGER reward_pairs_truncate AFTER TRUNCATE ON rewards_submission_strategies
    FOR EACH STATEMENT EXECUTE FUNCTION reward_pairs_clear();

-- +goose Down
DROP TRIGGER reward_pairs_truncate ON rewards_submission_strategies;
DROP TRIGGER reward_pairs_delete ON rewards_submission_strategies;
DROP TRIGGER reward_pairs_insert ON rewards_submission_strategies;
DROP FUNCTION reward_pairs_clear();
DROP FUNCTION reward_pairs_delete();
DROP FUNCTION reward_pairs_insert();
DROP TABLE avs_reward_strategies, reward_strategy_tokens;
