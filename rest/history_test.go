package rest

import (
	"math"
	"net/http"
	"testing"
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
	for series, route := range map[string]string{"avs": "/metrics/total-avs", "operators": "/metrics/total-operators"} {
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
	for target, route := range map[string]string{
		"/metrics/historical/tvl":              "/metrics/tvl",
		"/metrics/historical/tvl/beacon-chain": "/metrics/tvl/beacon-chain",
	} {
		var now struct{ Tvl float64 }
		c.okEE(t, route, &now)
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
