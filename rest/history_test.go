package rest

import (
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/store/storetest"
)

// testHistoricalCounts checks the count series other than the stakers'
// (testHistoricalStakerCount checks that one in depth): each ends at the
// current total of its metric route, and its discrete values are the
// steps of the cumulative ones.
func testHistoricalCounts(t *testing.T, c *client) {
	var withdrawals struct {
		Total struct{ Value int }
	}
	c.okEE(t, "/metrics/total-withdrawals", &withdrawals)
	totals := map[string]int{"withdrawals": withdrawals.Total.Value}
	for series, route := range map[string]string{"avs": "/metrics/total-avs", "operators": "/metrics/total-operators", "deposits": "/metrics/total-deposits"} {
		var m struct{ Total int }
		c.okEE(t, route, &m)
		totals[series] = m.Total
	}
	for series, total := range totals {
		target := "/metrics/historical/count-" + series
		var cumulative, discrete struct{ Data []countPoint }
		c.okEE(t, target+"?frequency=1d", &cumulative)
		c.okEE(t, target+"?frequency=1d&variant=discrete", &discrete)
		n := len(cumulative.Data)
		if n != 31 || len(discrete.Data) != n {
			t.Fatalf("GET %s: %d cumulative and %d discrete points, want 31", target, n, len(discrete.Data))
		}
		if last := cumulative.Data[n-1].Value; last != total || total == 0 {
			t.Errorf("GET %s ends at %d; the current total is %d", target, last, total)
		}
		for i := 1; i < n; i++ {
			if step := cumulative.Data[i].Value - cumulative.Data[i-1].Value; step != discrete.Data[i].Value {
				t.Errorf("GET %s: %s steps by %d, discrete %d", target, cumulative.Data[i].Timestamp, step, discrete.Data[i].Value)
			}
		}
		var weekly struct{ Data []countPoint }
		c.okEE(t, target+"?frequency=7d&variant=discrete", &weekly)
		if len(weekly.Data) == 0 {
			t.Errorf("GET %s?frequency=7d: no points", target)
		}
		c.failsEE(t, target+"?frequency=2d", http.StatusUnprocessableEntity, "unprocessable_entity", "frequency")
		c.failsEE(t, target+"?variant=total", http.StatusUnprocessableEntity, "unprocessable_entity", "variant")
	}
}

// testHistoricalTVL checks the TVL series: each ends at the TVL of its
// metric route, and its discrete values are the steps of the cumulative
// ones.
func testHistoricalTVL(t *testing.T, c *client) {
	type point struct {
		Timestamp string
		TvlEth    float64
	}
	const stETH = "0x93c4b944d05dfe6df7645a86cd2206016c51564d"
	for target, route := range map[string]string{
		"/metrics/historical/tvl":                    "/metrics/tvl",
		"/metrics/historical/tvl/beacon-chain":       "/metrics/tvl/beacon-chain",
		"/metrics/historical/tvl/restaking/" + stETH: "/metrics/tvl/restaking/" + stETH,
	} {
		var now struct{ Tvl, TvlEth float64 }
		c.okEE(t, route, &now)
		if now.TvlEth != 0 {
			now.Tvl = now.TvlEth // a strategy's route has its TVL in ETH apart
		}
		var cumulative, discrete struct{ Data []point }
		c.okEE(t, target, &cumulative)
		c.okEE(t, target+"?variant=discrete", &discrete)
		n := len(cumulative.Data)
		if n != 31 || len(discrete.Data) != n {
			t.Fatalf("GET %s: %d cumulative and %d discrete points, want 31", target, n, len(discrete.Data))
		}
		if last := cumulative.Data[n-1].TvlEth; !close(last, now.Tvl) || last <= 0 {
			t.Errorf("GET %s ends at %v; %s says %v", target, last, route, now.Tvl)
		}
		for i := 1; i < n; i++ {
			if step := cumulative.Data[i].TvlEth - cumulative.Data[i-1].TvlEth; !close(step, discrete.Data[i].TvlEth) && math.Abs(step-discrete.Data[i].TvlEth) > 1e-6 {
				t.Errorf("GET %s: %s steps by %v, discrete %v", target, cumulative.Data[i].Timestamp, step, discrete.Data[i].TvlEth)
			}
		}
		var weekly struct{ Data []point }
		c.okEE(t, target+"?frequency=7d&startAt="+cumulative.Data[0].Timestamp, &weekly)
		if len(weekly.Data) == 0 {
			t.Errorf("GET %s?frequency=7d: no points", target)
		}
		c.failsEE(t, target+"?frequency=30d", http.StatusUnprocessableEntity, "unprocessable_entity", "frequency")
	}
}

// testHistoricalValues checks the deposit and withdrawal value series: the
// discrete values are the steps of the cumulative ones, the last cumulative
// value is the value of every deposit or queued withdrawal, and the deposit
// count and value that appeared over the range are those of SQL.
func testHistoricalValues(t *testing.T, c *client) {
	type point struct {
		Timestamp time.Time
		ValueEth  float64
	}
	all := map[string]string{
		"deposits": `SELECT sum(strategy_eth(d.shares, s.shares_to_underlying, s.decimals, s.eth_price))
			FROM deposits d JOIN strategies s ON s.address = d.strategy_address WHERE d.block_time < $1`,
		"withdrawals": `SELECT sum(strategy_eth(x.shares, s.shares_to_underlying, s.decimals, s.eth_price))
			FROM withdrawals w CROSS JOIN LATERAL unnest(w.strategies, w.shares) AS x(strategy, shares)
			JOIN strategies s ON s.address = x.strategy WHERE w.created_at < $1`,
	}
	for series, query := range all {
		target := "/metrics/historical/" + series
		var cumulative, discrete struct{ Data []point }
		c.okEE(t, target, &cumulative)
		c.okEE(t, target+"?variant=discrete", &discrete)
		n := len(cumulative.Data)
		if n != 31 || len(discrete.Data) != n {
			t.Fatalf("GET %s: %d cumulative and %d discrete points, want 31", target, n, len(discrete.Data))
		}
		var want float64
		if err := storetest.SQL(t, c.db).Get(&want, query, demoNow); err != nil {
			t.Fatal(err)
		}
		if last := cumulative.Data[n-1].ValueEth; !close(last, want) || last <= 0 {
			t.Errorf("GET %s ends at %v; SQL says %v", target, last, want)
		}
		sum := 0.0
		for i := 1; i < n; i++ {
			step := cumulative.Data[i].ValueEth - cumulative.Data[i-1].ValueEth
			if !close(step, discrete.Data[i].ValueEth) && math.Abs(step-discrete.Data[i].ValueEth) > 1e-6 {
				t.Errorf("GET %s: %s steps by %v, discrete %v", target, cumulative.Data[i].Timestamp, step, discrete.Data[i].ValueEth)
			}
			sum += discrete.Data[i].ValueEth
		}
		var before float64
		if err := storetest.SQL(t, c.db).Get(&before, query, cumulative.Data[1].Timestamp); err != nil {
			t.Fatal(err)
		}
		if math.Abs(sum-(want-before)) > 1e-6*want {
			t.Errorf("GET %s: the discrete values of the last 30 days add up to %v; SQL says %v", target, sum, want-before)
		}
		c.failsEE(t, target+"?variant=sum", http.StatusUnprocessableEntity, "unprocessable_entity", "variant")
	}
	var deposits struct{ Total int }
	c.okEE(t, "/metrics/total-deposits?withChange=true", &deposits)
	var want int
	if err := storetest.SQL(t, c.db).Get(&want, `SELECT count(*) FROM deposits`); err != nil {
		t.Fatal(err)
	}
	if deposits.Total != want || want == 0 {
		t.Errorf("/metrics/total-deposits: %d; SQL counts %d", deposits.Total, want)
	}
	c.failsEE(t, "/metrics/historical/tvl/restaking/0x93c4b944d05dfe6df7645a86cd2206016c51564e", http.StatusNotFound, "not_found", "0x93c4b944d05dfe6df7645a86cd2206016c51564e")
}

// testHistoricalOperators checks one operator's series: derived from its
// events, each ends at the figures of /operators/{address}, starts at 0
// before its first event, and its discrete values are the steps of the
// cumulative ones.
func testHistoricalOperators(t *testing.T, c *client) {
	type point struct {
		Timestamp              string
		TvlEth                 float64
		TotalStakers, TotalAvs int
	}
	var ops []string
	if err := storetest.SQL(t, c.db).Select(&ops, `
		(SELECT address FROM operators ORDER BY total_stakers DESC, address LIMIT 3)
		UNION (SELECT DISTINCT operator_address FROM slashed_operator_shares ORDER BY 1 LIMIT 2)
		ORDER BY 1`); err != nil {
		t.Fatal(err)
	}
	for _, op := range ops {
		target := "/metrics/historical/operators/" + op
		var now struct {
			TotalStakers, TotalAvs int
			Tvl                    struct{ Tvl float64 }
		}
		c.okEE(t, "/operators/"+op+"?withTvl=true", &now)
		var cumulative, discrete struct{ Data []point }
		c.okEE(t, target, &cumulative)
		c.okEE(t, target+"?variant=discrete", &discrete)
		n := len(cumulative.Data)
		if n != 31 || len(discrete.Data) != n {
			t.Fatalf("GET %s: %d cumulative and %d discrete points, want 31", target, n, len(discrete.Data))
		}
		last := cumulative.Data[n-1]
		if math.Abs(last.TvlEth-now.Tvl.Tvl) > 1e-9*max(1, now.Tvl.Tvl) || last.TotalStakers != now.TotalStakers || last.TotalAvs != now.TotalAvs {
			t.Errorf("GET %s ends at %+v; /operators/%s has tvl %v, %d stakers, %d AVS", target, last, op, now.Tvl.Tvl, now.TotalStakers, now.TotalAvs)
		}
		for i := 1; i < n; i++ {
			a, b, d := cumulative.Data[i-1], cumulative.Data[i], discrete.Data[i]
			if b.TotalStakers-a.TotalStakers != d.TotalStakers || b.TotalAvs-a.TotalAvs != d.TotalAvs ||
				math.Abs(b.TvlEth-a.TvlEth-d.TvlEth) > 1e-6*max(1, b.TvlEth) {
				t.Errorf("GET %s: %s steps by %+v, discrete %+v", target, b.Timestamp, point{"", b.TvlEth - a.TvlEth, b.TotalStakers - a.TotalStakers, b.TotalAvs - a.TotalAvs}, d)
			}
		}
		var created time.Time
		if err := storetest.SQL(t, c.db).Get(&created, `SELECT LEAST(o.created_at, (SELECT min(block_time) FROM delegation_events WHERE operator_address = o.address)) FROM operators o WHERE o.address = $1`, op); err != nil {
			t.Fatal(err)
		}
		var before struct{ Data []point }
		c.okEE(t, target+"?endAt="+created.AddDate(0, 0, -1).Format("2006-01-02"), &before)
		for _, p := range before.Data {
			if p.TvlEth != 0 || p.TotalStakers != 0 || p.TotalAvs != 0 {
				t.Fatalf("GET %s before its first event: %+v", target, p)
			}
		}
	}
	c.failsEE(t, "/metrics/historical/operators/0x00000000000000000000000000000000000000ff", http.StatusNotFound, "not_found", "0x00000000000000000000000000000000000000ff")
	c.failsEE(t, "/metrics/historical/operators/0x00000000000000000000000000000000000000ff?frequency=3d", http.StatusUnprocessableEntity, "unprocessable_entity", "frequency")
}

// testHistoricalAVS checks GET /metrics/historical/avs/{address} for the
// AVS with the most stakers and those with operator sets: each series ends
// at the AVS's figures of GET /avs/{address}, its discrete values are the
// steps of the cumulative ones, and it is all zeros before the AVS's first
// operator.
func testHistoricalAVS(t *testing.T, c *client) {
	type point struct {
		Timestamp                    string
		TvlEth                       float64
		TotalStakers, TotalOperators int
	}
	var avs []string
	if err := storetest.SQL(t, c.db).Select(&avs, `
		(SELECT address FROM avs ORDER BY total_stakers DESC, address LIMIT 3)
		UNION (SELECT DISTINCT avs_address FROM operator_set_membership_events ORDER BY 1 LIMIT 2)
		ORDER BY 1`); err != nil {
		t.Fatal(err)
	}
	counted := 0
	for _, a := range avs {
		target := "/metrics/historical/avs/" + a
		var now struct {
			TotalStakers, TotalOperators int
			Tvl                          struct{ Tvl float64 }
		}
		c.okEE(t, "/avs/"+a+"?withTvl=true", &now)
		var cumulative, discrete struct{ Data []point }
		c.okEE(t, target, &cumulative)
		c.okEE(t, target+"?variant=discrete", &discrete)
		n := len(cumulative.Data)
		if n != 31 || len(discrete.Data) != n {
			t.Fatalf("GET %s: %d cumulative and %d discrete points, want 31", target, n, len(discrete.Data))
		}
		last := cumulative.Data[n-1]
		if math.Abs(last.TvlEth-now.Tvl.Tvl) > 1e-9*max(1, now.Tvl.Tvl) || last.TotalStakers != now.TotalStakers || last.TotalOperators != now.TotalOperators {
			t.Errorf("GET %s ends at %+v; /avs/%s has tvl %v, %d stakers, %d operators", target, last, a, now.Tvl.Tvl, now.TotalStakers, now.TotalOperators)
		}
		if now.TotalStakers > 0 && now.Tvl.Tvl > 0 {
			counted++
		}
		for i := 1; i < n; i++ {
			a, b, d := cumulative.Data[i-1], cumulative.Data[i], discrete.Data[i]
			if b.TotalStakers-a.TotalStakers != d.TotalStakers || b.TotalOperators-a.TotalOperators != d.TotalOperators ||
				math.Abs(b.TvlEth-a.TvlEth-d.TvlEth) > 1e-6*max(1, b.TvlEth) {
				t.Errorf("GET %s: %s steps by %+v, discrete %+v", target, b.Timestamp,
					point{"", b.TvlEth - a.TvlEth, b.TotalStakers - a.TotalStakers, b.TotalOperators - a.TotalOperators}, d)
			}
		}
		var first time.Time
		if err := storetest.SQL(t, c.db).Get(&first, `
			SELECT min(block_time) FROM (
			    SELECT block_time FROM registration_events WHERE avs_address = $1
			    UNION ALL SELECT block_time FROM operator_set_membership_events WHERE avs_address = $1) e`, a); err != nil {
			t.Fatal(err)
		}
		var before struct{ Data []point }
		c.okEE(t, target+"?endAt="+first.AddDate(0, 0, -1).Format("2006-01-02"), &before)
		for _, p := range before.Data {
			if p.TvlEth != 0 || p.TotalStakers != 0 || p.TotalOperators != 0 {
				t.Fatalf("GET %s before its first operator: %+v", target, p)
			}
		}
	}
	if counted < 2 {
		t.Errorf("only %d of the AVS checked have stakers and TVL", counted)
	}
	c.failsEE(t, "/metrics/historical/avs/0x00000000000000000000000000000000000000ff", http.StatusNotFound, "not_found", "0x00000000000000000000000000000000000000ff")
	c.failsEE(t, "/metrics/historical/avs/0x00000000000000000000000000000000000000ff?variant=sum", http.StatusUnprocessableEntity, "unprocessable_entity", "variant")
}
