package store_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/lib/pq"

	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// rewardAggregates are the reward aggregates the API shows, read through
// the store.
type rewardAggregates struct {
	StrategyTokens map[string][]string // GET /rewards/strategies
	ByStrategy     map[string][]string // Strategy.rewardTokens
	AVSStrategies  map[string][]string // AVS rewards' rewardStrategies
}

func readRewardAggregates(t *testing.T, db *store.DB) rewardAggregates {
	t.Helper()
	ctx := context.Background()
	out := rewardAggregates{map[string][]string{}, map[string][]string{}, map[string][]string{}}
	list, err := db.ListRewardStrategies(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var strategies []string
	for _, s := range list {
		out.StrategyTokens[s.StrategyAddress] = s.Tokens
		strategies = append(strategies, s.StrategyAddress)
	}
	byStrategy, err := db.RewardTokensByStrategies(ctx, append(strategies, "0x000000000000000000000000000000000000beef"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range byStrategy {
		out.ByStrategy[s.StrategyAddress] = s.Tokens
	}
	var avs []string
	if err := storetest.SQL(t, db).SelectContext(ctx, &avs, `SELECT DISTINCT avs_address FROM rewards_submissions`); err != nil {
		t.Fatal(err)
	}
	totals, err := db.RewardsTotalsByAVS(ctx, avs)
	if err != nil {
		t.Fatal(err)
	}
	for _, tot := range totals {
		out.AVSStrategies[tot.AVSAddress] = tot.RewardStrategies
	}
	return out
}

// bruteRewardAggregates computes the same aggregates from the submissions.
func bruteRewardAggregates(t *testing.T, db *store.DB) rewardAggregates {
	t.Helper()
	ctx := context.Background()
	out := rewardAggregates{map[string][]string{}, map[string][]string{}, map[string][]string{}}
	var rows []struct {
		Key    string         `db:"key"`
		Values pq.StringArray `db:"vals"`
	}
	if err := storetest.SQL(t, db).SelectContext(ctx, &rows, `
		SELECT rss.strategy_address AS key, array_agg(DISTINCT rs.token_address ORDER BY rs.token_address) AS vals
		FROM rewards_submission_strategies rss
		JOIN rewards_submissions rs ON rs.rewards_submission_hash = rss.rewards_submission_hash
		GROUP BY rss.strategy_address`); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		out.StrategyTokens[r.Key] = r.Values
		out.ByStrategy[r.Key] = r.Values
	}
	rows = nil
	if err := storetest.SQL(t, db).SelectContext(ctx, &rows, `
		SELECT rs.avs_address AS key,
		       COALESCE(array_agg(DISTINCT rss.strategy_address ORDER BY rss.strategy_address)
		                FILTER (WHERE rss.strategy_address IS NOT NULL), '{}') AS vals
		FROM rewards_submissions rs
		LEFT JOIN rewards_submission_strategies rss ON rss.rewards_submission_hash = rs.rewards_submission_hash
		GROUP BY rs.avs_address`); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		out.AVSStrategies[r.Key] = r.Values
	}
	return out
}

func checkRewardAggregates(t *testing.T, db *store.DB, when string) {
	t.Helper()
	got, want := readRewardAggregates(t, db), bruteRewardAggregates(t, db)
	normalize := func(m map[string][]string) {
		for k, v := range m {
			if v == nil {
				m[k] = []string{}
			}
		}
	}
	for _, a := range []rewardAggregates{got, want} {
		normalize(a.StrategyTokens)
		normalize(a.ByStrategy)
		normalize(a.AVSStrategies)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: reward aggregates from the maintained pairs\n%v\ndiffer from the submissions'\n%v", when, got, want)
	}
}

// TestRewardPairsStayExact checks the trigger-maintained reward pairs
// against aggregating the submissions: after a load, after a rollback
// (whose deleted submissions cascade to their strategies) and after a
// truncation.
func TestRewardPairsStayExact(t *testing.T) {
	db := maintainedWorld(t)
	ctx := context.Background()
	var submissions int
	if err := storetest.SQL(t, db).GetContext(ctx, &submissions, `SELECT count(*) FROM rewards_submissions`); err != nil {
		t.Fatal(err)
	}
	if submissions < 50 {
		t.Fatalf("the world has %d rewards submissions; want at least 50", submissions)
	}
	checkRewardAggregates(t, db, "after the load")

	var first, last uint64
	if err := storetest.SQL(t, db).QueryRowContext(ctx, `SELECT min(block_number), max(block_number) FROM rewards_submissions`).Scan(&first, &last); err != nil {
		t.Fatal(err)
	}
	if err := db.InTx(ctx, func(tx *store.Tx) error { return tx.RollbackAfter(ctx, (first+last)/2) }); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := storetest.SQL(t, db).GetContext(ctx, &left, `SELECT count(*) FROM rewards_submissions`); err != nil {
		t.Fatal(err)
	}
	if left == 0 || left == submissions {
		t.Fatalf("the rollback left %d of %d submissions; want some but not all", left, submissions)
	}
	checkRewardAggregates(t, db, "after a rollback")

	if _, err := storetest.SQL(t, db).ExecContext(ctx, `TRUNCATE rewards_submissions CASCADE`); err != nil {
		t.Fatal(err)
	}
	checkRewardAggregates(t, db, "after a truncation")
}
