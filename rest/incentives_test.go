package rest

import (
	"math"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/stakegraph/stakegraph/apikey"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// TestProgrammaticIncentives checks GET /rewards/programmatic-incentives on
// the demo data against the incentive submissions read row by row: the
// group APYs from the latest covered week, and what holdings earn.
func TestProgrammaticIncentives(t *testing.T) {
	db := demoDB(t)
	c := newClient(t, db, apikey.Options{DefaultRateLimit: 1_000_000})
	raw := storetest.SQL(t, db)

	// The started incentive submissions, split by strategy.
	var rows []struct {
		Token    string `db:"token_address"`
		Start    int64  `db:"start_timestamp"`
		Duration int64  `db:"duration"`
		Amount   string `db:"amount"`
		Eigen    bool   `db:"eigen"`
		Latest   bool   `db:"latest"`
	}
	if err := raw.Select(&rows, `
		SELECT rs.token_address, rs.start_timestamp, rs.duration, rss.amount::text AS amount, s.kind = 'eigen' AS eigen,
		       (rs.block_number, rs.log_index) = (
		           SELECT block_number, log_index FROM rewards_submissions
		           WHERE kind IN ('for_all', 'for_all_earners') AND start_timestamp <= $1
		           ORDER BY block_number DESC, log_index DESC LIMIT 1) AS latest
		FROM rewards_submissions rs
		JOIN rewards_submission_strategies rss USING (rewards_submission_hash)
		JOIN strategies s ON s.address = rss.strategy_address
		WHERE rs.kind IN ('for_all', 'for_all_earners') AND rs.start_timestamp <= $1`, demoNow.Unix()); err != nil {
		t.Fatal(err)
	}
	token := ""
	for _, r := range rows {
		if r.Latest {
			token = r.Token
		}
	}
	var end int64
	for _, r := range rows {
		if r.Token == token {
			end = max(end, r.Start+r.Duration)
		}
	}
	weekly := map[bool]*big.Rat{true: new(big.Rat), false: new(big.Rat)}
	for _, r := range rows {
		overlap := min(r.Start+r.Duration, end) - max(r.Start, end-7*86400)
		if r.Token != token || overlap <= 0 {
			continue
		}
		a, _ := new(big.Rat).SetString(r.Amount)
		weekly[r.Eigen].Add(weekly[r.Eigen], a.Mul(a, big.NewRat(overlap, r.Duration)))
	}
	if weekly[true].Sign() == 0 || weekly[false].Sign() == 0 {
		t.Fatalf("the demo's latest incentive week pays EIGEN %v and ETH %v; want both", weekly[true], weekly[false])
	}
	var tvl struct {
		Eigen float64 `db:"eigen"`
		ETH   float64 `db:"eth"`
		Price float64 `db:"price"`
	}
	if err := raw.Get(&tvl, `
		SELECT COALESCE(sum(strategy_eth(total_shares, shares_to_underlying, decimals, eth_price)) FILTER (WHERE kind = 'eigen'), 0) AS eigen,
		       COALESCE(sum(strategy_eth(total_shares, shares_to_underlying, decimals, eth_price)) FILTER (WHERE kind <> 'eigen'), 0) AS eth,
		       (SELECT eth_price FROM tokens WHERE address = $1) / 1e18 AS price
		FROM strategies
		WHERE address IN (SELECT strategy_address FROM rewards_submission_strategies rss
		                  JOIN rewards_submissions rs USING (rewards_submission_hash)
		                  WHERE rs.token_address = $1 AND rs.kind IN ('for_all', 'for_all_earners')
		                    AND rs.start_timestamp < $2 AND rs.start_timestamp + rs.duration > $2 - 7 * 86400)`, token, end); err != nil {
		t.Fatal(err)
	}
	apy := func(weekly *big.Rat, eth float64) float64 {
		w, _ := weekly.Float64()
		return w * 0.9 * tvl.Price * 365 / 7 * 100 / eth
	}

	type answer struct {
		EigenStrategyApy, EthAndLstStrategiesApy, AggregateApy, TotalWeeklyRewardsEigen string
		WeeklyRewardsEigen                                                              struct{ EigenStrategy, EthAndLstStrategies string }
	}
	num := func(s string) float64 {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%q is not a number", s)
		}
		return f
	}
	var plain answer
	c.okEE(t, "/rewards/programmatic-incentives", &plain)
	for _, g := range []struct {
		name string
		got  string
		want float64
	}{
		{"eigenStrategyApy", plain.EigenStrategyApy, apy(weekly[true], tvl.Eigen)},
		{"ethAndLstStrategiesApy", plain.EthAndLstStrategiesApy, apy(weekly[false], tvl.ETH)},
	} {
		if got := num(g.got); math.Abs(got-g.want) > 1e-6*g.want+1e-8 || got <= 0 {
			t.Errorf("%s %s, want %v", g.name, g.got, g.want)
		}
	}
	if plain.AggregateApy != "" || plain.TotalWeeklyRewardsEigen != "" ||
		plain.WeeklyRewardsEigen.EigenStrategy != "0" || plain.WeeklyRewardsEigen.EthAndLstStrategies != "0" {
		t.Errorf("without holdings: %+v", plain)
	}

	// Holdings earn in proportion to their ETH value; one group's alone
	// earn at its APY.
	const eigenToken, stETH = "0xec53bf9167f50cdeb3ae105f56099aaab9061f83", "0xae7ab96520de3a18e5e111b5eaab095312d7fe84"
	if token != eigenToken {
		t.Fatalf("the demo's incentives are in %s, not EIGEN", token)
	}
	holdings := func(amounts ...string) string {
		return "/rewards/programmatic-incentives?tokenAddresses=" + eigenToken + "," + stETH + "&amounts=" + strings.Join(amounts, ",")
	}
	var eigenOnly, ethOnly, both, doubled answer
	c.okEE(t, holdings("1000000000000000000000", "0"), &eigenOnly)
	c.okEE(t, holdings("0", "5000000000000000000"), &ethOnly)
	c.okEE(t, holdings("1000000000000000000000", "5000000000000000000"), &both)
	c.okEE(t, holdings("2000000000000000000000", "10000000000000000000"), &doubled)
	if got, want := num(eigenOnly.AggregateApy), num(plain.EigenStrategyApy); math.Abs(got-want) > 1e-6*want {
		t.Errorf("EIGEN alone earns %v%%, the EIGEN APY is %v%%", got, want)
	}
	if got, want := num(ethOnly.AggregateApy), num(plain.EthAndLstStrategiesApy); math.Abs(got-want) > 1e-6*want {
		t.Errorf("stETH alone earns %v%%, the ETH and LST APY is %v%%", got, want)
	}
	if both.WeeklyRewardsEigen.EigenStrategy != eigenOnly.WeeklyRewardsEigen.EigenStrategy ||
		both.WeeklyRewardsEigen.EthAndLstStrategies != ethOnly.WeeklyRewardsEigen.EthAndLstStrategies {
		t.Errorf("together %+v; apart %+v and %+v", both.WeeklyRewardsEigen, eigenOnly.WeeklyRewardsEigen, ethOnly.WeeklyRewardsEigen)
	}
	sum := new(big.Int)
	for _, s := range []string{both.WeeklyRewardsEigen.EigenStrategy, both.WeeklyRewardsEigen.EthAndLstStrategies} {
		n, _ := new(big.Int).SetString(s, 10)
		sum.Add(sum, n)
	}
	if total, _ := new(big.Int).SetString(both.TotalWeeklyRewardsEigen, 10); total == nil || new(big.Int).Sub(total, sum).CmpAbs(big.NewInt(1)) > 0 || total.Sign() <= 0 {
		t.Errorf("total %s, groups sum to %s", both.TotalWeeklyRewardsEigen, sum)
	}
	if a, b := num(both.TotalWeeklyRewardsEigen), num(doubled.TotalWeeklyRewardsEigen); math.Abs(b-2*a) > 2 || both.AggregateApy != doubled.AggregateApy {
		t.Errorf("doubled holdings earn %s at %s%%; once %s at %s%%", doubled.TotalWeeklyRewardsEigen, doubled.AggregateApy,
			both.TotalWeeklyRewardsEigen, both.AggregateApy)
	}

	for target, word := range map[string]string{
		"/rewards/programmatic-incentives?tokenAddresses=" + eigenToken:                  "amounts",
		"/rewards/programmatic-incentives?amounts=5":                                     "amounts",
		"/rewards/programmatic-incentives?tokenAddresses=0x12&amounts=5":                 "tokenAddresses",
		"/rewards/programmatic-incentives?tokenAddresses=" + eigenToken + "&amounts=-5":  "amounts",
		"/rewards/programmatic-incentives?tokenAddresses=" + eigenToken + "&amounts=1e3": "amounts",
		"/rewards/programmatic-incentives?tokenAddresses=" + eigenToken + "&amounts=" +
			"115792089237316195423570985008687907853269984665640564039457584007913129639936": "amounts",
		"/rewards/programmatic-incentives?tokenAddresses=" + strings.Repeat(eigenToken+",", 100) + eigenToken +
			"&amounts=" + strings.Repeat("1,", 100) + "1": "tokenAddresses",
	} {
		c.failsEE(t, target, http.StatusUnprocessableEntity, "unprocessable_entity", word)
	}
}
