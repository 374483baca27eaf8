package rest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stakegraph/stakegraph/apikey"
	"github.com/stakegraph/stakegraph/graph/graphtest"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// The tests in this file run the routes over operator sets, allocations
// and slashings, and the rewards route's operator-directed submissions, on
// the slashing-era history of package graphtest (whose figures are worked
// out in its documentation), checking each response against openapi.json.

// slashingDB returns a fresh copy of the graphtest history.
func slashingDB(t *testing.T) *store.DB {
	t.Helper()
	return storetest.Template(t, "rest_slashing", graphtest.Load)
}

// exact decodes a response body keeping numbers as written, so that the
// tests compare whole response bodies exactly.
func exact(t *testing.T, r *response) map[string]any {
	t.Helper()
	var v map[string]any
	if err := decode(r.Body, &v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
	return v
}

// jsonText renders v compactly with sorted keys.
func jsonText(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// okJSON requests target, requires 200 and returns the body as compact
// JSON with sorted keys.
func (c *client) okJSON(t *testing.T, target string) string {
	t.Helper()
	r := c.get(t, target)
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s = %d %s", target, r.Status, r.Body)
	}
	return jsonText(t, exact(t, r))
}

func TestSlashingRoutes(t *testing.T) {
	c, compiled := newDifferentialClient(t, slashingDB(t), apikey.Options{}, graphtest.Now)
	t.Cleanup(func() { compiled.check(t, slashingOperations) })
	const (
		avs    = graphtest.AVS
		stETH  = graphtest.StETH
		beacon = graphtest.Beacon
		opA    = graphtest.OperatorA
		opB    = graphtest.OperatorB
		opC    = graphtest.OperatorC
		nobody = "0x00000000000000000000000000000000000000ff"
	)
	// Keys are sorted: the detail route's operators come between set1Head
	// and set1Tail.
	set1Head := `{"allocatedStake":[{"shares":"15749999999999999987","strategyAddress":"` + stETH + `"},` +
		`{"shares":"12800000000000000000","strategyAddress":"` + beacon + `"}],` +
		`"avsAddress":"` + avs + `","createdAt":"2025-01-01T12:00:00.000Z","createdAtBlock":12,"operatorSetId":1,`
	set1Tail := `"strategies":["` + stETH + `","` + beacon + `"],"totalOperators":2`
	set1 := set1Head + set1Tail
	set2 := `{"allocatedStake":[{"shares":"4650000000000000000","strategyAddress":"` + stETH + `"}],` +
		`"avsAddress":"` + avs + `","createdAt":"2025-01-01T12:00:00.000Z","createdAtBlock":12,"operatorSetId":2,` +
		`"strategies":["` + stETH + `"],"totalOperators":1`
	tvl1 := `"tvl":{"tvl":28.55,"tvlBeaconChain":12.8,"tvlRestaking":15.75,"tvlStrategies":{"stETH":15.75},"tvlStrategiesEth":{"stETH":15.75},"tvlWETH":0}`
	tvl2 := `"tvl":{"tvl":4.65,"tvlBeaconChain":0,"tvlRestaking":4.65,"tvlStrategies":{"stETH":4.65},"tvlStrategiesEth":{"stETH":4.65},"tvlWETH":0}`

	t.Run("avs operator sets", func(t *testing.T) {
		target := "/avs/" + avs + "/operator-sets"
		want := `{"data":[` + set1 + `},` + set2 + `}],"meta":{"skip":0,"take":12,"total":2}}`
		if got := c.okJSON(t, target); got != want {
			t.Errorf("GET %s\n got %s\nwant %s", target, got, want)
		}
		want = `{"data":[` + set1 + `,` + tvl1 + `},` + set2 + `,` + tvl2 + `}],"meta":{"skip":0,"take":12,"total":2}}`
		if got := c.okJSON(t, target+"?withTvl=true"); got != want {
			t.Errorf("GET %s?withTvl=true\n got %s\nwant %s", target, got, want)
		}
		want = `{"data":[` + set2 + `}],"meta":{"skip":1,"take":1,"total":2}}`
		if got := c.okJSON(t, target+"?skip=1&take=1"); got != want {
			t.Errorf("GET %s?skip=1&take=1\n got %s\nwant %s", target, got, want)
		}
		c.fails(t, "/avs/"+nobody+"/operator-sets", http.StatusNotFound, "not_found", nobody)
		c.fails(t, "/avs/0x1/operator-sets", http.StatusUnprocessableEntity, "unprocessable_entity", `"address"`)
		c.fails(t, target+"?take=0", http.StatusUnprocessableEntity, "unprocessable_entity", `"take"`)
	})

	t.Run("operator set", func(t *testing.T) {
		alloc := func(strategy, magnitude, stake string, block int) string {
			return fmt.Sprintf(`{"allocatedShares":"%s","effectBlock":null,"magnitude":"%s","maxMagnitude":"%s","pendingMagnitude":null,`+
				`"strategyAddress":"%s","updatedAt":"2025-01-01T%02d:00:00.000Z","updatedAtBlock":%d}`,
				stake, magnitude, map[bool]string{true: "600000000000000000", false: "1000000000000000000"}[block == 22], strategy, block, block)
		}
		member := func(op, allocations string) string {
			return `{"allocations":[` + allocations + `],"createdAt":"2025-01-01T14:00:00.000Z","createdAtBlock":14,"isActive":true,` +
				`"operatorAddress":"` + op + `","updatedAt":"2025-01-01T14:00:00.000Z","updatedAtBlock":14}`
		}
		operators := `"operators":{"data":[` +
			member(opA, alloc(stETH, "250000000000000000", "7749999999999999987", 22)) + `,` +
			member(opB, alloc(stETH, "1000000000000000000", "8000000000000000000", 17)+`,`+alloc(beacon, "400000000000000000", "12800000000000000000", 17)) +
			`],"meta":{"skip":0,"take":12,"total":2}}`
		target := "/operator-sets/" + avs + "/1"
		want := set1Head + operators + `,` + set1Tail + `,` + tvl1 + `}`
		if got := c.okJSON(t, target+"?withTvl=true"); got != want {
			t.Errorf("GET %s?withTvl=true\n got %s\nwant %s", target, got, want)
		}
		// skip and take page the operators.
		var paged struct {
			OperatorSetID int
			Operators     struct {
				Data []struct{ OperatorAddress string }
				Meta meta
			}
		}
		c.ok(t, target+"?skip=1&take=1", &paged)
		if paged.OperatorSetID != 1 || len(paged.Operators.Data) != 1 || paged.Operators.Data[0].OperatorAddress != opB ||
			paged.Operators.Meta != (meta{Total: 2, Skip: 1, Take: 1}) {
			t.Errorf("GET %s?skip=1&take=1: %+v", target, paged)
		}
		// Set 2's allocation has a pending deallocation.
		var set struct {
			Operators struct {
				Data []struct {
					OperatorAddress string
					Allocations     []map[string]any
				}
			}
		}
		c.ok(t, "/operator-sets/"+avs+"/2", &set)
		if len(set.Operators.Data) != 1 || set.Operators.Data[0].OperatorAddress != opA || len(set.Operators.Data[0].Allocations) != 1 {
			t.Fatalf("set 2 operators %+v", set.Operators)
		}
		if a := set.Operators.Data[0].Allocations[0]; a["pendingMagnitude"] != "100000000000000000" || a["effectBlock"] != 40.0 ||
			a["magnitude"] != "150000000000000000" || a["allocatedShares"] != "4650000000000000000" {
			t.Errorf("set 2 allocation %v", a)
		}
		c.fails(t, "/operator-sets/"+avs+"/9", http.StatusNotFound, "not_found", avs, "9")
		c.fails(t, "/operator-sets/"+nobody+"/1", http.StatusNotFound, "not_found", nobody)
		c.fails(t, "/operator-sets/"+avs+"/4294967295", http.StatusNotFound, "not_found", "4294967295")
		c.fails(t, "/operator-sets/"+avs+"/4294967296", http.StatusUnprocessableEntity, "unprocessable_entity", `"id"`)
		c.fails(t, "/operator-sets/"+avs+"/-1", http.StatusUnprocessableEntity, "unprocessable_entity", `"id"`)
		c.fails(t, "/operator-sets/avs/1", http.StatusUnprocessableEntity, "unprocessable_entity", `"avs"`)
		c.fails(t, target+"?withTvl=yes", http.StatusUnprocessableEntity, "unprocessable_entity", `"withTvl"`)
	})

	t.Run("operator allocations", func(t *testing.T) {
		target := "/operators/" + opA + "/allocations"
		want := `{"data":[` +
			`{"allocatedShares":"7749999999999999987","avsAddress":"` + avs + `","effectBlock":null,"magnitude":"250000000000000000",` +
			`"maxMagnitude":"600000000000000000","operatorSetId":1,"pendingMagnitude":null,"strategyAddress":"` + stETH + `",` +
			`"updatedAt":"2025-01-01T22:00:00.000Z","updatedAtBlock":22},` +
			`{"allocatedShares":"4650000000000000000","avsAddress":"` + avs + `","effectBlock":40,"magnitude":"150000000000000000",` +
			`"maxMagnitude":"600000000000000000","operatorSetId":2,"pendingMagnitude":"100000000000000000","strategyAddress":"` + stETH + `",` +
			`"updatedAt":"2025-01-02T00:00:00.000Z","updatedAtBlock":24}` +
			`],"meta":{"skip":0,"take":12,"total":2}}`
		if got := c.okJSON(t, target); got != want {
			t.Errorf("GET %s\n got %s\nwant %s", target, got, want)
		}
		var p page
		c.ok(t, "/operators/"+opC+"/allocations?take=1", &p)
		if p.Meta != (meta{Total: 1, Skip: 0, Take: 1}) || len(p.Data) != 1 || p.Data[0]["allocatedShares"] != "1000000000000000000" {
			t.Errorf("OperatorC allocations %+v", p)
		}
		c.ok(t, "/operators/"+opB+"/allocations?skip=5", &p)
		if p.Meta != (meta{Total: 2, Skip: 5, Take: 12}) || len(p.Data) != 0 {
			t.Errorf("OperatorB allocations beyond the end %+v", p)
		}
		c.fails(t, "/operators/"+nobody+"/allocations", http.StatusNotFound, "not_found", nobody)
		c.fails(t, "/operators/0x/allocations", http.StatusUnprocessableEntity, "unprocessable_entity", `"address"`)
	})

	t.Run("slashings", func(t *testing.T) {
		slashing := func(set, log int, slashed, burned, description string) string {
			return fmt.Sprintf(`{"avsAddress":"%s","blockNumber":22,"createdAt":"2025-01-01T22:00:00.000Z","description":"%s",`+
				`"operatorAddress":"%s","operatorSetId":%d,"strategies":[{"sharesBurned":"%s","sharesSlashed":"%s","strategyAddress":"%s",`+
				`"wadSlashed":"500000000000000000"}],"transactionHash":"%s"}`, avs, description, opA, set, burned, slashed, stETH, graphtest.SlashTx)
		}
		newer := slashing(2, 9, "3900000000000000000", "4500000000000000000", "missed tasks")
		older := slashing(1, 4, "6500000000000000000", "7500000000000000000", "double signing")
		want := `{"data":[` + newer + `,` + older + `],"meta":{"skip":0,"take":12,"total":2}}`
		if got := c.okJSON(t, "/slashings"); got != want {
			t.Errorf("GET /slashings\n got %s\nwant %s", got, want)
		}
		for target, total := range map[string]int{
			"/slashings?avsAddress=" + avs:                             2,
			"/slashings?avsAddress=" + nobody:                          0,
			"/slashings?operatorAddress=0x" + strings.ToUpper(opA[2:]): 2,
			"/slashings?operatorAddress=" + opA:                        2,
			"/slashings?operatorAddress=" + opB:                        0,
			"/slashings?strategyAddress=" + stETH:                      2,
			"/slashings?strategyAddress=" + beacon:                     0,
			"/slashings?startAt=2025-01-01T22:00:00Z":                  2,
			"/slashings?startAt=2025-01-01T22:00:01Z":                  0,
			"/slashings?endAt=2025-01-01T21:59:59.999":                 0,
			"/slashings?startAt=2025-01-01&endAt=2025-01-02":           2,
			"/slashings?operatorAddress=" + opA + "&avsAddress=" + avs + "&strategyAddress=" + stETH + "&endAt=2025-02-01": 2,
		} {
			var p page
			c.ok(t, target, &p)
			if p.Meta.Total != total || len(p.Data) != total {
				t.Errorf("GET %s: total %d, %d records; want %d", target, p.Meta.Total, len(p.Data), total)
			}
		}
		want = `{"data":[` + older + `],"meta":{"skip":1,"take":1,"total":2}}`
		if got := c.okJSON(t, "/slashings?skip=1&take=1"); got != want {
			t.Errorf("GET /slashings?skip=1&take=1\n got %s\nwant %s", got, want)
		}
		c.fails(t, "/slashings?startAt=2025-01-02&endAt=2025-01-01", http.StatusUnprocessableEntity, "unprocessable_entity", "endAt")
		c.fails(t, "/slashings?startAt=soon", http.StatusUnprocessableEntity, "unprocessable_entity", `"startAt"`)
		c.fails(t, "/slashings?operatorAddress=0x1", http.StatusUnprocessableEntity, "unprocessable_entity", `"operatorAddress"`)
		c.fails(t, "/slashings?take=1001", http.StatusUnprocessableEntity, "unprocessable_entity", `"take"`)
	})

	t.Run("rewards", func(t *testing.T) {
		// The operator-directed submissions count, and list their
		// operators; the others list none.
		var r struct {
			TotalRewards     string
			TotalSubmissions int
			Submissions      []struct {
				RewardsSubmissionHash string
				TotalAmount           string
				Operators             []struct{ OperatorAddress, TotalAmount string }
			}
		}
		c.ok(t, "/avs/"+avs+"/rewards", &r)
		var got []string
		for _, s := range r.Submissions {
			var ops []string
			for _, o := range s.Operators {
				ops = append(ops, o.OperatorAddress+"="+o.TotalAmount)
			}
			got = append(got, s.RewardsSubmissionHash+" "+s.TotalAmount+" ["+strings.Join(ops, ",")+"]")
		}
		want := []string{
			graphtest.AVSSubmission + " 2000000000000000000 []",
			graphtest.DirectedSubmission + " 1000000000000000000 [" + opA + "=1000000000000000000]",
			graphtest.SetSubmission + " 10000000000000000000 [" + opA + "=4000000000000000000," + opB + "=6000000000000000000]",
		}
		if r.TotalSubmissions != 3 || r.TotalRewards != "13000000000000000000" || strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("rewards: total %d, %s\n got %s\nwant %s", r.TotalSubmissions, r.TotalRewards, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}
