package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/apikey"
	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/demo/demotest"
	"github.com/stakegraph/stakegraph/graph"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// The tests in this file run every route against PostgreSQL holding the
// demo data, through the real executor and API-key middleware, and check
// each response against openapi.json.

// demoNow is the time the demo data ends at and the executor's clock.
var demoNow = demotest.Now

// demoDB returns a fresh copy of the demo database.
func demoDB(t *testing.T) *store.DB {
	t.Helper()
	return demotest.DB(t)
}

// client sends requests to a REST server over db.
type client struct {
	db  *store.DB
	srv *httptest.Server
	key string
}

func newClient(t *testing.T, db *store.DB, opts apikey.Options) *client {
	t.Helper()
	return newClientAt(t, db, opts, demoNow)
}

// newClientAt is newClient with the executor's clock at now.
func newClientAt(t *testing.T, db *store.DB, opts apikey.Options, now time.Time) *client {
	t.Helper()
	return newClientOf(t, db, opts, graph.NewExecutor(db, graph.Options{Now: func() time.Time { return now }}))
}

// newDifferentialClient is newClient whose every operation runs both as
// compiled code and through gqlgen's executor; the returned executor
// holds the comparison.
func newDifferentialClient(t *testing.T, db *store.DB, opts apikey.Options, now time.Time) (*client, *differentialExecutor) {
	t.Helper()
	d := &differentialExecutor{
		exec:     graph.NewExecutor(db, graph.Options{Now: func() time.Time { return now }}),
		compared: map[string]int{},
		seen:     map[string]bool{},
	}
	return newClientOf(t, db, opts, d), d
}

// newClientOf is newClient over exec.
func newClientOf(t *testing.T, db *store.DB, opts apikey.Options, exec Executor) *client {
	t.Helper()
	auth := apikey.New(db, opts)
	srv := httptest.NewServer(NewHandler(Config{Executor: exec, Authenticate: auth.Middleware, Version: "test"}))
	t.Cleanup(srv.Close)
	key, err := db.CreateAPIKey(context.Background(), fmt.Sprintf("rest-test-%d", time.Now().UnixNano()), nil)
	if err != nil {
		t.Fatal(err)
	}
	return &client{db: db, srv: srv, key: key}
}

// get requests target (a path and query) with the client's key, checks the
// response against openapi.json and returns it.
func (c *client) get(t *testing.T, target string) *response {
	t.Helper()
	return c.getWithKey(t, target, c.key)
}

func (c *client) getWithKey(t *testing.T, target, key string) *response {
	t.Helper()
	r := c.getUnchecked(t, target, key)
	validateResponse(t, target, r)
	plainNumbers(t, "GET "+target, r.Body)
	return r
}

// getUnchecked is getWithKey for targets that openapi.json does not
// describe, such as unknown paths.
func (c *client) getUnchecked(t *testing.T, target, key string) *response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.srv.URL+target, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("x-api-token", key)
	}
	req.Header.Set("Accept-Encoding", "gzip")
	res, err := c.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return readResponse(t, res)
}

// ok requests target, requires 200 and decodes the body into v.
func (c *client) ok(t *testing.T, target string, v any) {
	t.Helper()
	r := c.get(t, target)
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s = %d %s", target, r.Status, r.Body)
	}
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("GET %s: %v", target, err)
	}
}

// fails requests target and requires an error with status and code whose
// message contains each of words.
func (c *client) fails(t *testing.T, target string, status int, code string, words ...string) {
	t.Helper()
	r := c.get(t, target)
	gotCode, msg := errorBody(t, r)
	if r.Status != status || gotCode != code {
		t.Errorf("GET %s = %d %s; want %d %s", target, r.Status, r.Body, status, code)
		return
	}
	if strings.Contains(msg, "result") {
		t.Errorf("GET %s: message %q shows an operation's alias", target, msg)
	}
	for _, w := range words {
		if !strings.Contains(msg, w) {
			t.Errorf("GET %s: message %q does not mention %q", target, msg, w)
		}
	}
}

// Shapes decoded by the tests. Records are kept as maps too, to check
// which keys are present.
type meta struct{ Total, Skip, Take int }

type page struct {
	Data []map[string]any
	Meta meta
}

func (p page) strings(key string) []string {
	out := make([]string, len(p.Data))
	for i, d := range p.Data {
		out[i], _ = d[key].(string)
	}
	return out
}

// all fetches every record of a list route (total at most 1000).
func (c *client) all(t *testing.T, target string) page {
	t.Helper()
	var p page
	c.okEE(t, withQuery(target, "take=1000"), &p)
	if p.Meta.Total != len(p.Data) {
		t.Fatalf("GET %s: meta.total %d, %d records", target, p.Meta.Total, len(p.Data))
	}
	return p
}

func withQuery(target, q string) string {
	if strings.Contains(target, "?") {
		return target + "&" + q
	}
	return target + "?" + q
}

// checkKeys requires each record to have (want true) or lack each key.
func checkKeys(t *testing.T, target string, records []map[string]any, want bool, keys ...string) {
	t.Helper()
	for _, rec := range records {
		for _, k := range keys {
			if _, ok := rec[k]; ok != want {
				t.Fatalf("GET %s: key %q present = %v, want %v in %v", target, k, ok, want, rec)
			}
		}
	}
}

// checkPaging checks defaults and that consecutive pages are disjoint
// slices of the whole list.
func checkPaging(t *testing.T, c *client, target, key string) {
	t.Helper()
	whole := c.all(t, target)
	var def page
	c.ok(t, target, &def)
	if def.Meta != (meta{Total: whole.Meta.Total, Skip: 0, Take: 12}) || len(def.Data) != min(12, whole.Meta.Total) {
		t.Errorf("GET %s defaults: meta %+v, %d records; want total %d, skip 0, take 12", target, def.Meta, len(def.Data), whole.Meta.Total)
	}
	all := whole.strings(key)
	seen := map[string]bool{}
	for skip := 0; skip < min(len(all), 15); skip += 5 {
		var p page
		c.ok(t, withQuery(target, fmt.Sprintf("skip=%d&take=5", skip)), &p)
		if p.Meta != (meta{Total: len(all), Skip: skip, Take: 5}) {
			t.Errorf("GET %s skip %d: meta %+v", target, skip, p.Meta)
		}
		got := p.strings(key)
		if want := all[skip:min(skip+5, len(all))]; strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("GET %s skip %d: %v, want %v", target, skip, got, want)
		}
		for _, k := range got {
			if seen[k] {
				t.Errorf("GET %s: %s on two pages", target, k)
			}
			seen[k] = true
		}
	}
	var past page
	c.ok(t, withQuery(target, fmt.Sprintf("skip=%d", len(all)+3)), &past)
	if len(past.Data) != 0 || past.Meta.Total != len(all) {
		t.Errorf("GET %s past the end: %d records, total %d", target, len(past.Data), past.Meta.Total)
	}
}

// number reads a JSON number, or decimal text, as a float.
func number(t *testing.T, v any) float64 {
	t.Helper()
	switch v := v.(type) {
	case float64:
		return v
	case string:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatalf("not a number: %q", v)
		}
		return f
	}
	t.Fatalf("not a number: %v (%T)", v, v)
	return 0
}

// checkSorted requires the values of records to be in order dir.
func checkSorted(t *testing.T, target string, values []float64, dir string) {
	t.Helper()
	ok := sort.SliceIsSorted(values, func(i, j int) bool {
		if dir == "asc" {
			return values[i] < values[j]
		}
		return values[i] > values[j]
	})
	if !ok {
		t.Errorf("GET %s: not sorted %s: %v", target, dir, values)
	}
	if len(values) > 1 && values[0] == values[len(values)-1] {
		t.Errorf("GET %s: all values equal (%v); the sort is not exercised", target, values[0])
	}
}

// checkSearch checks searchByText in both modes against a name of the list.
func checkSearch(t *testing.T, c *client, target, nameKey string, names []string, withMode bool) {
	t.Helper()
	var name string
	for _, n := range names {
		if len(n) >= 6 {
			name = n
			break
		}
	}
	if name == "" {
		t.Fatalf("GET %s: no name to search for in %v", target, names)
	}
	middle := strings.ToUpper(name[2:5])
	prefix := strings.ToUpper(name[:4])

	match := func(mode, text string) []string {
		q := "searchByText=" + url.QueryEscape(text)
		if mode != "" {
			q += "&searchMode=" + mode
		}
		p := c.all(t, withQuery(target, q))
		var got []string
		for _, rec := range p.Data {
			n, addr := strings.ToLower(rec[nameKey].(string)), rec["address"].(string)
			lt := strings.ToLower(text)
			var hit bool
			if mode == "startsWith" {
				hit = strings.HasPrefix(n, lt) || strings.HasPrefix(addr, lt)
			} else {
				hit = strings.Contains(n, lt) || strings.Contains(addr, lt)
			}
			if !hit {
				t.Errorf("GET %s %s %q: %q (%s) does not match", target, mode, text, n, addr)
			}
			got = append(got, n)
		}
		return got
	}
	wantName := strings.ToLower(name)
	hasName := func(names []string) bool {
		for _, n := range names {
			if n == wantName {
				return true
			}
		}
		return false
	}
	if got := match("", middle); !hasName(got) {
		t.Errorf("GET %s: default mode (contains) %q misses %q: %v", target, middle, name, got)
	}
	if withMode {
		if got := match("contains", middle); !hasName(got) {
			t.Errorf("GET %s: contains %q misses %q", target, middle, name)
		}
		if got := match("startsWith", prefix); !hasName(got) {
			t.Errorf("GET %s: startsWith %q misses %q", target, prefix, name)
		}
		match("startsWith", middle)
	}
	if p := c.all(t, withQuery(target, "searchByText=zzzz-no-such-name-zzzz")); p.Meta.Total != 0 {
		t.Errorf("GET %s: a search for nothing found %d", target, p.Meta.Total)
	}
}

// The four subtests that take longest (whole lists and their details,
// validated against both documents) run in parallel, after the others:
// they only read.
//
// Every operation runs both as compiled code and through gqlgen's
// executor, and the two must answer byte for byte alike
// (differentialExecutor), so the routes' spread of parameters is also the
// proof that the compiled operations are gqlgen's.
func TestRoutesAgainstDemoData(t *testing.T) {
	db := demoDB(t)
	c, compiled := newDifferentialClient(t, db, apikey.Options{DefaultRateLimit: 1_000_000}, demoNow)
	t.Cleanup(func() { compiled.check(t, operationsBut(slashingOperations, restakingRatioOperations)) })

	t.Run("avs", func(t *testing.T) { testAVSList(t, c) })
	t.Run("avs_addresses", func(t *testing.T) { testAVSAddresses(t, c) })
	t.Run("avs_detail", func(t *testing.T) { testAVSDetail(t, c) })
	t.Run("avs_operators", func(t *testing.T) { testAVSOperators(t, c) })
	t.Run("avs_rewards", func(t *testing.T) { testAVSRewards(t, c) })
	t.Run("operators", func(t *testing.T) { t.Parallel(); testOperators(t, c) })
	t.Run("operator_detail", func(t *testing.T) { t.Parallel(); testOperatorDetail(t, c) })
	t.Run("operator_addresses", func(t *testing.T) { testOperatorAddresses(t, c) })
	t.Run("delegation_events", func(t *testing.T) { testDelegationEvents(t, c) })
	t.Run("withdrawals", func(t *testing.T) { testWithdrawals(t, c) })
	t.Run("withdrawal_detail", func(t *testing.T) { testWithdrawalDetail(t, c) })
	t.Run("staker_withdrawals", func(t *testing.T) { testStakerWithdrawals(t, c) })
	t.Run("staker_deposits", func(t *testing.T) { testStakerDeposits(t, c) })
	t.Run("deposits", func(t *testing.T) { testDeposits(t, c) })
	t.Run("stakers", func(t *testing.T) { testStakers(t, c) })
	t.Run("staker_detail", func(t *testing.T) { testStakerDetail(t, c) })
	t.Run("avs_stakers", func(t *testing.T) { t.Parallel(); testAVSStakers(t, c) })
	t.Run("metrics", func(t *testing.T) { testMetrics(t, c) })
	t.Run("historical_count_stakers", func(t *testing.T) { testHistoricalStakerCount(t, c) })
	t.Run("historical_counts", func(t *testing.T) { testHistoricalCounts(t, c) })
	t.Run("historical_tvl", func(t *testing.T) { testHistoricalTVL(t, c) })
	t.Run("historical_values", func(t *testing.T) { testHistoricalValues(t, c) })
	t.Run("historical_operators", func(t *testing.T) { testHistoricalOperators(t, c) })
	t.Run("historical_avs", func(t *testing.T) { t.Parallel(); testHistoricalAVS(t, c) })
	t.Run("reward_strategies", func(t *testing.T) { testRewardStrategies(t, c) })
	t.Run("event_feeds", func(t *testing.T) { testEventFeeds(t, c) })
	t.Run("operator_rewards", func(t *testing.T) { testOperatorRewards(t, c) })
	t.Run("auth", func(t *testing.T) { testAuth(t, c) })
	t.Run("rate_limit", func(t *testing.T) { testRateLimit(t, db) })
}

func testAVSList(t *testing.T, c *client) {
	const target = "/avs"
	for _, q := range []string{"", "?withTvl=false&withCuratedMetadata=false"} {
		var def page
		c.ok(t, target+q, &def)
		checkKeys(t, target+q, def.Data, false, "tvl", "curatedMetadata")
	}

	all := c.all(t, target+"?withTvl=true&withCuratedMetadata=true")
	checkKeys(t, target, all.Data, true, "tvl")
	// An AVS without curated metadata leaves the key out: EigenExplorer's
	// document declares it an optional object that is not nullable.
	curated := 0
	for _, a := range all.Data {
		cm, ok := a["curatedMetadata"]
		if !ok {
			continue
		}
		m, isObject := cm.(map[string]any)
		if !isObject {
			t.Fatalf("GET %s: curatedMetadata of %s is %v, want an object or no key", target, a["address"], cm)
		}
		curated++
		if m["avsAddress"] != a["address"] {
			t.Errorf("curated metadata of %s names %s", a["address"], m["avsAddress"])
		}
	}
	if curated == 0 || curated == len(all.Data) {
		t.Errorf("%d of %d AVSs have curated metadata; want some with and some without", curated, len(all.Data))
	}
	var tvlOnly page
	c.ok(t, target+"?withTvl=true", &tvlOnly)
	checkKeys(t, target, tvlOnly.Data, true, "tvl")
	checkKeys(t, target, tvlOnly.Data, false, "curatedMetadata")

	checkPaging(t, c, target, "address")
	checkSearch(t, c, target, "metadataName", all.strings("metadataName"), true)

	for _, tc := range []struct {
		param string
		value func(map[string]any) any
	}{
		{"sortByApy", func(a map[string]any) any { return a["maxApy"] }},
		{"sortByTvl", func(a map[string]any) any { return a["tvl"].(map[string]any)["tvl"] }},
		{"sortByTotalStakers", func(a map[string]any) any { return a["totalStakers"] }},
		{"sortByTotalOperators", func(a map[string]any) any { return a["totalOperators"] }},
	} {
		for _, dir := range []string{"asc", "desc"} {
			q := fmt.Sprintf("%s?withTvl=true&%s=%s", target, tc.param, dir)
			p := c.all(t, q)
			values := make([]float64, len(p.Data))
			for i, a := range p.Data {
				values[i] = number(t, tc.value(a))
			}
			checkSorted(t, q, values, dir)
		}
	}
	c.fails(t, target+"?sortByApy=up", http.StatusUnprocessableEntity, "unprocessable_entity", "sortByApy")

	// Each AVS's totalOperators is its operators route's meta.total.
	for _, a := range all.Data {
		var ops page
		c.ok(t, fmt.Sprintf("/avs/%s/operators?take=1", a["address"]), &ops)
		if got := int(number(t, a["totalOperators"])); got != ops.Meta.Total {
			t.Errorf("AVS %s: totalOperators %d, operators route total %d", a["address"], got, ops.Meta.Total)
		}
	}
}

func testAVSAddresses(t *testing.T, c *client) {
	const target = "/avs/addresses"
	all := c.all(t, target)
	var avs page
	c.ok(t, "/avs?take=1", &avs)
	if all.Meta.Total != avs.Meta.Total {
		t.Errorf("/avs/addresses total %d, /avs total %d", all.Meta.Total, avs.Meta.Total)
	}
	for _, item := range all.Data {
		if len(item) != 3 {
			t.Errorf("item %v: want exactly address, name and logo", item)
		}
	}
	checkPaging(t, c, target, "address")
	checkSearch(t, c, target, "name", all.strings("name"), true)
}

// busiestAVS returns the AVS with the most operators.
func busiestAVS(t *testing.T, c *client) string {
	t.Helper()
	var p page
	c.ok(t, "/avs?sortByTotalOperators=desc&take=1", &p)
	return p.Data[0]["address"].(string)
}

func testAVSOperators(t *testing.T, c *client) {
	addr := busiestAVS(t, c)
	target := "/avs/" + addr + "/operators"
	var def page
	c.ok(t, target, &def)
	checkKeys(t, target, def.Data, false, "tvl", "avsRegistrations")
	checkKeys(t, target, def.Data, true, "restakedStrategies", "maxApy")
	for _, op := range def.Data {
		if _, ok := op["maxApy"].(float64); !ok {
			t.Errorf("maxApy %v is not a number", op["maxApy"])
		}
	}
	var withTvl page
	c.ok(t, target+"?withTvl=true", &withTvl)
	checkKeys(t, target, withTvl.Data, true, "tvl")

	// The path address is case-insensitive.
	var upper page
	c.okEE(t, "/avs/0x"+strings.ToUpper(addr[2:])+"/operators", &upper)
	if upper.Meta.Total != def.Meta.Total {
		t.Errorf("mixed-case address: total %d, want %d", upper.Meta.Total, def.Meta.Total)
	}

	checkPaging(t, c, target, "address")
	all := c.all(t, target)
	checkSearch(t, c, target, "metadataName", all.strings("metadataName"), true)
	for _, dir := range []string{"asc", "desc"} {
		q := target + "?withTvl=true&sortOperatorsByTvl=" + dir
		p := c.all(t, q)
		values := make([]float64, len(p.Data))
		for i, op := range p.Data {
			values[i] = number(t, op["tvl"].(map[string]any)["tvl"])
		}
		checkSorted(t, q, values, dir)
	}

	c.fails(t, "/avs/0x00000000000000000000000000000000000000ff/operators", http.StatusNotFound, "not_found", "0x00000000000000000000000000000000000000ff")
	c.fails(t, "/avs/0x123/operators", http.StatusUnprocessableEntity, "unprocessable_entity", `"address"`)
}

func testAVSRewards(t *testing.T, c *client) {
	var avs page
	c.ok(t, "/avs?take=1000", &avs)
	type rewards struct {
		Address     string
		Submissions []struct {
			TotalAmount  string
			TokenAddress string
			Strategies   []struct{ StrategyAddress, Multiplier, Amount string }
			Operators    []struct {
				OperatorAddress, TotalAmount string
				Strategies, StrategyAmounts  []string
			}
		}
		TotalRewards     string
		TotalSubmissions int
		RewardTokens     []string
		RewardStrategies []string
	}
	rewarded, operatorSplits := 0, 0
	for _, a := range avs.Data {
		addr := a["address"].(string)
		var r rewards
		c.okEE(t, "/avs/"+addr+"/rewards", &r)
		if r.Address != addr || r.TotalSubmissions != len(r.Submissions) {
			t.Errorf("AVS %s: address %s, totalSubmissions %d, %d submissions", addr, r.Address, r.TotalSubmissions, len(r.Submissions))
		}
		if len(r.Submissions) > 0 {
			rewarded++
		}
		sum := new(big.Int)
		tokens, strategies := map[string]bool{}, map[string]bool{}
		for _, s := range r.Submissions {
			n, ok := new(big.Int).SetString(s.TotalAmount, 10)
			if !ok {
				t.Fatalf("totalAmount %q", s.TotalAmount)
			}
			sum.Add(sum, n)
			tokens[s.TokenAddress] = true
			for _, st := range s.Strategies {
				strategies[st.StrategyAddress] = true
			}
			// Each operator's amount is split across the submission's
			// strategies by multiplier, rounded down.
			for _, o := range s.Operators {
				if len(o.Strategies) != len(s.Strategies) || len(o.StrategyAmounts) != len(s.Strategies) {
					t.Fatalf("AVS %s: operator %s has %d strategies and %d amounts; the submission has %d strategies",
						addr, o.OperatorAddress, len(o.Strategies), len(o.StrategyAmounts), len(s.Strategies))
				}
				total, _ := new(big.Int).SetString(o.TotalAmount, 10)
				msum := new(big.Int)
				for _, st := range s.Strategies {
					m, _ := new(big.Int).SetString(st.Multiplier, 10)
					msum.Add(msum, m)
				}
				for i, st := range s.Strategies {
					m, _ := new(big.Int).SetString(st.Multiplier, 10)
					want := new(big.Int).Quo(new(big.Int).Mul(total, m), msum)
					if o.Strategies[i] != st.StrategyAddress || o.StrategyAmounts[i] != want.String() {
						t.Errorf("AVS %s: operator %s strategy %d is %s %s, want %s %s",
							addr, o.OperatorAddress, i, o.Strategies[i], o.StrategyAmounts[i], st.StrategyAddress, want)
					}
				}
				operatorSplits++
			}
		}
		if sum.String() != r.TotalRewards {
			t.Errorf("AVS %s: totalRewards %s, submissions sum to %s", addr, r.TotalRewards, sum)
		}
		if len(tokens) != len(r.RewardTokens) || len(strategies) != len(r.RewardStrategies) {
			t.Errorf("AVS %s: %d reward tokens and %d strategies listed, submissions use %d and %d",
				addr, len(r.RewardTokens), len(r.RewardStrategies), len(tokens), len(strategies))
		}
	}
	if rewarded == 0 || operatorSplits == 0 {
		t.Errorf("%d AVS with rewards, %d operator splits; the route is not exercised", rewarded, operatorSplits)
	}
	c.fails(t, "/avs/0x00000000000000000000000000000000000000ff/rewards", http.StatusNotFound, "not_found")
	c.fails(t, "/avs/nope/rewards", http.StatusUnprocessableEntity, "unprocessable_entity", `"address"`)
}

func testOperators(t *testing.T, c *client) {
	const target = "/operators"
	var def page
	c.ok(t, target, &def)
	checkKeys(t, target, def.Data, false, "tvl", "restakedStrategies")
	checkKeys(t, target, def.Data, true, "avsRegistrations", "maxApy")
	for _, op := range def.Data {
		if _, ok := op["maxApy"].(string); !ok {
			t.Errorf("maxApy %v is not a string", op["maxApy"])
		}
	}
	var withTvl, withoutTvl page
	c.ok(t, target+"?withTvl=true", &withTvl)
	checkKeys(t, target, withTvl.Data, true, "tvl")
	c.ok(t, target+"?withTvl=false", &withoutTvl)
	checkKeys(t, target, withoutTvl.Data, false, "tvl")

	checkPaging(t, c, target, "address")
	all := c.all(t, target)
	checkSearch(t, c, target, "metadataName", all.strings("metadataName"), false)

	for _, tc := range []struct {
		param string
		value func(map[string]any) any
	}{
		{"sortByApy", func(o map[string]any) any { return o["maxApy"] }},
		{"sortByTvl", func(o map[string]any) any { return o["tvl"].(map[string]any)["tvl"] }},
		{"sortByTotalAvs", func(o map[string]any) any { return o["totalAvs"] }},
		{"sortByTotalStakers", func(o map[string]any) any { return o["totalStakers"] }},
	} {
		for _, dir := range []string{"asc", "desc"} {
			q := fmt.Sprintf("%s?withTvl=true&%s=%s", target, tc.param, dir)
			p := c.all(t, q)
			values := make([]float64, len(p.Data))
			for i, o := range p.Data {
				values[i] = number(t, tc.value(o))
			}
			checkSorted(t, q, values, dir)
		}
	}

	// totalAvs counts the active registrations.
	for _, op := range all.Data[:min(20, len(all.Data))] {
		active := 0
		for _, reg := range op["avsRegistrations"].([]any) {
			if reg.(map[string]any)["isActive"] == true {
				active++
			}
		}
		if got := int(number(t, op["totalAvs"])); got != active {
			t.Errorf("operator %s: totalAvs %d, %d active registrations", op["address"], got, active)
		}
	}
}

// eventStaker returns the staker with the most delegation events in the
// 30 days before demoNow among those with an event in the last 3 days, so
// that the default 7-day window and the short ranges all hold events.
func eventStaker(t *testing.T, db *store.DB) string {
	t.Helper()
	var staker string
	err := storetest.SQL(t, db).Get(&staker, `
		SELECT staker_address FROM delegation_events
		WHERE block_time > $1 AND type IN ('SHARES_INCREASED', 'SHARES_DECREASED')
		GROUP BY staker_address
		HAVING max(block_time) > $2
		ORDER BY count(DISTINCT type) DESC, count(*) DESC, staker_address LIMIT 1`,
		demoNow.Add(-30*24*time.Hour), demoNow.Add(-3*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	return staker
}

type event struct {
	Tx              string
	BlockNumber     int64
	BlockTime       time.Time
	Type            string
	Args            map[string]any
	UnderlyingToken *string
	UnderlyingValue *float64
	EthValue        *float64
}

type eventPage struct {
	Data []event
	Meta meta
}

func testDelegationEvents(t *testing.T, c *client) {
	staker := eventStaker(t, c.db)
	base := "/stakers/" + staker + "/events/delegation"
	day := 24 * time.Hour
	iso := func(t time.Time) string { return url.QueryEscape(t.Format(time.RFC3339)) }
	count := func(from, to time.Time) int {
		var n int
		if err := storetest.SQL(t, c.db).Get(&n, `SELECT count(*) FROM delegation_events WHERE staker_address = $1 AND block_time BETWEEN $2 AND $3`,
			staker, from, to); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// checkRange fetches every event of q and requires them to lie within
	// [from, to], newest first, and to number as many as the database has.
	checkRange := func(q string, from, to time.Time) []event {
		t.Helper()
		var p eventPage
		c.ok(t, withQuery(q, "take=1000"), &p)
		if want := count(from, to); p.Meta.Total != want || len(p.Data) != want {
			t.Errorf("GET %s: total %d, %d events; the database has %d in [%s, %s]", q, p.Meta.Total, len(p.Data), want, from, to)
		}
		for i, e := range p.Data {
			if e.BlockTime.Before(from) || e.BlockTime.After(to) {
				t.Errorf("GET %s: event at %s outside [%s, %s]", q, e.BlockTime, from, to)
			}
			if i > 0 && (e.BlockTime.After(p.Data[i-1].BlockTime) || e.BlockNumber > p.Data[i-1].BlockNumber) {
				t.Errorf("GET %s: not newest first at %d", q, i)
			}
		}
		return p.Data
	}

	// Dates: none, only startAt, only endAt, both.
	recent := checkRange(base, demoNow.Add(-7*day), demoNow)
	if len(recent) == 0 {
		t.Fatalf("staker %s has no events in the last 7 days; the defaults are not exercised", staker)
	}
	checkRange(base+"?startAt="+iso(demoNow.Add(-20*day)), demoNow.Add(-20*day), demoNow.Add(-13*day))
	checkRange(base+"?startAt="+iso(demoNow.Add(-3*day)), demoNow.Add(-3*day), demoNow)
	checkRange(base+"?endAt="+iso(demoNow.Add(-2*day)), demoNow.Add(-9*day), demoNow.Add(-2*day))
	month := checkRange(base+"?startAt="+iso(demoNow.Add(-30*day))+"&endAt="+iso(demoNow), demoNow.Add(-30*day), demoNow)
	noZone := demoNow.Add(-10 * day).Format("2006-01-02T15:04:05.000")
	checkRange(base+"?startAt="+noZone, demoNow.Add(-10*day), demoNow.Add(-3*day))
	checkRange(base+"?startAt="+demoNow.Add(-10*day).Format("2006-01-02"), demoNow.Add(-10*day).Truncate(day), demoNow.Add(-3*day).Truncate(day))

	bad := http.StatusUnprocessableEntity
	c.fails(t, base+"?startAt="+iso(demoNow.Add(-31*day))+"&endAt="+iso(demoNow), bad, "unprocessable_entity", "30 days")
	c.fails(t, base+"?startAt="+iso(demoNow.Add(-day))+"&endAt="+iso(demoNow.Add(-2*day)), bad, "unprocessable_entity", "endAt")
	c.fails(t, base+"?startAt=last-week", bad, "unprocessable_entity", `"startAt"`)
	c.fails(t, base+"?endAt=2024-13-01", bad, "unprocessable_entity", `"endAt"`)

	// Filters.
	byType := map[string]int{}
	for _, e := range month {
		byType[e.Type]++
	}
	for typ, n := range byType {
		q := base + "?startAt=" + iso(demoNow.Add(-30*day)) + "&endAt=" + iso(demoNow) + "&take=1000&type=" + typ
		var p eventPage
		c.ok(t, q, &p)
		if p.Meta.Total != n {
			t.Errorf("GET %s: %d events, want %d", q, p.Meta.Total, n)
		}
		for _, e := range p.Data {
			if e.Type != typ {
				t.Errorf("GET %s: event of type %s", q, e.Type)
			}
		}
	}
	var share event
	for _, e := range month {
		if e.Type == "SHARES_INCREASED" || e.Type == "SHARES_DECREASED" {
			share = e
			break
		}
	}
	if share.Tx == "" {
		t.Fatalf("no share event in the last 30 days")
	}
	strategy, operator := share.Args["strategy"].(string), share.Args["operator"].(string)
	monthQ := base + "?startAt=" + iso(demoNow.Add(-30*day)) + "&endAt=" + iso(demoNow) + "&take=1000"
	for q, check := range map[string]func(e event) bool{
		monthQ + "&strategyAddress=" + strings.ToUpper(strategy[2:5]) + strategy[5:]: nil, // malformed: no 0x
		monthQ + "&strategyAddress=" + strategy:                                      func(e event) bool { return e.Args["strategy"] == strategy },
		monthQ + "&operatorAddress=" + operator:                                      func(e event) bool { return e.Args["operator"] == operator },
		monthQ + "&txHash=" + share.Tx:                                               func(e event) bool { return e.Tx == share.Tx },
	} {
		if check == nil {
			c.fails(t, q, bad, "unprocessable_entity", `"strategyAddress"`)
			continue
		}
		var p eventPage
		c.ok(t, q, &p)
		if len(p.Data) == 0 {
			t.Errorf("GET %s: no events", q)
		}
		for _, e := range p.Data {
			if !check(e) {
				t.Errorf("GET %s: %+v does not match", q, e)
			}
		}
	}

	// Toggles: token data and ETH value appear on share events only when asked.
	for _, tc := range []struct {
		query           string
		tokenData, ethV bool
	}{
		{"", false, false},
		{"&withTokenData=true", true, false},
		{"&withEthValue=true", false, true},
		{"&withTokenData=true&withEthValue=true", true, true},
		{"&withTokenData=false&withEthValue=false", false, false},
	} {
		var raw struct{ Data []map[string]any }
		c.ok(t, monthQ+tc.query, &raw)
		for _, e := range raw.Data {
			_, hasValue := e["underlyingValue"]
			_, hasEth := e["ethValue"]
			isShare := strings.HasPrefix(e["type"].(string), "SHARES_")
			if hasValue != (tc.tokenData && isShare) || hasEth != (tc.ethV && isShare) {
				t.Errorf("GET %s: %s event has underlyingValue %v, ethValue %v", monthQ+tc.query, e["type"], hasValue, hasEth)
			}
			args := e["args"].(map[string]any)
			if _, has := args["shares"]; has != isShare {
				t.Errorf("%s event: args %v", e["type"], args)
			}
		}
	}

	// Paging through the month.
	if len(month) > 6 {
		var p1, p2 eventPage
		monthPage := base + "?startAt=" + iso(demoNow.Add(-30*day)) + "&endAt=" + iso(demoNow)
		c.ok(t, monthPage+"&take=3", &p1)
		c.ok(t, monthPage+"&take=3&skip=3", &p2)
		if p1.Meta.Total != len(month) || p2.Meta.Total != len(month) || p1.Meta.Take != 3 || p2.Meta.Skip != 3 {
			t.Errorf("paging meta %+v %+v, total %d", p1.Meta, p2.Meta, len(month))
		}
		for i := range 3 {
			if p1.Data[i].Tx+fmt.Sprint(p1.Data[i].Args) != month[i].Tx+fmt.Sprint(month[i].Args) ||
				p2.Data[i].Tx+fmt.Sprint(p2.Data[i].Args) != month[3+i].Tx+fmt.Sprint(month[3+i].Args) {
				t.Errorf("pages differ from the whole list at %d", i)
			}
		}
	}

	// A staker without events has an empty list.
	var none eventPage
	c.ok(t, "/stakers/0x000000000000000000000000000000000000dead/events/delegation", &none)
	if len(none.Data) != 0 || none.Meta.Total != 0 {
		t.Errorf("unknown staker: %+v", none)
	}
}

type withdrawal struct {
	WithdrawalRoot string
	StakerAddress  string
	DelegatedTo    string
	Shares         []struct{ StrategyAddress, Shares string }
	CreatedAtBlock int64
	IsCompleted    bool
}

type withdrawalPage struct {
	Data []withdrawal
	Meta meta
}

func testWithdrawals(t *testing.T, c *client) {
	const target = "/withdrawals"
	var def withdrawalPage
	c.okEE(t, target, &def)
	if def.Meta.Skip != 0 || def.Meta.Take != 12 || len(def.Data) != 12 {
		t.Fatalf("defaults: %+v, %d records", def.Meta, len(def.Data))
	}
	for i := 1; i < len(def.Data); i++ {
		if def.Data[i].CreatedAtBlock > def.Data[i-1].CreatedAtBlock {
			t.Errorf("not newest first at %d", i)
		}
	}
	var p1, p2 withdrawalPage
	c.ok(t, target+"?take=6", &p1)
	c.ok(t, target+"?take=6&skip=6", &p2)
	for i := range 6 {
		if p1.Data[i].WithdrawalRoot != def.Data[i].WithdrawalRoot || p2.Data[i].WithdrawalRoot != def.Data[6+i].WithdrawalRoot {
			t.Errorf("pages differ from the first 12 at %d", i)
		}
	}

	total := def.Meta.Total
	counts := map[string]int{}
	for _, status := range []string{"queued", "queued_withdrawable", "completed"} {
		var p withdrawalPage
		c.ok(t, target+"?take=1000&status="+status, &p)
		counts[status] = p.Meta.Total
		for _, w := range p.Data {
			if w.IsCompleted != (status == "completed") {
				t.Errorf("status %s: withdrawal %s isCompleted %v", status, w.WithdrawalRoot, w.IsCompleted)
			}
		}
	}
	if counts["queued"]+counts["completed"] != total {
		t.Errorf("queued %d + completed %d != total %d", counts["queued"], counts["completed"], total)
	}
	if counts["queued_withdrawable"] > counts["queued"] || counts["queued_withdrawable"] == 0 || counts["queued_withdrawable"] == counts["queued"] {
		t.Errorf("queued_withdrawable %d of %d queued: want some but not all", counts["queued_withdrawable"], counts["queued"])
	}
	// queued_withdrawable: queued and past the stored minimum delay.
	var delay, head int64
	if err := storetest.SQL(t, c.db).QueryRow(`SELECT min_withdrawal_delay_blocks, head_block FROM service_state`).Scan(&delay, &head); err != nil {
		t.Fatal(err)
	}
	var withdrawable withdrawalPage
	c.ok(t, target+"?take=1000&status=queued_withdrawable", &withdrawable)
	for _, w := range withdrawable.Data {
		if w.CreatedAtBlock+delay > head {
			t.Errorf("withdrawable %s created at %d, delay %d, head %d", w.WithdrawalRoot, w.CreatedAtBlock, delay, head)
		}
	}

	// Consistency with /metrics/total-withdrawals.
	var m struct{ Total, Pending, Completed struct{ Value int } }
	c.ok(t, "/metrics/total-withdrawals", &m)
	if m.Total.Value != total || m.Pending.Value != counts["queued"] || m.Completed.Value != counts["completed"] ||
		m.Pending.Value+m.Completed.Value != m.Total.Value {
		t.Errorf("total-withdrawals %+v; list totals: all %d, queued %d, completed %d", m, total, counts["queued"], counts["completed"])
	}

	// Filters.
	w := def.Data[0]
	strategy := w.Shares[0].StrategyAddress
	for q, check := range map[string]func(withdrawal) bool{
		"stakerAddress=" + strings.ToUpper(w.StakerAddress[:2]) + w.StakerAddress[2:]: nil,
		"stakerAddress=" + w.StakerAddress:                                            func(x withdrawal) bool { return x.StakerAddress == w.StakerAddress },
		"delegatedTo=" + w.DelegatedTo:                                                func(x withdrawal) bool { return x.DelegatedTo == w.DelegatedTo },
		"strategyAddress=" + strategy: func(x withdrawal) bool {
			for _, s := range x.Shares {
				if s.StrategyAddress == strategy {
					return true
				}
			}
			return false
		},
	} {
		if check == nil {
			// 0X is not a valid prefix.
			c.fails(t, target+"?"+q, http.StatusUnprocessableEntity, "unprocessable_entity", `"stakerAddress"`)
			continue
		}
		var p withdrawalPage
		c.ok(t, target+"?take=1000&"+q, &p)
		if len(p.Data) == 0 {
			t.Errorf("%s: nothing found", q)
		}
		for _, x := range p.Data {
			if !check(x) {
				t.Errorf("%s: withdrawal %+v does not match", q, x)
			}
		}
	}
	var none withdrawalPage
	c.ok(t, target+"?stakerAddress=0x000000000000000000000000000000000000dead", &none)
	if none.Meta.Total != 0 {
		t.Errorf("unknown staker has %d withdrawals", none.Meta.Total)
	}
}

func testMetrics(t *testing.T, c *client) {
	var m struct {
		Tvl, TvlBeaconChain, TvlRestaking      float64
		TvlStrategies, TvlStrategiesEth        map[string]float64
		TotalAVS, TotalOperators, TotalStakers int
	}
	c.okEE(t, "/metrics", &m)
	var avs, ops page
	c.okEE(t, "/avs?take=1", &avs)
	c.okEE(t, "/operators?take=1", &ops)
	if m.TotalAVS != avs.Meta.Total || m.TotalOperators != ops.Meta.Total {
		t.Errorf("/metrics totalAVS %d, totalOperators %d; /avs total %d, /operators total %d", m.TotalAVS, m.TotalOperators, avs.Meta.Total, ops.Meta.Total)
	}

	// withChange: the change keys are absent unless asked for.
	for _, target := range []string{"/metrics/tvl/restaking", "/metrics/total-stakers", "/metrics/deployment-ratio",
		"/metrics/total-avs", "/metrics/total-operators", "/metrics/tvl", "/metrics/tvl/beacon-chain"} {
		for _, q := range []string{"", "?withChange=false"} {
			var v map[string]any
			c.okEE(t, target+q, &v)
			checkKeys(t, target+q, []map[string]any{v}, false, "change24h", "change7d")
		}
		var v map[string]any
		c.okEE(t, target+"?withChange=true", &v)
		checkKeys(t, target, []map[string]any{v}, true, "change24h", "change7d")
	}
	var tw map[string]map[string]any
	c.okEE(t, "/metrics/total-withdrawals", &tw)
	for k, v := range tw {
		checkKeys(t, "/metrics/total-withdrawals "+k, []map[string]any{v}, false, "change24h", "change7d")
	}
	c.okEE(t, "/metrics/total-withdrawals?withChange=true", &tw)
	for k, v := range tw {
		checkKeys(t, "/metrics/total-withdrawals "+k, []map[string]any{v}, true, "change24h", "change7d")
	}

	var restaking struct {
		Tvl                             float64
		TvlStrategies, TvlStrategiesEth map[string]float64
	}
	c.okEE(t, "/metrics/tvl/restaking", &restaking)
	if !close(restaking.Tvl, m.TvlRestaking) {
		t.Errorf("/metrics/tvl/restaking tvl %v, /metrics tvlRestaking %v", restaking.Tvl, m.TvlRestaking)
	}
	// The EIGEN strategy is in the breakdown but not in ETH totals.
	eigen := map[string]bool{}
	for _, s := range chain.Networks["mainnet"].Strategies {
		eigen[s.Symbol] = s.Kind == chain.KindEigen
	}
	sum := 0.0
	for symbol, v := range restaking.TvlStrategiesEth {
		if !eigen[symbol] {
			sum += v
		}
	}
	if !close(sum, restaking.Tvl) {
		t.Errorf("/metrics/tvl/restaking: strategies other than EIGEN sum to %v ETH, tvl %v", sum, restaking.Tvl)
	}
	var stakers struct{ Total int }
	c.okEE(t, "/metrics/total-stakers", &stakers)
	if stakers.Total != m.TotalStakers {
		t.Errorf("/metrics/total-stakers %d, /metrics totalStakers %d", stakers.Total, m.TotalStakers)
	}
	// The totals agree with /metrics.
	for target, want := range map[string]int{"/metrics/total-avs": m.TotalAVS, "/metrics/total-operators": m.TotalOperators} {
		var count struct{ Total int }
		c.okEE(t, target, &count)
		if count.Total != want {
			t.Errorf("%s %d, /metrics says %d", target, count.Total, want)
		}
	}
	for target, want := range map[string]float64{"/metrics/tvl": m.Tvl, "/metrics/tvl/beacon-chain": m.TvlBeaconChain} {
		var tvl struct{ Tvl float64 }
		c.okEE(t, target, &tvl)
		if !close(tvl.Tvl, want) || tvl.Tvl <= 0 {
			t.Errorf("%s %v, /metrics says %v", target, tvl.Tvl, want)
		}
	}
	var ratio struct{ Ratio float64 }
	c.okEE(t, "/metrics/deployment-ratio", &ratio)
	if ratio.Ratio <= 0 || ratio.Ratio > 1 {
		t.Errorf("deployment ratio %v", ratio.Ratio)
	}

	// One strategy's TVL is its entry in the breakdown.
	for _, s := range chain.Networks["mainnet"].Strategies {
		if s.Kind != chain.KindLiquid {
			continue
		}
		target := "/metrics/tvl/restaking/" + s.Address
		var one map[string]any
		c.okEE(t, target, &one)
		checkKeys(t, target, []map[string]any{one}, false, "change24h", "change7d")
		if !close(one["tvl"].(float64), restaking.TvlStrategies[s.Symbol]) || !close(one["tvlEth"].(float64), restaking.TvlStrategiesEth[s.Symbol]) {
			t.Errorf("%s: tvl %v, tvlEth %v; breakdown %v, %v", s.Symbol, one["tvl"], one["tvlEth"], restaking.TvlStrategies[s.Symbol], restaking.TvlStrategiesEth[s.Symbol])
		}
		c.okEE(t, target+"?withChange=true", &one)
		checkKeys(t, target, []map[string]any{one}, true, "change24h", "change7d")
		break
	}
	c.fails(t, "/metrics/tvl/restaking/0x00000000000000000000000000000000000000ff", http.StatusNotFound, "not_found")
	c.fails(t, "/metrics/tvl/restaking/stETH", http.StatusUnprocessableEntity, "unprocessable_entity", `"strategy"`)
}

// close reports whether a and b are equal up to floating-point rounding.
func close(a, b float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= 1e-9*max(1, a, -a, b, -b)
}

type countPoint struct {
	Timestamp time.Time
	Value     int
}

func testHistoricalStakerCount(t *testing.T, c *client) {
	const target = "/metrics/historical/count-stakers"
	day := 24 * time.Hour
	get := func(q string) []countPoint {
		t.Helper()
		var p struct{ Data []countPoint }
		c.okEE(t, target+q, &p)
		for i, pt := range p.Data {
			if !pt.Timestamp.Equal(pt.Timestamp.Truncate(day)) {
				t.Errorf("GET %s: bucket %s does not start at UTC midnight", q, pt.Timestamp)
			}
			if i > 0 && !pt.Timestamp.After(p.Data[i-1].Timestamp) {
				t.Errorf("GET %s: buckets not ascending at %d", q, i)
			}
		}
		return p.Data
	}
	var stakers struct{ Total int }
	c.ok(t, "/metrics/total-stakers", &stakers)

	daily := get("")
	if len(daily) != 31 {
		t.Errorf("default 1d: %d points, want 31", len(daily))
	}
	if last := daily[len(daily)-1]; last.Value != stakers.Total || !last.Timestamp.Equal(demoNow.Truncate(day)) {
		t.Errorf("last cumulative point %+v; want today's with total-stakers %d", last, stakers.Total)
	}
	discrete := get("?variant=discrete")
	if len(discrete) != len(daily) {
		t.Fatalf("discrete: %d points, cumulative %d", len(discrete), len(daily))
	}
	for i := 1; i < len(daily); i++ {
		if daily[i].Value-daily[i-1].Value != discrete[i].Value {
			t.Errorf("day %s: cumulative %d → %d but discrete %d", daily[i].Timestamp, daily[i-1].Value, daily[i].Value, discrete[i].Value)
		}
	}
	if c2 := get("?frequency=1d&variant=cumulative"); len(c2) != len(daily) || c2[5] != daily[5] {
		t.Errorf("explicit defaults differ from defaults")
	}

	weekly := get("?frequency=7d")
	if len(weekly) < 52 || len(weekly) > 53 {
		t.Errorf("default 7d: %d points, want a year of weeks", len(weekly))
	}
	for i := 1; i < len(weekly); i++ {
		if weekly[i].Timestamp.Sub(weekly[i-1].Timestamp) != 7*day || weekly[i].Value < weekly[i-1].Value {
			t.Errorf("weekly points %d and %d: %+v %+v", i-1, i, weekly[i-1], weekly[i])
		}
	}
	if weekly[len(weekly)-1].Value != stakers.Total {
		t.Errorf("last weekly cumulative %d, total-stakers %d", weekly[len(weekly)-1].Value, stakers.Total)
	}

	start := demoNow.Add(-60 * day).Truncate(day)
	ranged := get("?startAt=" + start.Format("2006-01-02") + "&endAt=" + demoNow.Add(-50*day).Format(time.RFC3339))
	if len(ranged) != 11 || !ranged[0].Timestamp.Equal(start) {
		t.Errorf("10-day range: %d points from %v", len(ranged), ranged)
	}

	bad := http.StatusUnprocessableEntity
	c.fails(t, target+"?startAt="+demoNow.Add(-400*day).Format("2006-01-02"), bad, "unprocessable_entity", "365")
	get("?frequency=7d&startAt=" + demoNow.Add(-700*day).Format("2006-01-02"))
	c.fails(t, target+"?frequency=7d&startAt="+demoNow.Add(-800*day).Format("2006-01-02"), bad, "unprocessable_entity", "720")
	c.fails(t, target+"?startAt="+demoNow.Add(-day).Format("2006-01-02")+"&endAt="+demoNow.Add(-3*day).Format("2006-01-02"), bad, "unprocessable_entity", "endAt")
	c.fails(t, target+"?frequency=30d", bad, "unprocessable_entity", `"frequency"`)
}

func testRewardStrategies(t *testing.T, c *client) {
	var r struct {
		Strategies []struct {
			StrategyAddress string
			Tokens          []string
		}
		Total int
	}
	c.okEE(t, "/rewards/strategies", &r)
	if r.Total != len(r.Strategies) || r.Total == 0 {
		t.Errorf("total %d, %d strategies", r.Total, len(r.Strategies))
	}
	for _, s := range r.Strategies {
		if len(s.Tokens) == 0 {
			t.Errorf("strategy %s has no tokens", s.StrategyAddress)
		}
	}
}

func testAuth(t *testing.T, c *client) {
	doc, _ := loadAPIDoc(t)
	for path := range doc.Paths.Map() {
		target := strings.NewReplacer("{address}", "0x00000000000000000000000000000000000000aa", "{strategy}", "0x93c4b944d05dfe6df7645a86cd2206016c51564d").Replace(path)
		public := path == "/health" || path == "/version" || path == "/openapi.json"
		for _, key := range []string{"", "sg_0000000000000000000000000000000000000000"} {
			r := c.getWithKey(t, target, key)
			if public {
				if r.Status != http.StatusOK {
					t.Errorf("GET %s with key %q: %d", target, key, r.Status)
				}
				continue
			}
			if code, _ := errorBody(t, r); r.Status != http.StatusUnauthorized || code != "unauthorized" {
				t.Errorf("GET %s with key %q: %d %s", target, key, r.Status, r.Body)
			}
		}
	}
	r := c.getUnchecked(t, "/no/such/route", c.key)
	if code, _ := errorBody(t, r); r.Status != http.StatusNotFound || code != "not_found" {
		t.Errorf("unknown path: %d %s", r.Status, r.Body)
	}
}

func testRateLimit(t *testing.T, db *store.DB) {
	c := newClient(t, db, apikey.Options{})
	two := 2
	key, err := db.CreateAPIKey(context.Background(), "rest-test-limited", &two)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		r := c.getWithKey(t, "/metrics", key)
		if r.Status != http.StatusOK || r.Header.Get("X-RateLimit-Limit") != "2" || r.Header.Get("X-RateLimit-Remaining") != strconv.Itoa(1-i) {
			t.Errorf("request %d: %d, limit %q, remaining %q", i+1, r.Status, r.Header.Get("X-RateLimit-Limit"), r.Header.Get("X-RateLimit-Remaining"))
		}
	}
	r := c.getWithKey(t, "/metrics", key)
	if code, _ := errorBody(t, r); r.Status != http.StatusTooManyRequests || code != "rate_limit_exceeded" {
		t.Errorf("third request: %d %s", r.Status, r.Body)
	}
	for _, h := range []string{"Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
		if r.Header.Get(h) == "" {
			t.Errorf("429 without %s", h)
		}
	}
	// The default limit applies to the other key.
	if r := c.get(t, "/metrics"); r.Status != http.StatusOK || r.Header.Get("X-RateLimit-Limit") != "100" {
		t.Errorf("default key: %d, limit %q", r.Status, r.Header.Get("X-RateLimit-Limit"))
	}
}
