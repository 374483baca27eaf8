package store

import (
	"context"
	"fmt"
	"time"

	"github.com/lib/pq"
)

// startedIncentives selects, with rewards_submissions as rs, the started
// incentive submissions as of $1: those for all stakers and for all
// earners, with a duration, begun by then.
const startedIncentives = `rs.kind IN ('for_all', 'for_all_earners') AND rs.duration > 0 AND rs.start_timestamp <= $1`

// incentivesWeek is the period, in seconds, over which programmatic
// incentives are stated: one week.
const incentivesWeek = 7 * 24 * 3600

// IncentiveGroup is what programmatic incentives pay per week to one
// group of strategies: the EIGEN strategies, or the ETH and liquid staking
// token strategies. WeeklyAmount is in the incentive token's smallest
// unit, rounded down; TVLETH is the current ETH value of the shares of the
// group's strategies that the week's submissions name.
type IncentiveGroup struct {
	Eigen        bool           `db:"eigen"`
	WeeklyAmount string         `db:"weekly_amount"`
	TVLETH       string         `db:"tvl_eth"`
	Strategies   pq.StringArray `db:"strategies"` // the strategies the week's submissions name
}

// IncentiveToken is a token with what valuing a holding of it needs: its
// decimals and price in ETH (0 and 18 when unknown) and whether it is
// staked in the EIGEN strategies' group (an EIGEN strategy's underlying
// token or the incentive token itself).
type IncentiveToken struct {
	Address  string `db:"address"`
	Decimals int    `db:"decimals"`
	ETHPrice string `db:"eth_price"`
	Eigen    bool   `db:"eigen"`
}

// ProgrammaticIncentives are EigenLayer's programmatic incentives as the
// chain states them: the submissions for all stakers
// (RewardsSubmissionForAllCreated) and for all earners
// (RewardsSubmissionForAllEarnersCreated) in the token of the latest one.
// The figures are those of the latest week the started submissions cover
// (each contributes its amount × its days in that week ÷ its duration, and
// a submission's amount is split across its strategies by multiplier), so
// incentives submitted after the fact, as they are, still count.
type ProgrammaticIncentives struct {
	// Token is the incentive token, "" when no incentive was ever
	// submitted; TokenDecimals and TokenETHPrice value it.
	Token         string `db:"token_address"`
	TokenDecimals int    `db:"decimals"`
	TokenETHPrice string `db:"eth_price"`
	// WeekEnd ends the week the figures are of.
	WeekEnd time.Time `db:"week_end"`
	// StakerShare is the stakers' part of the incentives, 1 − the
	// RewardsCoordinator's default operator split (10% unless changed),
	// as decimal text.
	StakerShare string `db:"staker_share"`
	// Groups holds the EIGEN group and the ETH and liquid staking token
	// group, in that order; a group no submission pays is absent.
	Groups []IncentiveGroup
	// Tokens describes the tokens asked about, in the order asked.
	Tokens []IncentiveToken
}

// ProgrammaticIncentives returns the programmatic incentives as of now,
// with a description of each of tokens (lowercase addresses).
func (db *DB) ProgrammaticIncentives(ctx context.Context, now time.Time, tokens []string) (*ProgrammaticIncentives, error) {
	out := &ProgrammaticIncentives{}
	var rows []ProgrammaticIncentives
	if err := db.selectContext(ctx, &rows, `
		WITH latest AS (
		    SELECT rs.token_address, max(rs.start_timestamp + rs.duration) AS week_end
		    FROM rewards_submissions rs
		    WHERE `+startedIncentives+`
		      AND rs.token_address = (
		          SELECT rs.token_address FROM rewards_submissions rs
		          WHERE `+startedIncentives+`
		          ORDER BY rs.block_number DESC, rs.log_index DESC LIMIT 1)
		    GROUP BY rs.token_address
		)
		SELECT l.token_address, COALESCE(t.decimals, 18) AS decimals, COALESCE(t.eth_price, 0)::text AS eth_price,
		       to_timestamp(l.week_end) AS week_end,
		       (1 - COALESCE((
		           SELECT (args->>'newDefaultOperatorSplitBips')::numeric FROM protocol_events
		           WHERE name = 'DefaultOperatorSplitBipsSet'
		           ORDER BY block_number DESC, log_index DESC LIMIT 1), 1000) / 10000)::text AS staker_share
		FROM latest l
		LEFT JOIN tokens t ON t.address = l.token_address`, now.Unix()); err != nil {
		return nil, fmt.Errorf("programmatic incentives: %w", Classify(err))
	}
	if len(rows) == 1 {
		out = &rows[0]
		if err := db.selectContext(ctx, &out.Groups, `
			WITH week AS (
			    SELECT rs.rewards_submission_hash, rs.duration,
			           GREATEST(0, LEAST(rs.start_timestamp + rs.duration, $2)
			                       - GREATEST(rs.start_timestamp, $2 - $4)) AS overlap
			    FROM rewards_submissions rs
			    WHERE `+startedIncentives+`
			      AND rs.token_address = $3
			      AND rs.start_timestamp < $2 AND rs.start_timestamp + rs.duration > $2 - $4
			), paid AS (
			    SELECT rss.strategy_address, sum(rss.amount * w.overlap / w.duration) AS amount
			    FROM week w
			    JOIN rewards_submission_strategies rss ON rss.rewards_submission_hash = w.rewards_submission_hash
			    WHERE w.overlap > 0
			    GROUP BY rss.strategy_address
			)
			SELECT s.kind = 'eigen' AS eigen, floor(sum(p.amount))::text AS weekly_amount,
			       array_agg(s.address ORDER BY s.address) AS strategies,
			       COALESCE(sum(strategy_eth(s.total_shares, s.shares_to_underlying, s.decimals, s.eth_price)), 0)::text AS tvl_eth
			FROM paid p
			JOIN strategies s ON s.address = p.strategy_address
			GROUP BY 1
			ORDER BY 1 DESC`, now.Unix(), out.WeekEnd.Unix(), out.Token, incentivesWeek); err != nil {
			return nil, fmt.Errorf("programmatic incentives: %w", Classify(err))
		}
	}
	if len(tokens) > 0 {
		if err := db.selectContext(ctx, &out.Tokens, `
			SELECT k.address, COALESCE(t.decimals, 18) AS decimals, COALESCE(t.eth_price, 0)::text AS eth_price,
			       (k.address = $2 OR EXISTS (
			           SELECT 1 FROM strategies s WHERE s.kind = 'eigen' AND s.underlying_token = k.address)) AS eigen
			FROM unnest($1::text[]) WITH ORDINALITY AS k(address, position)
			LEFT JOIN tokens t ON t.address = k.address
			ORDER BY k.position`, pq.Array(tokens), out.Token); err != nil {
			return nil, fmt.Errorf("programmatic incentives: %w", Classify(err))
		}
	}
	return out, nil
}
