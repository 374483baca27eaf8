package rest

import (
	"net/http"
	"testing"

	"github.com/stakegraph/stakegraph/store/storetest"
)

// testOperatorRewards checks GET /operators/{address}/rewards against
// EigenExplorer's document and against the rewards of the AVS each
// operator is actively registered with: their tokens and strategies are
// the operator's, with those of operator-directed submissions that pay it.
func testOperatorRewards(t *testing.T, c *client) {
	var ops []string
	if err := storetest.SQL(t, c.db).Select(&ops, `
		SELECT operator_address FROM avs_operators WHERE is_active
		GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 5`); err != nil {
		t.Fatal(err)
	}
	var directed []string
	if err := storetest.SQL(t, c.db).Select(&directed, `SELECT DISTINCT operator_address FROM rewards_submission_operators ORDER BY 1 LIMIT 2`); err != nil {
		t.Fatal(err)
	}
	ops = append(ops, directed...)
	rewarded := 0
	for _, op := range ops {
		var got struct {
			Address                        string
			RewardTokens, RewardStrategies []string
		}
		c.okEE(t, "/operators/"+op+"/rewards", &got)
		if got.Address != op {
			t.Errorf("operator %s: address %s", op, got.Address)
		}
		want := map[string]map[string]bool{"tokens": {}, "strategies": {}}
		var avs []string
		if err := storetest.SQL(t, c.db).Select(&avs, `SELECT avs_address FROM avs_operators WHERE operator_address = $1 AND is_active`, op); err != nil {
			t.Fatal(err)
		}
		for _, a := range avs {
			var r struct{ RewardTokens, RewardStrategies []string }
			c.ok(t, "/avs/"+a+"/rewards", &r)
			for _, x := range r.RewardTokens {
				want["tokens"][x] = true
			}
			for _, x := range r.RewardStrategies {
				want["strategies"][x] = true
			}
		}
		var direct []struct{ Token, Strategy string }
		if err := storetest.SQL(t, c.db).Select(&direct, `
			SELECT r.token_address AS token, rss.strategy_address AS strategy
			FROM rewards_submission_operators ro
			JOIN rewards_submissions r ON r.rewards_submission_hash = ro.rewards_submission_hash
			JOIN rewards_submission_strategies rss ON rss.rewards_submission_hash = ro.rewards_submission_hash
			WHERE ro.operator_address = $1`, op); err != nil {
			t.Fatal(err)
		}
		for _, d := range direct {
			want["tokens"][d.Token], want["strategies"][d.Strategy] = true, true
		}
		for kind, list := range map[string][]string{"tokens": got.RewardTokens, "strategies": got.RewardStrategies} {
			if len(list) != len(want[kind]) {
				t.Errorf("operator %s: %d reward %s, want %d", op, len(list), kind, len(want[kind]))
			}
			for i, x := range list {
				if !want[kind][x] || (i > 0 && list[i-1] >= x) {
					t.Errorf("operator %s: reward %s %v not the sorted set %v", op, kind, list, want[kind])
					break
				}
			}
		}
		if len(got.RewardTokens) > 0 {
			rewarded++
		}
	}
	if rewarded == 0 {
		t.Error("no operator has rewards; the route is not exercised")
	}
	c.failsEE(t, "/operators/0x00000000000000000000000000000000000000ff/rewards", http.StatusNotFound, "not_found", "0x00000000000000000000000000000000000000ff")
}
