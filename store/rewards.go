package store

import (
	"context"
	"fmt"
	"math/big"
	"time"

	"github.com/lib/pq"
)

// RewardsSubmission is a stored rewards submission. Amount is decimal text
// in the token's smallest unit; StartTimestamp and Duration are seconds.
// Kind is the chain.RewardsKind of the event that created it; an
// operator-directed submission to an operator set has its OperatorSetID.
// Submitter and Description are set for operator-directed submissions.
type RewardsSubmission struct {
	Key            string    `db:"key"`
	Hash           string    `db:"rewards_submission_hash"`
	AVSAddress     string    `db:"avs_address"`
	ForAll         bool      `db:"for_all"`
	Kind           string    `db:"kind"`
	OperatorSetID  *int64    `db:"operator_set_id"`
	Submitter      *string   `db:"submitter"`
	Description    *string   `db:"description"`
	Nonce          string    `db:"submission_nonce"`
	TokenAddress   string    `db:"token_address"`
	Amount         string    `db:"amount"`
	StartTimestamp int64     `db:"start_timestamp"`
	Duration       int64     `db:"duration"`
	BlockNumber    int64     `db:"block_number"`
	LogIndex       int       `db:"log_index"`
	TxHash         string    `db:"tx_hash"`
	BlockTime      time.Time `db:"block_time"`
}

const rewardsSubmissionColumns = `
	r.rewards_submission_hash, r.avs_address, r.for_all, r.kind, r.operator_set_id, r.submitter, r.description,
	r.submission_nonce::text AS submission_nonce, r.token_address, r.amount::text AS amount,
	r.start_timestamp, r.duration, r.block_number, r.log_index, r.tx_hash, r.block_time`

// ListRewardsSubmissionsByAVS returns, for each of the given AVS, one page of
// its rewards submissions, newest first, all in one statement. Rows are
// grouped by AVS (Key) in the order of avs.
func (db *DB) ListRewardsSubmissionsByAVS(ctx context.Context, avs []string, p Page) ([]RewardsSubmission, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out []RewardsSubmission
	if err := db.selectContext(ctx, &out, `
		SELECT k.key, x.*
		FROM unnest($1::text[]) WITH ORDINALITY AS k(key, position)
		CROSS JOIN LATERAL (
			SELECT `+rewardsSubmissionColumns+`
			FROM rewards_submissions r
			WHERE r.avs_address = k.key
			ORDER BY r.block_number DESC, r.log_index DESC
			LIMIT $2 OFFSET $3
		) x
		ORDER BY k.position, x.block_number DESC, x.log_index DESC`, pq.Array(avs), p.Take, p.Skip); err != nil {
		return nil, fmt.Errorf("list rewards submissions: %w", Classify(err))
	}
	return out, nil
}

// RewardsSubmissionsByHashes returns the rewards submissions with the given
// hashes, in no particular order; unknown hashes are left out.
func (db *DB) RewardsSubmissionsByHashes(ctx context.Context, hashes []string) ([]RewardsSubmission, error) {
	var out []RewardsSubmission
	if err := db.selectPrepared(ctx, &out, `
		SELECT r.rewards_submission_hash AS key, `+rewardsSubmissionColumns+`
		FROM rewards_submissions r
		WHERE r.rewards_submission_hash = ANY($1)`, pq.Array(hashes)); err != nil {
		return nil, fmt.Errorf("rewards submissions by hash: %w", Classify(err))
	}
	return out, nil
}

// RewardsSubmissionStrategy is one strategy of a rewards submission.
// Multiplier and Amount are decimal text.
type RewardsSubmissionStrategy struct {
	Hash            string `db:"rewards_submission_hash"`
	StrategyAddress string `db:"strategy_address"`
	Multiplier      string `db:"multiplier"`
	Amount          string `db:"amount"`
}

// StrategiesBySubmissions returns the strategies of the given rewards
// submissions, ordered by submission hash and then in submission order.
func (db *DB) StrategiesBySubmissions(ctx context.Context, hashes []string) ([]RewardsSubmissionStrategy, error) {
	var out []RewardsSubmissionStrategy
	if err := db.selectPrepared(ctx, &out, `
		SELECT rewards_submission_hash, strategy_address, multiplier::text AS multiplier, amount::text AS amount
		FROM rewards_submission_strategies
		WHERE rewards_submission_hash = ANY($1)
		ORDER BY rewards_submission_hash, position`, pq.Array(hashes)); err != nil {
		return nil, fmt.Errorf("rewards submission strategies: %w", Classify(err))
	}
	return out, nil
}

// AVSRewardsTotals aggregates the rewards submissions of one AVS.
// TotalRewards is the decimal sum of all submission amounts.
type AVSRewardsTotals struct {
	AVSAddress       string         `db:"avs_address"`
	TotalSubmissions int            `db:"total_submissions"`
	TotalRewards     string         `db:"total_rewards"`
	RewardTokens     pq.StringArray `db:"reward_tokens"`
	RewardStrategies pq.StringArray `db:"reward_strategies"`
}

// RewardsTotalsByAVS returns the rewards totals of each of the given AVS;
// AVS without submissions are left out.
func (db *DB) RewardsTotalsByAVS(ctx context.Context, avs []string) ([]AVSRewardsTotals, error) {
	var out []AVSRewardsTotals
	if err := db.selectPrepared(ctx, &out, `
		SELECT r.avs_address,
		       count(*) AS total_submissions,
		       sum(r.amount)::text AS total_rewards,
		       array_agg(DISTINCT r.token_address ORDER BY r.token_address) AS reward_tokens,
		       ARRAY(
		           SELECT ars.strategy_address
		           FROM avs_reward_strategies ars
		           WHERE ars.avs_address = r.avs_address
		           ORDER BY ars.strategy_address) AS reward_strategies
		FROM rewards_submissions r
		WHERE r.avs_address = ANY($1)
		GROUP BY r.avs_address`, pq.Array(avs)); err != nil {
		return nil, fmt.Errorf("rewards totals: %w", Classify(err))
	}
	return out, nil
}

// RewardsSubmissionOperator is one operator's amount in an
// operator-directed rewards submission. Amount is decimal text in the
// token's smallest unit.
type RewardsSubmissionOperator struct {
	Hash            string `db:"rewards_submission_hash"`
	OperatorAddress string `db:"operator_address"`
	Amount          string `db:"amount"`
	// Strategies are the submission's strategies, and StrategyAmounts the
	// operator's amount split across them by splitByMultiplier, as the
	// submission's amount is.
	Strategies      []string `db:"-"`
	StrategyAmounts []string `db:"-"`
}

// OperatorsBySubmissions returns the operators' amounts of the given
// rewards submissions (operator-directed ones have them), ordered by
// submission hash and then in submission order, each split across the
// submission's strategies.
func (db *DB) OperatorsBySubmissions(ctx context.Context, hashes []string) ([]RewardsSubmissionOperator, error) {
	var rows []struct {
		RewardsSubmissionOperator
		Strategies  pq.StringArray `db:"strategies"`
		Multipliers pq.StringArray `db:"multipliers"`
	}
	if err := db.selectPrepared(ctx, &rows, `
		SELECT o.rewards_submission_hash, o.operator_address, o.amount::text AS amount,
		       ARRAY(SELECT s.strategy_address::text FROM rewards_submission_strategies s
		             WHERE s.rewards_submission_hash = o.rewards_submission_hash ORDER BY s.position) AS strategies,
		       ARRAY(SELECT s.multiplier::text FROM rewards_submission_strategies s
		             WHERE s.rewards_submission_hash = o.rewards_submission_hash ORDER BY s.position) AS multipliers
		FROM rewards_submission_operators o
		WHERE o.rewards_submission_hash = ANY($1)
		ORDER BY o.rewards_submission_hash, o.position`, pq.Array(hashes)); err != nil {
		return nil, fmt.Errorf("rewards submission operators: %w", Classify(err))
	}
	out := make([]RewardsSubmissionOperator, len(rows))
	for i, r := range rows {
		amount, ok := new(big.Int).SetString(r.Amount, 10)
		if !ok {
			return nil, fmt.Errorf("rewards submission %s: operator amount %q", r.Hash, r.Amount)
		}
		multipliers := make([]*big.Int, len(r.Multipliers))
		for j, m := range r.Multipliers {
			if multipliers[j], ok = new(big.Int).SetString(m, 10); !ok {
				return nil, fmt.Errorf("rewards submission %s: multiplier %q", r.Hash, m)
			}
		}
		out[i] = r.RewardsSubmissionOperator
		out[i].Strategies = r.Strategies
		out[i].StrategyAmounts = make([]string, len(multipliers))
		for j, a := range splitByMultiplier(amount, multipliers) {
			out[i].StrategyAmounts[j] = a.String()
		}
	}
	return out, nil
}

// splitByMultiplier splits amount across strategies in proportion to their
// multipliers: amount × multiplier / Σ multipliers, rounded down (all zero
// when there is no amount or the multipliers sum to zero). It is the split
// of a rewards submission's amount, and of an operator's amount in an
// operator-directed one.
func splitByMultiplier(amount *big.Int, multipliers []*big.Int) []*big.Int {
	total := new(big.Int)
	for _, m := range multipliers {
		total.Add(total, m)
	}
	out := make([]*big.Int, len(multipliers))
	for i, m := range multipliers {
		out[i] = new(big.Int)
		if total.Sign() > 0 && amount != nil {
			out[i].Mul(amount, m)
			out[i].Quo(out[i], total)
		}
	}
	return out
}

// setSubmissionCondition selects, in rewards_submissions r, the
// operator-directed submissions to the operator set of the columns
// k.avs_address and k.operator_set_id. The AVS's index of the submissions
// finds them.
const setSubmissionCondition = `r.avs_address = k.avs_address AND r.kind = 'operator_directed_opset'
	AND r.operator_set_id = k.operator_set_id`

// ListRewardsSubmissionsBySets returns, for each of the given operator
// sets, one page of the operator-directed rewards submissions to it, newest
// first, all in one statement. Rows are grouped by set (Key, the set's key)
// in the order of sets.
func (db *DB) ListRewardsSubmissionsBySets(ctx context.Context, sets []OperatorSetRef, p Page) ([]RewardsSubmission, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	avs, ids := refArrays(sets)
	var out []RewardsSubmission
	if err := db.selectContext(ctx, &out, `
		SELECT `+operatorSetKey("k.avs_address", "k.operator_set_id")+` AS key, x.*
		FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS k(avs_address, operator_set_id, position)
		CROSS JOIN LATERAL (
			SELECT `+rewardsSubmissionColumns+`
			FROM rewards_submissions r
			WHERE `+setSubmissionCondition+`
			ORDER BY r.block_number DESC, r.log_index DESC
			LIMIT $3 OFFSET $4
		) x
		ORDER BY k.position, x.block_number DESC, x.log_index DESC`, avs, ids, p.Take, p.Skip); err != nil {
		return nil, fmt.Errorf("list operator set rewards submissions: %w", Classify(err))
	}
	return out, nil
}

// CountRewardsSubmissionsBySets returns the number of operator-directed
// rewards submissions to each of the given operator sets, by the set's
// key; sets without any are left out of the map.
func (db *DB) CountRewardsSubmissionsBySets(ctx context.Context, sets []OperatorSetRef) (map[string]int, error) {
	avs, ids := refArrays(sets)
	return db.countByKeyPrepared(ctx, "count operator set rewards submissions", `
		SELECT `+operatorSetKey("k.avs_address", "k.operator_set_id")+` AS key, count(*) AS n
		FROM unnest($1::text[], $2::bigint[]) AS k(avs_address, operator_set_id)
		JOIN rewards_submissions r ON `+setSubmissionCondition+`
		GROUP BY k.avs_address, k.operator_set_id`, avs, ids)
}

// OperatorRewards are the tokens and strategies an operator is rewarded in
// and for, each sorted by address.
type OperatorRewards struct {
	Operator         string         `db:"operator_address"`
	RewardTokens     pq.StringArray `db:"reward_tokens"`
	RewardStrategies pq.StringArray `db:"reward_strategies"`
}

// RewardsByOperators returns, for each of the given operators in order,
// the tokens and strategies of the rewards submissions of every AVS it is
// actively registered with and of the operator-directed submissions that
// pay it. An operator without any has empty lists.
func (db *DB) RewardsByOperators(ctx context.Context, operators []string) ([]OperatorRewards, error) {
	var out []OperatorRewards
	if err := db.selectPrepared(ctx, &out, `
		SELECT k.key AS operator_address,
		       ARRAY(
		           SELECT r.token_address FROM rewards_submissions r
		           JOIN avs_operators ao ON ao.avs_address = r.avs_address
		           WHERE ao.operator_address = k.key AND ao.is_active
		           UNION
		           SELECT r.token_address FROM rewards_submission_operators ro
		           JOIN rewards_submissions r ON r.rewards_submission_hash = ro.rewards_submission_hash
		           WHERE ro.operator_address = k.key
		           ORDER BY 1) AS reward_tokens,
		       ARRAY(
		           SELECT ars.strategy_address FROM avs_reward_strategies ars
		           JOIN avs_operators ao ON ao.avs_address = ars.avs_address
		           WHERE ao.operator_address = k.key AND ao.is_active
		           UNION
		           SELECT rss.strategy_address FROM rewards_submission_operators ro
		           JOIN rewards_submission_strategies rss ON rss.rewards_submission_hash = ro.rewards_submission_hash
		           WHERE ro.operator_address = k.key
		           ORDER BY 1) AS reward_strategies
		FROM unnest($1::text[]) WITH ORDINALITY AS k(key, position)
		ORDER BY k.position`, pq.Array(operators)); err != nil {
		return nil, fmt.Errorf("operator rewards: %w", Classify(err))
	}
	return out, nil
}

// ClaimedRewards is the cumulative amount of one token an earner claimed
// (decimal text in the token's smallest unit).
type ClaimedRewards struct {
	Earner string `db:"earner"`
	Token  string `db:"token"`
	Amount string `db:"amount"`
}

// ClaimedRewardsByEarners returns what each of the given earners claimed
// from the RewardsCoordinator, per token, ordered by earner and token.
func (db *DB) ClaimedRewardsByEarners(ctx context.Context, earners []string) ([]ClaimedRewards, error) {
	var out []ClaimedRewards
	if err := db.selectPrepared(ctx, &out, `
		SELECT e.args->>'earner' AS earner, e.args->>'token' AS token,
		       sum((e.args->>'claimedAmount')::numeric)::text AS amount
		FROM protocol_events e
		WHERE e.name = 'RewardsClaimed' AND e.args->>'earner' = ANY($1)
		GROUP BY 1, 2
		ORDER BY 1, 2`, pq.Array(earners)); err != nil {
		return nil, fmt.Errorf("claimed rewards: %w", Classify(err))
	}
	return out, nil
}

// StakerAVSApy is the APY an AVS pays in one strategy (in percent, decimal
// text) that a staker holds shares in, through the operator the staker is
// delegated to and that is actively registered with the AVS.
type StakerAVSApy struct {
	Staker   string `db:"staker_address"`
	AVS      string `db:"avs_address"`
	Strategy string `db:"strategy_address"`
	APY      string `db:"apy"`
}

// AVSApysByStakers returns the StakerAVSApy rows of the given stakers,
// ordered by staker, AVS and strategy.
func (db *DB) AVSApysByStakers(ctx context.Context, stakers []string) ([]StakerAVSApy, error) {
	var out []StakerAVSApy
	if err := db.selectPrepared(ctx, &out, `
		SELECT s.address AS staker_address, ao.avs_address, asa.strategy_address, asa.apy::text AS apy
		FROM stakers s
		JOIN avs_operators ao ON ao.operator_address = s.operator_address AND ao.is_active
		JOIN avs_strategy_apy asa ON asa.avs_address = ao.avs_address AND asa.strategy_address = ANY (s.holding_strategies)
		WHERE s.address = ANY($1)
		ORDER BY 1, 2, 3`, pq.Array(stakers)); err != nil {
		return nil, fmt.Errorf("staker AVS APYs: %w", Classify(err))
	}
	return out, nil
}
