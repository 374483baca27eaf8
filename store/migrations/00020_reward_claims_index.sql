-- +goose Up
-- A staker's rewards list the cumulative amounts it claimed per token,
-- from the RewardsCoordinator's RewardsClaimed events by earner
-- (store.ClaimedRewardsByEarners).
CREATE INDEX protocol_events_claims_idx ON protocol_events ((args->>'earner'), (args->>'token'))
    WHERE name = 'RewardsClaimed';

-- +goose Down
DROP INDEX protocol_events_claims_idx;
