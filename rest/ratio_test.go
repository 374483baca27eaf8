package rest

import (
	"math"
	"net/http"
	"testing"

	"github.com/stakegraph/stakegraph/apikey"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// TestRestakingRatio checks GET /metrics/restaking-ratio on the demo data:
// the ratio is the TVL of GET /metrics/tvl divided by the ETH supply
// recorded last, and each change compares it with the TVL of the day
// before (or the week before) divided by the supply recorded by the end of
// that day. Without a recorded supply there is no ratio.
func TestRestakingRatio(t *testing.T) {
	db := demoDB(t)
	c, compiled := newDifferentialClient(t, db, apikey.Options{DefaultRateLimit: 1_000_000}, demoNow)
	t.Cleanup(func() { compiled.check(t, restakingRatioOperations) })

	// The demo records its supplies 30 days, 8 days, 36 hours and 2 hours
	// before demoNow (2025-06-01T12:00:00Z): 06-01 divides by the last,
	// 05-31 by the one of 05-31T00:00:00, 05-25 by the one of 05-24.
	const today, dayBefore, weekBefore = 120443512.125, 120443388.75, 120441904.5

	var tvl struct {
		Tvl                 float64
		Change24h, Change7d struct{ Value float64 }
	}
	c.okEE(t, "/metrics/tvl?withChange=true", &tvl)
	var plain struct{ Ratio float64 }
	c.okEE(t, "/metrics/restaking-ratio", &plain)
	if want := tvl.Tvl / today; !closeRel(plain.Ratio, want) || plain.Ratio <= 0 {
		t.Errorf("ratio %v, want %v / %v = %v", plain.Ratio, tvl.Tvl, today, want)
	}
	var keys map[string]any
	c.ok(t, "/metrics/restaking-ratio", &keys)
	if len(keys) != 1 {
		t.Errorf("without withChange the body has %v; want the ratio alone", keys)
	}

	var changed struct {
		Ratio               float64
		Change24h, Change7d struct{ Value, Percent float64 }
	}
	c.okEE(t, "/metrics/restaking-ratio?withChange=true", &changed)
	then24h := (tvl.Tvl - tvl.Change24h.Value) / dayBefore
	then7d := (tvl.Tvl - tvl.Change7d.Value) / weekBefore
	for _, tc := range []struct {
		name       string
		value, pct float64
		then       float64
	}{
		{"change24h", changed.Change24h.Value, changed.Change24h.Percent, then24h},
		{"change7d", changed.Change7d.Value, changed.Change7d.Percent, then7d},
	} {
		if want := changed.Ratio - tc.then; math.Abs(tc.value-want) > 1e-12 {
			t.Errorf("%s value %v, want %v", tc.name, tc.value, want)
		}
		if want := 100 * (changed.Ratio - tc.then) / tc.then; math.Abs(tc.pct-want) > 1e-6 {
			t.Errorf("%s percent %v, want %v", tc.name, tc.pct, want)
		}
	}
	c.failsEE(t, "/metrics/restaking-ratio?withChange=yes", http.StatusUnprocessableEntity, "unprocessable_entity", "withChange")

	// Without any recorded supply the ratio is unknown, which is not a
	// zero ratio.
	storetest.SQL(t, db).MustExec(`DELETE FROM eth_supply_observations`)
	storetest.SQL(t, db).MustExec(`UPDATE service_state SET data_version = data_version + 1`)
	c.failsEE(t, "/metrics/restaking-ratio", http.StatusNotFound, "not_found", "ETH supply")
}

// closeRel says whether a and b agree to 12 significant digits.
func closeRel(a, b float64) bool {
	return math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b))
}
