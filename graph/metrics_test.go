package graph_test

import (
	"testing"
	"time"
)

type change struct{ Value, Percent float64 }

func TestMetrics(t *testing.T) {
	db := demoDB(t)
	c := newClient(t, db, testOptions())
	type countMetric struct {
		Value     int
		Change24h change
		Change7d  change
	}
	got := query[struct {
		Metrics struct {
			Tvl, TvlBeaconChain, TvlRestaking      float64
			TvlStrategies, TvlStrategiesEth        map[string]float64
			TotalAVS, TotalOperators, TotalStakers int
			RestakingTvl                           struct {
				Tvl                             float64
				TvlStrategies, TvlStrategiesEth map[string]float64
				Change24h, Change7d             change
			}
			StrategyTvl *struct {
				StrategyAddress     string
				Tvl, TvlEth         float64
				Change24h, Change7d change
			}
			UnknownStrategy  *struct{ Tvl float64 }
			TotalWithdrawals struct{ Total, Pending, Completed countMetric }
			StakerCount      struct {
				Total               int
				Change24h, Change7d change
			}
			DeploymentRatio struct {
				Ratio               float64
				Change24h, Change7d change
			}
		}
	}](c, `{ metrics {
		tvl tvlBeaconChain tvlRestaking tvlStrategies tvlStrategiesEth totalAVS totalOperators totalStakers
		restakingTvl { tvl tvlStrategies tvlStrategiesEth change24h { value percent } change7d { value percent } }
		strategyTvl(strategyAddress: "0x93c4b944d05dfe6df7645a86cd2206016c51564d") {
			strategyAddress tvl tvlEth change24h { value percent } change7d { value percent } }
		unknownStrategy: strategyTvl(strategyAddress: "0x000000000000000000000000000000000000dead") { tvl }
		totalWithdrawals {
			total { value change24h { value percent } change7d { value percent } }
			pending { value change24h { value percent } change7d { value percent } }
			completed { value change24h { value percent } change7d { value percent } } }
		stakerCount { total change24h { value percent } change7d { value percent } }
		deploymentRatio { ratio change24h { value percent } change7d { value percent } }
	} }`, nil).Metrics

	latest := testNow.Truncate(24 * time.Hour)
	snap := func(col string, daysBefore int) float64 {
		return parseFloat(t, sqlString(t, db, `SELECT COALESCE((SELECT (`+col+`)::text FROM daily_snapshots WHERE day = $1::date), '0')`,
			latest.AddDate(0, 0, -daysBefore).Format(time.DateOnly)))
	}
	if last := sqlString(t, db, `SELECT max(day)::text FROM daily_snapshots`); last != latest.Format(time.DateOnly) {
		t.Fatalf("latest snapshot %s, want %s", last, latest.Format(time.DateOnly))
	}
	checkChange := func(what string, col string, ch24, ch7 change) {
		t.Helper()
		now := snap(col, 0)
		for _, c := range []struct {
			days int
			got  change
		}{{1, ch24}, {7, ch7}} {
			then := snap(col, c.days)
			wantPct := 0.0
			if then != 0 {
				wantPct = 100 * (now - then) / then
			}
			if !near(c.got.Value, now-then) || !near(c.got.Percent, wantPct) {
				t.Errorf("%s change over %d days: %+v, want value %v percent %v", what, c.days, c.got, now-then, wantPct)
			}
		}
	}

	if got.TotalStakers != int(snap("total_stakers", 0)) || got.TotalAVS != int(snap("total_avs", 0)) ||
		got.TotalOperators != int(snap("total_operators", 0)) || got.TotalAVS == 0 {
		t.Errorf("totals %d %d %d", got.TotalAVS, got.TotalOperators, got.TotalStakers)
	}
	if !near(got.Tvl, snap("tvl_eth", 0)) || !near(got.TvlBeaconChain, snap("tvl_beacon_chain", 0)) ||
		!near(got.TvlRestaking, snap("tvl_restaking", 0)) || !near(got.Tvl, got.TvlBeaconChain+got.TvlRestaking) {
		t.Errorf("tvl %v beacon %v restaking %v", got.Tvl, got.TvlBeaconChain, got.TvlRestaking)
	}
	var restaking float64
	for symbol, eth := range got.TvlStrategiesEth {
		if symbol == "Beacon ETH" {
			t.Errorf("tvlStrategiesEth lists beacon ETH")
		}
		if symbol != "EIGEN" {
			restaking += eth
		}
	}
	if !near(restaking, got.TvlRestaking) || len(got.TvlStrategies) != len(got.TvlStrategiesEth) || len(got.TvlStrategies) < 10 {
		t.Errorf("per-strategy TVL %v does not add up to tvlRestaking %v", got.TvlStrategiesEth, got.TvlRestaking)
	}

	r := got.RestakingTvl
	if r.Tvl != got.TvlRestaking || len(r.TvlStrategies) != len(got.TvlStrategies) {
		t.Errorf("restakingTvl %+v", r)
	}
	checkChange("restaking tvl", "tvl_restaking", r.Change24h, r.Change7d)
	checkChange("stakers", "total_stakers", got.StakerCount.Change24h, got.StakerCount.Change7d)
	checkChange("deployment ratio", "deployment_ratio", got.DeploymentRatio.Change24h, got.DeploymentRatio.Change7d)
	checkChange("withdrawals", "total_withdrawals", got.TotalWithdrawals.Total.Change24h, got.TotalWithdrawals.Total.Change7d)
	checkChange("completed withdrawals", "completed_withdrawals", got.TotalWithdrawals.Completed.Change24h, got.TotalWithdrawals.Completed.Change7d)
	checkChange("pending withdrawals", "total_withdrawals - completed_withdrawals", got.TotalWithdrawals.Pending.Change24h, got.TotalWithdrawals.Pending.Change7d)
	w := got.TotalWithdrawals
	if w.Total.Value != sqlInt(t, db, `SELECT count(*) FROM withdrawals`) || w.Pending.Value != w.Total.Value-w.Completed.Value ||
		w.Completed.Value != sqlInt(t, db, `SELECT count(*) FROM withdrawals WHERE is_completed`) {
		t.Errorf("withdrawal counts %+v", w)
	}
	if got.StakerCount.Total != got.TotalStakers || !near(got.DeploymentRatio.Ratio, snap("deployment_ratio", 0)) ||
		got.DeploymentRatio.Ratio <= 0 || got.DeploymentRatio.Ratio > 1 {
		t.Errorf("stakerCount %+v deploymentRatio %+v", got.StakerCount, got.DeploymentRatio)
	}

	s := got.StrategyTvl
	stTvl := func(daysBefore int) float64 {
		return parseFloat(t, sqlString(t, db, `
			SELECT COALESCE((SELECT tvl::text FROM strategy_daily_snapshots WHERE strategy_address = $1 AND day = $2::date), '0')`,
			"0x93c4b944d05dfe6df7645a86cd2206016c51564d", latest.AddDate(0, 0, -daysBefore).Format(time.DateOnly)))
	}
	if s == nil || !near(s.Tvl, stTvl(0)) || !near(s.Tvl, got.TvlStrategies["stETH"]) || !near(s.TvlEth, got.TvlStrategiesEth["stETH"]) ||
		!near(s.Change24h.Value, stTvl(0)-stTvl(1)) || !near(s.Change7d.Value, stTvl(0)-stTvl(7)) {
		t.Errorf("strategyTvl(stETH) %+v", s)
	}
	if got.UnknownStrategy != nil {
		t.Errorf("strategyTvl of an unknown strategy: %+v", got.UnknownStrategy)
	}
}

type historyData struct {
	Metrics struct {
		StakerCountHistory struct {
			Data []struct {
				Timestamp string
				Value     int
			}
		}
	}
}

const historyQuery = `query($f: String, $v: CountVariant, $a: String, $b: String) {
	metrics { stakerCountHistory(frequency: $f, variant: $v, startAt: $a, endAt: $b) { data { timestamp value } } } }`

func TestStakerCountHistory(t *testing.T) {
	db := demoDB(t)
	c := newClient(t, db, testOptions())
	today := testNow.Truncate(24 * time.Hour)
	total := sqlInt(t, db, `SELECT count(*) FROM stakers`)
	stakersBefore := func(d time.Time) int {
		return sqlInt(t, db, `SELECT count(*) FROM stakers WHERE created_at < $1`, d)
	}

	for _, f := range []struct {
		frequency string
		days      int
		points    int
	}{{"", 1, 31}, {"1d", 1, 31}, {"7d", 7, 53}} {
		vars := map[string]any{}
		if f.frequency != "" {
			vars["f"] = f.frequency
		}
		cumulative := query[historyData](c, historyQuery, vars).Metrics.StakerCountHistory.Data
		vars["v"] = "discrete"
		discrete := query[historyData](c, historyQuery, vars).Metrics.StakerCountHistory.Data
		if len(cumulative) != f.points || len(discrete) != f.points {
			t.Fatalf("frequency %q: %d and %d points, want %d", f.frequency, len(cumulative), len(discrete), f.points)
		}
		first := today.AddDate(0, 0, -(f.points-1)*f.days)
		for i, p := range cumulative {
			start := first.AddDate(0, 0, i*f.days)
			if p.Timestamp != start.Format("2006-01-02T15:04:05.000Z") || discrete[i].Timestamp != p.Timestamp {
				t.Errorf("point %d at %s, want %s", i, p.Timestamp, start)
			}
			end := start.AddDate(0, 0, f.days)
			if tomorrow := today.AddDate(0, 0, 1); end.After(tomorrow) {
				end = tomorrow
			}
			if p.Value != stakersBefore(end) {
				t.Errorf("%q cumulative at %s: %d, want %d", f.frequency, p.Timestamp, p.Value, stakersBefore(end))
			}
			if want := stakersBefore(end) - stakersBefore(start); discrete[i].Value != want {
				t.Errorf("%q discrete at %s: %d, want %d", f.frequency, p.Timestamp, discrete[i].Value, want)
			}
		}
		if last := cumulative[len(cumulative)-1].Value; last != total {
			t.Errorf("%q: last cumulative value %d, want the staker count %d", f.frequency, last, total)
		}
	}

	got := query[historyData](c, historyQuery, map[string]any{"a": "2025-01-01", "b": "2025-01-10T13:00:00Z"}).Metrics.StakerCountHistory.Data
	if len(got) != 10 || got[0].Timestamp != "2025-01-01T00:00:00.000Z" {
		t.Errorf("explicit range: %d points from %v", len(got), got)
	}

	for name, vars := range map[string]map[string]any{
		"frequency":            {"f": "2d"},
		"1d over 365 days":     {"a": "2024-01-01", "b": "2025-01-01"},
		"7d over 720 days":     {"f": "7d", "a": "2023-01-01", "b": "2025-01-01"},
		"endAt before startAt": {"a": "2025-02-01", "b": "2025-01-01"},
		"unparseable":          {"a": "soon"},
	} {
		e := c.queryError(historyQuery, vars)
		if e.Extensions.Code != "unprocessable_entity" {
			t.Errorf("%s: code %q (%s)", name, e.Extensions.Code, e.Message)
		}
	}
	// The longest ranges are allowed.
	query[historyData](c, historyQuery, map[string]any{"a": "2024-01-01", "b": "2024-12-30"})
	query[historyData](c, historyQuery, map[string]any{"f": "7d", "a": "2023-06-11", "b": "2025-05-30"})
}
