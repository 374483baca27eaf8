package graph_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/graph"
	"github.com/stakegraph/stakegraph/graph/graphtest"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// The tests in this file run the slashing-era fields on the history of
// package graphtest, whose every figure is worked out by hand in its
// documentation.

// slashingDB returns a fresh copy of the graphtest history.
func slashingDB(t *testing.T) *store.DB {
	t.Helper()
	return storetest.Template(t, "graph_slashing", graphtest.Load)
}

// slashingClient returns a client of a handler over db whose clock is the
// history's.
func slashingClient(t *testing.T, db *store.DB, wait time.Duration) *client {
	t.Helper()
	return newClient(t, db, graph.Options{Now: func() time.Time { return graphtest.Now }, BatchWait: wait})
}

type allocationRecord struct {
	OperatorAddress  string
	AvsAddress       string
	OperatorSetID    int `json:"operatorSetId"`
	StrategyAddress  string
	Magnitude        string
	PendingMagnitude *string
	EffectBlock      *int
	MaxMagnitude     string
	AllocatedShares  string
	UpdatedAtBlock   int
	Operator         *struct{ Address string }
	OperatorSet      *struct{ ID int }
	Strategy         *struct{ Symbol string }
}

const allocationFields = `operatorAddress avsAddress operatorSetId strategyAddress magnitude pendingMagnitude
	effectBlock maxMagnitude allocatedShares updatedAtBlock operator { address } operatorSet { id } strategy { symbol }`

// allocation renders the figures of an allocation for comparisons.
func (a allocationRecord) String() string {
	pending := "-"
	if a.PendingMagnitude != nil && a.EffectBlock != nil {
		pending = fmt.Sprintf("%s@%d", *a.PendingMagnitude, *a.EffectBlock)
	}
	return fmt.Sprintf("%s set %d %s magnitude %s pending %s max %s stake %s block %d",
		a.OperatorAddress, a.OperatorSetID, a.StrategyAddress, a.Magnitude, pending, a.MaxMagnitude, a.AllocatedShares, a.UpdatedAtBlock)
}

type memberRecord struct {
	OperatorAddress string
	AvsAddress      string
	OperatorSetID   int `json:"operatorSetId"`
	IsActive        bool
	CreatedAtBlock  int
	UpdatedAtBlock  int
	Operator        *struct{ Address string }
	OperatorSet     *struct{ ID int }
	Allocations     []allocationRecord
}

type memberPage struct {
	Data []memberRecord
	Meta meta
}

type slashingRecord struct {
	OperatorAddress string
	AvsAddress      string
	OperatorSetID   int `json:"operatorSetId"`
	Strategies      []struct {
		StrategyAddress, WadSlashed, SharesSlashed, SharesBurned string
		Strategy                                                 *struct{ Symbol string }
	}
	Description     string
	BlockNumber     int
	LogIndex        int
	TransactionHash string
	CreatedAt       string
	Operator        *struct{ Address string }
	OperatorSet     *struct{ ID int }
}

const slashingFields = `operatorAddress avsAddress operatorSetId
	strategies { strategyAddress wadSlashed sharesSlashed sharesBurned strategy { symbol } }
	description blockNumber logIndex transactionHash createdAt operator { address } operatorSet { id }`

// String renders a slashing's figures for comparisons.
func (s slashingRecord) String() string {
	var parts []string
	for _, x := range s.Strategies {
		parts = append(parts, fmt.Sprintf("%s wad %s slashed %s burned %s", x.StrategyAddress, x.WadSlashed, x.SharesSlashed, x.SharesBurned))
	}
	return fmt.Sprintf("%s by %s set %d at %d/%d %s %q: %s", s.OperatorAddress, s.AvsAddress, s.OperatorSetID,
		s.BlockNumber, s.LogIndex, s.TransactionHash, s.Description, strings.Join(parts, "; "))
}

type slashingPage struct {
	Data []slashingRecord
	Meta meta
}

type operatorSetRecord struct {
	AvsAddress     string
	ID             int
	Strategies     []string
	TotalOperators int
	CreatedAtBlock int
	CreatedAt      string
	Avs            *struct{ Address string }
	AllocatedStake []sharesRecord
	AllocatedTvl   tvlRecord
	Operators      memberPage
	All            memberPage
	Slashings      slashingPage
	Submissions    struct {
		Data []struct {
			RewardsSubmissionHash string
			Kind                  string
			OperatorSetID         *int `json:"operatorSetId"`
			Description           *string
			Operators             []struct {
				OperatorAddress, Amount string
				Operator                *struct{ Address string }
			}
			OperatorSet *struct{ ID int }
		}
		Meta meta
	}
}

const operatorSetQuery = `query($avs: Address!, $id: Int!) {
	operatorSet(avs: $avs, id: $id) {
		avsAddress id strategies totalOperators createdAtBlock createdAt avs { address }
		allocatedStake { strategyAddress shares ethValue strategy { symbol } }
		allocatedTvl { tvl tvlBeaconChain tvlRestaking tvlWETH tvlStrategies tvlStrategiesEth }
		operators { data { ...member } meta { total skip take } }
		all: operators(isActive: null, take: 100) { data { ...member } meta { total skip take } }
		slashings { data { ` + slashingFields + ` } meta { total skip take } }
		submissions: rewardsSubmissions {
			data { rewardsSubmissionHash kind operatorSetId description
			       operators { operatorAddress amount operator { address } } operatorSet { id } }
			meta { total skip take }
		}
	}
}
fragment member on OperatorSetMember {
	operatorAddress avsAddress operatorSetId isActive createdAtBlock updatedAtBlock
	operator { address } operatorSet { id } allocations { ` + allocationFields + ` }
}`

// e18 returns n × 1e18 as decimal text.
func e18(n int) string { return fmt.Sprintf("%d000000000000000000", n) }

func TestOperatorSets(t *testing.T) {
	db := slashingDB(t)
	c := slashingClient(t, db, 20*time.Millisecond)
	set := func(id int) *operatorSetRecord {
		t.Helper()
		return query[struct{ OperatorSet *operatorSetRecord }](c, operatorSetQuery, map[string]any{"avs": graphtest.AVS, "id": id}).OperatorSet
	}

	t.Run("set 1", func(t *testing.T) {
		s := set(1)
		if s == nil {
			t.Fatal("operatorSet(1) is null")
		}
		if s.AvsAddress != graphtest.AVS || s.ID != 1 || s.Avs == nil || s.Avs.Address != graphtest.AVS ||
			s.TotalOperators != 2 || s.CreatedAtBlock != 12 || s.CreatedAt != "2025-01-01T12:00:00.000Z" ||
			strings.Join(s.Strategies, ",") != graphtest.StETH+","+graphtest.Beacon {
			t.Errorf("set 1: %+v", s)
		}
		// 7.749999999999999987 stETH from OperatorA and 8 from OperatorB; 12.8 beacon ETH
		// from OperatorB. OperatorC's 1 stETH does not count: it left.
		var stake []string
		for _, x := range s.AllocatedStake {
			stake = append(stake, x.StrategyAddress+"="+x.Shares)
			if x.Strategy == nil {
				t.Errorf("allocated stake in %s has no strategy", x.StrategyAddress)
			}
		}
		if got, want := strings.Join(stake, ","), graphtest.StETH+"=15749999999999999987,"+graphtest.Beacon+"=12800000000000000000"; got != want {
			t.Errorf("allocatedStake %s, want %s", got, want)
		}
		if tvl := s.AllocatedTvl; !near(tvl.Tvl, 28.55) || !near(tvl.TvlBeaconChain, 12.8) || !near(tvl.TvlRestaking, 15.75) ||
			!near(tvl.TvlStrategies["stETH"], 15.75) || !near(tvl.TvlStrategiesEth["stETH"], 15.75) {
			t.Errorf("allocatedTvl %+v", tvl)
		}

		checkMeta(t, "active operators", s.Operators.Meta, len(s.Operators.Data), 2, 0, 12)
		checkMeta(t, "all operators", s.All.Meta, len(s.All.Data), 3, 0, 100)
		var members []string
		for _, m := range s.All.Data {
			members = append(members, fmt.Sprintf("%s %v %d-%d", m.OperatorAddress, m.IsActive, m.CreatedAtBlock, m.UpdatedAtBlock))
			if m.Operator == nil || m.Operator.Address != m.OperatorAddress || m.OperatorSet == nil || m.OperatorSet.ID != 1 ||
				m.AvsAddress != graphtest.AVS || m.OperatorSetID != 1 {
				t.Errorf("member %+v", m)
			}
		}
		if got, want := strings.Join(members, "; "), graphtest.OperatorA+" true 14-14; "+graphtest.OperatorB+" true 14-14; "+graphtest.OperatorC+" false 14-19"; got != want {
			t.Errorf("members\n got %s\nwant %s", got, want)
		}
		var allocations []string
		for _, m := range s.All.Data {
			for _, a := range m.Allocations {
				allocations = append(allocations, a.String())
				if a.Operator == nil || a.OperatorSet == nil || a.OperatorSet.ID != 1 || a.Strategy == nil {
					t.Errorf("allocation relations %+v", a)
				}
			}
		}
		want := []string{
			graphtest.OperatorA + " set 1 " + graphtest.StETH + " magnitude 250000000000000000 pending - max 600000000000000000 stake 7749999999999999987 block 22",
			graphtest.OperatorB + " set 1 " + graphtest.StETH + " magnitude 1000000000000000000 pending - max 1000000000000000000 stake 8000000000000000000 block 17",
			graphtest.OperatorB + " set 1 " + graphtest.Beacon + " magnitude 400000000000000000 pending - max 1000000000000000000 stake 12800000000000000000 block 17",
			graphtest.OperatorC + " set 1 " + graphtest.StETH + " magnitude 200000000000000000 pending - max 1000000000000000000 stake 1000000000000000000 block 17",
		}
		if got := strings.Join(allocations, "\n"); got != strings.Join(want, "\n") {
			t.Errorf("allocations\n got %s\nwant %s", got, strings.Join(want, "\n"))
		}

		checkMeta(t, "slashings", s.Slashings.Meta, len(s.Slashings.Data), 1, 0, 12)
		if got := s.Slashings.Data[0].String(); got != graphtest.OperatorA+" by "+graphtest.AVS+" set 1 at 22/4 "+graphtest.SlashTx+
			` "double signing": `+graphtest.StETH+" wad 500000000000000000 slashed 6500000000000000000 burned 7500000000000000000" {
			t.Errorf("slashing %s", got)
		}

		sub := s.Submissions
		checkMeta(t, "submissions", sub.Meta, len(sub.Data), 1, 0, 12)
		if x := sub.Data[0]; x.RewardsSubmissionHash != graphtest.SetSubmission || x.Kind != "operator_directed_opset" ||
			x.OperatorSetID == nil || *x.OperatorSetID != 1 || x.OperatorSet == nil || x.OperatorSet.ID != 1 ||
			x.Description == nil || *x.Description != "set 1 rewards" || len(x.Operators) != 2 ||
			x.Operators[0].OperatorAddress != graphtest.OperatorA || x.Operators[0].Amount != e18(4) ||
			x.Operators[1].OperatorAddress != graphtest.OperatorB || x.Operators[1].Amount != e18(6) ||
			x.Operators[0].Operator == nil || x.Operators[0].Operator.Address != graphtest.OperatorA {
			t.Errorf("set submission %+v", x)
		}
	})

	t.Run("set 2", func(t *testing.T) {
		s := set(2)
		if s == nil || s.TotalOperators != 1 || len(s.AllocatedStake) != 1 || s.AllocatedStake[0].Shares != "4650000000000000000" {
			t.Fatalf("set 2: %+v", s)
		}
		// The deallocation to 0.1 is pending until block 40.
		if len(s.Operators.Data) != 1 || len(s.Operators.Data[0].Allocations) != 1 {
			t.Fatalf("set 2 operators: %+v", s.Operators)
		}
		a := s.Operators.Data[0].Allocations[0]
		if got, want := a.String(), graphtest.OperatorA+" set 2 "+graphtest.StETH+
			" magnitude 150000000000000000 pending 100000000000000000@40 max 600000000000000000 stake 4650000000000000000 block 24"; got != want {
			t.Errorf("set 2 allocation\n got %s\nwant %s", got, want)
		}
		if len(s.Slashings.Data) != 1 || s.Slashings.Data[0].Description != "missed tasks" || s.Submissions.Meta.Total != 0 {
			t.Errorf("set 2 slashings %+v, submissions %+v", s.Slashings, s.Submissions)
		}
	})

	t.Run("lookups", func(t *testing.T) {
		if s := set(9); s != nil {
			t.Errorf("operatorSet(9) = %+v, want null", s)
		}
		unknown := query[struct{ OperatorSet *struct{ ID int } }](c, `{ operatorSet(avs: "0x000000000000000000000000000000000000dead", id: 1) { id } }`, nil)
		if unknown.OperatorSet != nil {
			t.Errorf("a set of an unknown AVS: %+v", unknown.OperatorSet)
		}
		for _, id := range []int{-1, 4294967296} {
			c.expectCode("unprocessable_entity", operatorSetQuery, map[string]any{"avs": graphtest.AVS, "id": id})
		}
		if s := query[struct{ OperatorSet *struct{ ID int } }](c, `{ operatorSet(avs: "`+graphtest.AVS+`", id: 4294967295) { id } }`, nil); s.OperatorSet != nil {
			t.Errorf("the largest id: %+v", s.OperatorSet)
		}
	})

	t.Run("lists", func(t *testing.T) {
		type setPage struct {
			Data []struct {
				AvsAddress string
				ID         int
			}
			Meta meta
		}
		got := query[struct {
			All      setPage
			OfAVS    setPage
			Paged    setPage
			None     setPage
			Avs      struct{ OperatorSets setPage }
			AvsPaged struct{ OperatorSets setPage }
		}](c, `query($avs: Address!) {
			all: operatorSets { data { avsAddress id } meta { total skip take } }
			ofAVS: operatorSets(avs: $avs) { data { avsAddress id } meta { total skip take } }
			paged: operatorSets(avs: $avs, skip: 1, take: 1) { data { avsAddress id } meta { total skip take } }
			none: operatorSets(avs: "0x000000000000000000000000000000000000dead") { data { id } meta { total skip take } }
			avs(address: $avs) { operatorSets { data { avsAddress id } meta { total skip take } } }
			avsPaged: avs(address: $avs) { operatorSets(skip: 1) { data { avsAddress id } meta { total skip take } } }
		}`, map[string]any{"avs": graphtest.AVS})
		ids := func(p setPage) string {
			var out []string
			for _, s := range p.Data {
				out = append(out, fmt.Sprintf("%s:%d", s.AvsAddress, s.ID))
			}
			return strings.Join(out, ",")
		}
		both := graphtest.AVS + ":1," + graphtest.AVS + ":2"
		for name, tc := range map[string]struct {
			p                 setPage
			want              string
			total, skip, take int
		}{
			"all":        {got.All, both, 2, 0, 12},
			"of the AVS": {got.OfAVS, both, 2, 0, 12},
			"paged":      {got.Paged, graphtest.AVS + ":2", 2, 1, 1},
			"none":       {got.None, "", 0, 0, 12},
			"Avs":        {got.Avs.OperatorSets, both, 2, 0, 12},
			"Avs paged":  {got.AvsPaged.OperatorSets, graphtest.AVS + ":2", 2, 1, 12},
		} {
			checkMeta(t, name, tc.p.Meta, len(tc.p.Data), tc.total, tc.skip, tc.take)
			if ids(tc.p) != tc.want {
				t.Errorf("%s: %s, want %s", name, ids(tc.p), tc.want)
			}
		}
		c.expectCode("unprocessable_entity", `{ operatorSets(take: 1001) { meta { total } } }`, nil)
		c.expectCode("unprocessable_entity", `{ operatorSets(skip: -1) { meta { total } } }`, nil)
	})
}

func TestOperatorSlashingFields(t *testing.T) {
	db := slashingDB(t)
	c := slashingClient(t, db, 20*time.Millisecond)
	type operatorRecord struct {
		MaxMagnitudes []struct{ StrategyAddress, MaxMagnitude string }
		Allocations   struct {
			Data []allocationRecord
			Meta meta
		}
		Paged struct {
			Data []allocationRecord
			Meta meta
		}
		OperatorSets memberPage
		AllSets      memberPage
		Slashings    slashingPage
	}
	get := func(address string) operatorRecord {
		t.Helper()
		got := query[struct{ Operator *operatorRecord }](c, `query($a: Address!) { operator(address: $a) {
			maxMagnitudes { strategyAddress maxMagnitude }
			allocations(take: 100) { data { `+allocationFields+` } meta { total skip take } }
			paged: allocations(skip: 1, take: 1) { data { `+allocationFields+` } meta { total skip take } }
			operatorSets { data { operatorAddress operatorSetId isActive allocations { allocatedShares } operatorSet { id } } meta { total skip take } }
			allSets: operatorSets(isActive: null) { data { operatorSetId isActive } meta { total skip take } }
			slashings { data { `+slashingFields+` } meta { total skip take } }
		} }`, map[string]any{"a": address})
		if got.Operator == nil {
			t.Fatalf("operator %s is null", address)
		}
		return *got.Operator
	}

	a := get(graphtest.OperatorA)
	if len(a.MaxMagnitudes) != 1 || a.MaxMagnitudes[0].StrategyAddress != graphtest.StETH || a.MaxMagnitudes[0].MaxMagnitude != "600000000000000000" {
		t.Errorf("OperatorA max magnitudes %+v, want stETH 0.6e18", a.MaxMagnitudes)
	}
	checkMeta(t, "OperatorA allocations", a.Allocations.Meta, len(a.Allocations.Data), 2, 0, 100)
	var allocations []string
	for _, x := range a.Allocations.Data {
		allocations = append(allocations, fmt.Sprintf("%d:%s", x.OperatorSetID, x.AllocatedShares))
	}
	if got := strings.Join(allocations, ","); got != "1:7749999999999999987,2:4650000000000000000" {
		t.Errorf("OperatorA allocations %s", got)
	}
	checkMeta(t, "OperatorA allocations page", a.Paged.Meta, len(a.Paged.Data), 2, 1, 1)
	if a.Paged.Data[0].OperatorSetID != 2 {
		t.Errorf("second allocation %s", a.Paged.Data[0])
	}
	checkMeta(t, "OperatorA sets", a.OperatorSets.Meta, len(a.OperatorSets.Data), 2, 0, 12)
	for i, m := range a.OperatorSets.Data {
		if m.OperatorSetID != i+1 || !m.IsActive || m.OperatorSet == nil || m.OperatorSet.ID != i+1 || len(m.Allocations) != 1 ||
			m.Allocations[0].AllocatedShares != a.Allocations.Data[i].AllocatedShares {
			t.Errorf("OperatorA membership %d: %+v", i, m)
		}
	}
	checkMeta(t, "OperatorA slashings", a.Slashings.Meta, len(a.Slashings.Data), 2, 0, 12)
	// Newest first; each slashing counts only the shares of its own events
	// in the transaction they share.
	want := []string{
		graphtest.OperatorA + " by " + graphtest.AVS + " set 2 at 22/9 " + graphtest.SlashTx + ` "missed tasks": ` +
			graphtest.StETH + " wad 500000000000000000 slashed 3900000000000000000 burned 4500000000000000000",
		graphtest.OperatorA + " by " + graphtest.AVS + " set 1 at 22/4 " + graphtest.SlashTx + ` "double signing": ` +
			graphtest.StETH + " wad 500000000000000000 slashed 6500000000000000000 burned 7500000000000000000",
	}
	for i, s := range a.Slashings.Data {
		if s.String() != want[i] {
			t.Errorf("slashing %d\n got %s\nwant %s", i, s, want[i])
		}
		if s.Operator == nil || s.OperatorSet == nil || s.OperatorSet.ID != s.OperatorSetID || s.Strategies[0].Strategy == nil ||
			s.CreatedAt != "2025-01-01T22:00:00.000Z" {
			t.Errorf("slashing %d relations %+v", i, s)
		}
	}

	// OperatorB was never slashed: 1e18 in both strategies it holds.
	b := get(graphtest.OperatorB)
	var maxes []string
	for _, m := range b.MaxMagnitudes {
		maxes = append(maxes, m.StrategyAddress+"="+m.MaxMagnitude)
	}
	if got := strings.Join(maxes, ","); got != graphtest.StETH+"="+e18(1)+","+graphtest.Beacon+"="+e18(1) {
		t.Errorf("OperatorB max magnitudes %s", got)
	}
	if b.Slashings.Meta.Total != 0 || len(b.Slashings.Data) != 0 || b.Allocations.Meta.Total != 2 {
		t.Errorf("OperatorB slashings %+v allocations %+v", b.Slashings, b.Allocations.Meta)
	}

	// OperatorC left set 1: no active membership, one inactive.
	cc := get(graphtest.OperatorC)
	checkMeta(t, "OperatorC sets", cc.OperatorSets.Meta, len(cc.OperatorSets.Data), 0, 0, 12)
	checkMeta(t, "OperatorC all sets", cc.AllSets.Meta, len(cc.AllSets.Data), 1, 0, 12)
	if cc.AllSets.Data[0].IsActive || cc.AllSets.Data[0].OperatorSetID != 1 {
		t.Errorf("OperatorC membership %+v", cc.AllSets.Data[0])
	}
}

func TestSlashingsList(t *testing.T) {
	db := slashingDB(t)
	c := slashingClient(t, db, 20*time.Millisecond)
	const q = `query($avs: Address, $operator: Address, $strategy: Address, $startAt: String, $endAt: String, $skip: Int, $take: Int) {
		slashings(avs: $avs, operator: $operator, strategy: $strategy, startAt: $startAt, endAt: $endAt, skip: $skip, take: $take) {
			data { ` + slashingFields + ` } meta { total skip take }
		}
	}`
	list := func(vars map[string]any) slashingPage {
		t.Helper()
		return query[struct{ Slashings slashingPage }](c, q, vars).Slashings
	}
	all := list(nil)
	checkMeta(t, "all", all.Meta, len(all.Data), 2, 0, 12)
	if all.Data[0].OperatorSetID != 2 || all.Data[1].OperatorSetID != 1 || all.Data[1].Strategies[0].SharesSlashed != "6500000000000000000" {
		t.Errorf("all: %v", all.Data)
	}
	slashTime := graphtest.BlockTime(22)
	for _, tc := range []struct {
		name  string
		vars  map[string]any
		total int
	}{
		{"by AVS", map[string]any{"avs": graphtest.AVS}, 2},
		{"by another AVS", map[string]any{"avs": graphtest.OperatorA}, 0},
		{"by operator", map[string]any{"operator": graphtest.OperatorA}, 2},
		{"by another operator", map[string]any{"operator": graphtest.OperatorB}, 0},
		{"by strategy", map[string]any{"strategy": graphtest.StETH}, 2},
		{"by another strategy", map[string]any{"strategy": graphtest.Beacon}, 0},
		{"from the slash", map[string]any{"startAt": slashTime.Format(time.RFC3339)}, 2},
		{"after the slash", map[string]any{"startAt": slashTime.Add(time.Second).Format(time.RFC3339)}, 0},
		{"until the slash", map[string]any{"endAt": slashTime.Format(time.RFC3339)}, 2},
		{"before the slash", map[string]any{"endAt": "2025-01-01T21:59:59Z"}, 0},
		{"on its day", map[string]any{"startAt": "2025-01-01", "endAt": "2025-01-02"}, 2},
		{"everything", map[string]any{"avs": graphtest.AVS, "operator": graphtest.OperatorA, "strategy": graphtest.StETH, "startAt": "2025-01-01"}, 2},
		{"paged", map[string]any{"skip": 1, "take": 1}, 2},
	} {
		got := list(tc.vars)
		skip, take := 0, 12
		if tc.vars["take"] != nil {
			skip, take = tc.vars["skip"].(int), tc.vars["take"].(int)
		}
		checkMeta(t, tc.name, got.Meta, len(got.Data), tc.total, skip, take)
	}
	if paged := list(map[string]any{"skip": 1, "take": 1}); paged.Data[0].OperatorSetID != 1 {
		t.Errorf("second slashing %v", paged.Data)
	}
	for _, vars := range []map[string]any{
		{"startAt": "2025-01-02", "endAt": "2025-01-01"},
		{"startAt": "yesterday"},
		{"endAt": "2025-02-30"},
		{"take": 0},
		{"take": 1001},
		{"skip": -1},
		{"avs": "0x12"},
	} {
		c.expectCode("unprocessable_entity", q, vars)
	}
}

func TestStakerWithdrawableShares(t *testing.T) {
	db := slashingDB(t)
	c := slashingClient(t, db, 20*time.Millisecond)
	type positions struct {
		Staker struct {
			Shares []struct {
				StrategyAddress    string
				Shares             string
				DepositShares      *string
				WithdrawableShares *string
				EthValue           float64
			}
			Tvl tvlRecord
		}
	}
	get := func(staker string) positions {
		t.Helper()
		return query[positions](c, `query($s: Address!) { staker(address: $s) {
			shares { strategyAddress shares depositShares withdrawableShares ethValue }
			tvl { tvl tvlBeaconChain tvlRestaking tvlStrategies }
		} }`, map[string]any{"s": staker})
	}
	render := func(p positions) string {
		var out []string
		for _, s := range p.Staker.Shares {
			if s.DepositShares == nil || s.WithdrawableShares == nil {
				t.Errorf("%s: depositShares or withdrawableShares is null", s.StrategyAddress)
				continue
			}
			if s.Shares != *s.WithdrawableShares {
				t.Errorf("%s: shares %s differ from withdrawableShares %s", s.StrategyAddress, s.Shares, *s.WithdrawableShares)
			}
			out = append(out, fmt.Sprintf("%s %s/%s", s.StrategyAddress, *s.WithdrawableShares, *s.DepositShares))
		}
		return strings.Join(out, ", ")
	}
	for _, tc := range []struct {
		staker, want string
		tvl, beacon  float64
	}{
		// 21 deposit shares × 1095238095238095236 × 0.6, each rounded down.
		{graphtest.Staker1, graphtest.StETH + " 13799999999999999973/21000000000000000000", 13.799999999999999973, 0},
		{graphtest.Staker2, graphtest.StETH + " 4800000000000000000/8000000000000000000", 4.8, 0},
		// OperatorB was never slashed; the beacon-chain factor is 0.9.
		{graphtest.Staker3, graphtest.StETH + " 8000000000000000000/8000000000000000000, " +
			graphtest.Beacon + " 28800000000000000000/32000000000000000000", 36.8, 28.8},
		{graphtest.Staker4, graphtest.StETH + " 5000000000000000000/5000000000000000000", 5, 0},
	} {
		got := get(tc.staker)
		if r := render(got); r != tc.want {
			t.Errorf("staker %s\n got %s\nwant %s", tc.staker, r, tc.want)
		}
		// The TVL counts the withdrawable shares.
		if tvl := got.Staker.Tvl; !near(tvl.Tvl, tc.tvl) || !near(tvl.TvlBeaconChain, tc.beacon) || !near(tvl.TvlRestaking, tc.tvl-tc.beacon) {
			t.Errorf("staker %s tvl %+v, want %v (beacon %v)", tc.staker, tvl, tc.tvl, tc.beacon)
		}
	}

	// Other owners' shares have no deposit and withdrawable shares.
	other := query[struct {
		Operator struct {
			Shares []struct{ DepositShares, WithdrawableShares *string }
		}
	}](c, `query($a: Address!) { operator(address: $a) { shares { depositShares withdrawableShares } } }`, map[string]any{"a": graphtest.OperatorA})
	for _, s := range other.Operator.Shares {
		if s.DepositShares != nil || s.WithdrawableShares != nil {
			t.Errorf("operator shares with staker fields: %+v", s)
		}
	}
}

func TestWithdrawalPayouts(t *testing.T) {
	db := slashingDB(t)
	c := slashingClient(t, db, 20*time.Millisecond)
	type payout struct {
		WithdrawalRoot string
		Shares         []struct{ StrategyAddress, Shares string }
		ScaledShares   *[]struct{ StrategyAddress, ScaledShares string }
		PayoutShares   []struct {
			StrategyAddress, Shares string
			EthValue                float64
			Strategy                *struct{ Symbol string }
		}
	}
	render := func(w payout) string {
		scaled := "null"
		if w.ScaledShares != nil {
			var parts []string
			for _, s := range *w.ScaledShares {
				parts = append(parts, s.StrategyAddress+"="+s.ScaledShares)
			}
			scaled = strings.Join(parts, ",")
		}
		var shares, payouts []string
		for _, s := range w.Shares {
			shares = append(shares, s.StrategyAddress+"="+s.Shares)
		}
		for _, s := range w.PayoutShares {
			payouts = append(payouts, s.StrategyAddress+"="+s.Shares)
			if s.Strategy == nil || s.Strategy.Symbol != "stETH" || !near(s.EthValue, parseFloat(t, s.Shares)/1e18) {
				t.Errorf("payout of %s: %+v", w.WithdrawalRoot, s)
			}
		}
		return fmt.Sprintf("shares %s scaled %s payout %s", strings.Join(shares, ","), scaled, strings.Join(payouts, ","))
	}
	st := graphtest.StETH
	want := map[string]string{
		// Slashable until block 21, before the slash at 22.
		graphtest.WithdrawalOne: "shares " + st + "=" + e18(2) + " scaled " + st + "=" + e18(2) + " payout " + st + "=" + e18(2),
		// Slashable until block 23: 4 × 0.6.
		graphtest.WithdrawalTwo: "shares " + st + "=" + e18(4) + " scaled " + st + "=" + e18(4) + " payout " + st + "=2400000000000000000",
		// Queued before the slashing upgrade: its shares.
		graphtest.WithdrawalThree: "shares " + st + "=" + e18(2) + " scaled null payout " + st + "=" + e18(2),
	}
	const fields = `withdrawalRoot shares { strategyAddress shares } scaledShares { strategyAddress scaledShares }
		payoutShares { strategyAddress shares ethValue strategy { symbol } }`
	for root, w := range want {
		got := query[struct{ Withdrawal payout }](c, `query($r: String!) { withdrawal(withdrawalRoot: $r) { `+fields+` } }`,
			map[string]any{"r": root}).Withdrawal
		if r := render(got); r != w {
			t.Errorf("withdrawal %s\n got %s\nwant %s", root, r, w)
		}
	}
	// The list reads the same payouts.
	list := query[struct {
		Withdrawals struct{ Data []payout }
	}](c, `{ withdrawals(take: 10) { data { `+fields+` } } }`, nil)
	if len(list.Withdrawals.Data) != 3 {
		t.Fatalf("%d withdrawals, want 3", len(list.Withdrawals.Data))
	}
	for _, w := range list.Withdrawals.Data {
		if r := render(w); r != want[w.WithdrawalRoot] {
			t.Errorf("listed withdrawal %s\n got %s\nwant %s", w.WithdrawalRoot, r, want[w.WithdrawalRoot])
		}
	}
}

func TestOperatorDirectedRewards(t *testing.T) {
	db := slashingDB(t)
	c := slashingClient(t, db, 20*time.Millisecond)
	got := query[struct {
		Avs struct {
			Rewards struct {
				TotalRewards     string
				TotalSubmissions int
				Submissions      []struct {
					RewardsSubmissionHash string
					Kind                  string
					IsForAll              bool
					OperatorSetID         *int `json:"operatorSetId"`
					Submitter             *string
					Description           *string
					TotalAmount           string
					Operators             []struct{ OperatorAddress, Amount string }
					OperatorSet           *struct{ ID int }
				}
			}
		}
	}](c, `query($a: Address!) { avs(address: $a) { rewards { totalRewards totalSubmissions submissions {
		rewardsSubmissionHash kind isForAll operatorSetId submitter description totalAmount
		operators { operatorAddress amount } operatorSet { id }
	} } } }`, map[string]any{"a": graphtest.AVS}).Avs.Rewards
	if got.TotalSubmissions != 3 || got.TotalRewards != e18(13) || len(got.Submissions) != 3 {
		t.Fatalf("rewards: %+v", got)
	}
	var rendered []string
	for _, s := range got.Submissions {
		var ops []string
		for _, o := range s.Operators {
			ops = append(ops, o.OperatorAddress+"="+o.Amount)
		}
		set := "-"
		if s.OperatorSetID != nil && s.OperatorSet != nil {
			set = fmt.Sprintf("%d/%d", *s.OperatorSetID, s.OperatorSet.ID)
		}
		meta := "-"
		if s.Submitter != nil && s.Description != nil {
			meta = *s.Submitter + " " + *s.Description
		}
		rendered = append(rendered, fmt.Sprintf("%s %s %v %s %s %s [%s]", s.RewardsSubmissionHash, s.Kind, s.IsForAll, s.TotalAmount, set, meta, strings.Join(ops, ",")))
	}
	want := []string{
		graphtest.AVSSubmission + " avs false " + e18(2) + " - - []",
		graphtest.DirectedSubmission + " operator_directed_avs false " + e18(1) + " - " + graphtest.AVS + " directed [" + graphtest.OperatorA + "=" + e18(1) + "]",
		graphtest.SetSubmission + " operator_directed_opset false " + e18(10) + " 1/1 " + graphtest.AVS + " set 1 rewards [" +
			graphtest.OperatorA + "=" + e18(4) + "," + graphtest.OperatorB + "=" + e18(6) + "]",
	}
	if g, w := strings.Join(rendered, "\n"), strings.Join(want, "\n"); g != w {
		t.Errorf("submissions\n got %s\nwant %s", g, w)
	}
}

// TestSlashingStatementsDoNotGrowWithItems walks every slashing-era relation
// from a list of operators and from a list of operator sets, for one item
// and for all of them, and checks that both cost the same small number of
// SQL statements: one batched statement per relation and level.
func TestSlashingStatementsDoNotGrowWithItems(t *testing.T) {
	db := slashingDB(t)
	c := slashingClient(t, db, 250*time.Millisecond)
	for _, tc := range []struct {
		name     string
		query    string
		one, all int
		max      int64
	}{
		// Each page asks for its total before its data: gqlgen marshals a
		// page's plain fields in order, so a total asked after the data is
		// counted once the data's whole subtree is resolved, at a time that
		// depends on the item, and the counts of items with deep and
		// shallow subtrees would not batch together.
		{"operators", `query($n: Int!) { operators(take: $n) { data {
			address
			maxMagnitudes { maxMagnitude }
			allocations(take: 5) {
				meta { total }
				data { allocatedShares strategy { symbol } operator { address }
				       operatorSet { allocatedStake { shares } allocatedTvl { tvl } operators { meta { total } } } }
			}
			operatorSets(isActive: null) { meta { total } data { isActive allocations { magnitude } operatorSet { avs { address } } } }
			slashings { meta { total } data { strategies { strategy { symbol } } operatorSet { slashings { meta { total } } } } }
		} } }`, 1, 3, 19},
		{"operator sets", `query($n: Int!) { operatorSets(take: $n) { meta { total } data {
			id avs { address }
			allocatedStake { shares strategy { symbol } }
			operators(isActive: null) { meta { total } data { operator { address } allocations { allocatedShares operatorSet { id } } } }
			slashings { meta { total } data { operator { address } strategies { strategy { symbol } } } }
			rewardsSubmissions { meta { total } data { operators { operator { address } } strategies { amount } } }
		} } }`, 1, 2, 16},
		{"withdrawals", `query($n: Int!) { withdrawals(take: $n) { data {
			withdrawalRoot scaledShares { scaledShares } payoutShares { shares strategy { symbol } }
			staker { shares { withdrawableShares } tvl { tvl } }
		} } }`, 1, 3, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(n int) int64 {
				before := db.StatementCount()
				r := c.post(tc.query, map[string]any{"n": n})
				if len(r.Errors) > 0 {
					t.Fatalf("errors: %+v", r.Errors)
				}
				return db.StatementCount() - before
			}
			one, all := run(tc.one), run(tc.all)
			if one != all {
				one = min(one, fewestStatements(5, 0, func() int64 { return run(tc.one) }))
				all = min(all, fewestStatements(5, one, func() int64 { return run(tc.all) }))
			}
			t.Logf("%d item(s): %d statements; %d: %d", tc.one, one, tc.all, all)
			if one != all {
				t.Errorf("statements grew with the number of items: %d for %d, %d for %d", one, tc.one, all, tc.all)
			}
			if all > tc.max {
				t.Errorf("%d statements, want at most %d", all, tc.max)
			}
		})
	}
}
