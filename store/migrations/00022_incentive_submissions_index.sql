-- +goose Up
-- Programmatic incentives read the submissions for all stakers and for
-- all earners only, newest first (store.ProgrammaticIncentives): a few
-- hundred rows among every AVS's submissions.
CREATE INDEX rewards_submissions_incentives_idx ON rewards_submissions (block_number DESC, log_index DESC)
    WHERE kind IN ('for_all', 'for_all_earners');

-- +goose Down
DROP INDEX rewards_submissions_incentives_idx;
