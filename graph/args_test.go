package graph

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/vektah/gqlparser/v2"

	"github.com/stakegraph/stakegraph/graph/model"
	"github.com/stakegraph/stakegraph/internal/derrors"
	"github.com/stakegraph/stakegraph/store"
)

func ptr[T any](v T) *T { return &v }

func TestEventRange(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	for _, tc := range []struct {
		name           string
		startAt, endAt *string
		start, end     time.Time
		invalid        bool
	}{
		{name: "neither: the 7 days ending now", start: now.Add(-7 * day), end: now},
		{name: "empty strings are absent", startAt: ptr(""), endAt: ptr(""), start: now.Add(-7 * day), end: now},
		{name: "only startAt: 7 days from it", startAt: ptr("2025-05-01T00:00:00Z"),
			start: time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC), end: time.Date(2025, 5, 8, 0, 0, 0, 0, time.UTC)},
		{name: "only startAt: until now when sooner", startAt: ptr("2025-05-30"),
			start: time.Date(2025, 5, 30, 0, 0, 0, 0, time.UTC), end: now},
		{name: "only endAt: the 7 days before it", endAt: ptr("2025-03-10T06:00:00.000Z"),
			start: time.Date(2025, 3, 3, 6, 0, 0, 0, time.UTC), end: time.Date(2025, 3, 10, 6, 0, 0, 0, time.UTC)},
		{name: "both, with zones", startAt: ptr("2025-03-01T02:00:00+02:00"), endAt: ptr("2025-03-31T00:00:00Z"),
			start: time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), end: time.Date(2025, 3, 31, 0, 0, 0, 0, time.UTC)},
		{name: "no zone is UTC", startAt: ptr("2025-03-01T00:00:00.000"), endAt: ptr("2025-03-02T00:00"),
			start: time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC), end: time.Date(2025, 3, 2, 0, 0, 0, 0, time.UTC)},
		{name: "over 30 days", startAt: ptr("2025-03-01"), endAt: ptr("2025-03-31T00:00:01Z"), invalid: true},
		{name: "endAt before startAt", startAt: ptr("2025-03-02"), endAt: ptr("2025-03-01"), invalid: true},
		{name: "startAt in the future", startAt: ptr("2025-06-02"), invalid: true},
		{name: "unparseable", startAt: ptr("1 May 2025"), invalid: true},
		{name: "impossible date", endAt: ptr("2025-02-30"), invalid: true},
	} {
		start, end, err := eventRange(tc.startAt, tc.endAt, now)
		switch {
		case tc.invalid:
			if !errors.Is(err, derrors.InvalidArgument) {
				t.Errorf("%s: err %v, want an invalid argument", tc.name, err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case !start.Equal(tc.start) || !end.Equal(tc.end):
			t.Errorf("%s: [%s, %s], want [%s, %s]", tc.name, start, end, tc.start, tc.end)
		}
	}
}

func TestHistoryRange(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	date := func(s string) time.Time {
		d, err := time.Parse(time.DateOnly, s)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, tc := range []struct {
		name                      string
		frequency, startAt, endAt *string
		from, to                  string
		bucket                    int
		invalid                   bool
	}{
		{name: "default: 31 days of 1d", from: "2025-05-02", to: "2025-06-01", bucket: 1},
		{name: "7d: 365 days", frequency: ptr("7d"), from: "2024-06-02", to: "2025-06-01", bucket: 7},
		{name: "only endAt", endAt: ptr("2025-01-31T23:00:00Z"), from: "2025-01-01", to: "2025-01-31", bucket: 1},
		{name: "only startAt: until today", startAt: ptr("2025-05-20"), from: "2025-05-20", to: "2025-06-01", bucket: 1},
		{name: "365 days of 1d", startAt: ptr("2024-06-02"), from: "2024-06-02", to: "2025-06-01", bucket: 1},
		{name: "366 days of 1d", startAt: ptr("2024-06-01"), invalid: true},
		{name: "721 days of 7d", frequency: ptr("7d"), startAt: ptr("2023-06-11"), invalid: true},
		{name: "bad frequency", frequency: ptr("1w"), invalid: true},
		{name: "endAt before startAt", startAt: ptr("2025-05-20"), endAt: ptr("2025-05-19"), invalid: true},
	} {
		from, to, bucket, err := historyRange(tc.frequency, tc.startAt, tc.endAt, now)
		switch {
		case tc.invalid:
			if !errors.Is(err, derrors.InvalidArgument) {
				t.Errorf("%s: err %v, want an invalid argument", tc.name, err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case !from.Equal(date(tc.from)) || !to.Equal(date(tc.to)) || bucket != tc.bucket:
			t.Errorf("%s: %s..%s by %d, want %s..%s by %d", tc.name, from, to, bucket, tc.from, tc.to, tc.bucket)
		}
	}
}

func TestTVLFromShares(t *testing.T) {
	shares := []store.StrategyShares{
		{StrategyAddress: "0xbeac", Symbol: "Beacon ETH", Kind: "beacon", UnderlyingValue: "10", ETHValue: "10"},
		{StrategyAddress: "0xst", Symbol: "stETH", Kind: "liquid", UnderlyingValue: "2.5", ETHValue: "2.4"},
		{StrategyAddress: "0xweth", Symbol: "WETH", Kind: "liquid", UnderlyingValue: "1", ETHValue: "1"},
		{StrategyAddress: "0xeigen", Symbol: "EIGEN", Kind: "eigen", UnderlyingValue: "1000", ETHValue: "0.5"},
		{StrategyAddress: "0xunknown", Shares: "7", UnderlyingValue: "0", ETHValue: "0"},
	}
	got := tvlFromShares(shares)
	if got.Tvl != 13.4 || got.TvlBeaconChain != 10 || got.TvlRestaking != 3.4 || got.TvlWeth != 1 {
		t.Errorf("tvl %+v", got)
	}
	// The per-strategy sums are exact, then written as float64s.
	values := func(v model.StrategyValues) map[string]float64 {
		var buf bytes.Buffer
		v.MarshalGQL(&buf)
		var m map[string]float64
		if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
			t.Fatalf("tvlStrategies %s: %v", buf.String(), err)
		}
		return m
	}
	native, eth := values(got.TvlStrategies), values(got.TvlStrategiesEth)
	if len(native) != 3 || native["EIGEN"] != 1000 || eth["stETH"] != 2.4 {
		t.Errorf("per strategy %v %v", native, eth)
	}
	if _, ok := native["Beacon ETH"]; ok {
		t.Error("beacon ETH in tvlStrategies")
	}
}

func TestChange(t *testing.T) {
	for _, tc := range []struct {
		now, then      string
		value, percent float64
	}{
		{"110", "100", 10, 10},
		{"90", "100", -10, -10},
		{"5", "0", 5, 0},
		{"", "", 0, 0},
		{"0.3", "0.2", 0.1, 50},
	} {
		c := decimalChange(tc.now, tc.then)
		if c.Value != tc.value || c.Percent != tc.percent {
			t.Errorf("change %s → %s: %+v, want %v %v%%", tc.then, tc.now, c, tc.value, tc.percent)
		}
	}
}

func TestSelectionDepth(t *testing.T) {
	schema := newSchema().Schema()
	for _, tc := range []struct {
		query string
		depth int
	}{
		{`{ metrics { tvl } }`, 2},
		{`{ avsList { data { operators { data { avs { address } } } } } }`, 6},
		{`{ avs(address: "0x0000000000000000000000000000000000000001") { ...A } } fragment A on Avs { operators { ...B } } fragment B on AvsOperatorPage { data { address } }`, 4},
		{`{ __schema { types { fields { type { ofType { ofType { ofType { name } } } } } } } }`, 0},
	} {
		doc, errs := gqlparser.LoadQuery(schema, tc.query)
		if errs != nil {
			t.Fatalf("%s: %v", tc.query, errs)
		}
		if got := selectionDepth(doc.Operations[0].SelectionSet, map[string]bool{}); got != tc.depth {
			t.Errorf("%s: depth %d, want %d", tc.query, got, tc.depth)
		}
	}
}
