package rest

import (
	"math"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/store/storetest"
)

// testStakerWithdrawals checks the per-staker withdrawal routes against
// GET /withdrawals filtered to the same staker: the same records in the
// same order, the variants splitting them by status.
func testStakerWithdrawals(t *testing.T, c *client) {
	// The staker of the newest completed withdrawal has both kinds, or at
	// least a completed one.
	var completed withdrawalPage
	c.okEE(t, "/withdrawals?status=completed&take=1", &completed)
	if len(completed.Data) == 0 {
		t.Fatal("the demo data has no completed withdrawal")
	}
	staker := completed.Data[0].StakerAddress
	base := "/stakers/" + staker + "/withdrawals"

	roots := func(p withdrawalPage) string {
		rs := make([]string, len(p.Data))
		for i, w := range p.Data {
			rs[i] = w.WithdrawalRoot
		}
		return strings.Join(rs, " ")
	}
	totals := 0
	for suffix, status := range map[string]string{"": "", "/queued": "queued", "/queued_withdrawable": "queued_withdrawable", "/completed": "completed"} {
		query := "?stakerAddress=" + staker + "&take=1000"
		if status != "" {
			query += "&status=" + status
		}
		var got, want withdrawalPage
		c.okEE(t, base+suffix+"?take=1000", &got)
		c.okEE(t, "/withdrawals"+query, &want)
		if roots(got) != roots(want) || got.Meta != want.Meta {
			t.Errorf("GET %s differs from GET /withdrawals%s:\n%s %+v\n%s %+v", base+suffix, query, roots(got), got.Meta, roots(want), want.Meta)
		}
		for _, w := range got.Data {
			if w.StakerAddress != staker || (status != "" && (status == "completed") != w.IsCompleted) {
				t.Errorf("GET %s: withdrawal %s of %s, completed %v", base+suffix, w.WithdrawalRoot, w.StakerAddress, w.IsCompleted)
			}
		}
		switch status {
		case "queued", "completed":
			totals += got.Meta.Total
		case "":
			totals -= got.Meta.Total
			if got.Meta.Total == 0 {
				t.Errorf("GET %s: no withdrawals", base)
			}
		}
	}
	if totals != 0 {
		t.Errorf("queued and completed do not add up to all of %s's withdrawals (off by %d)", staker, totals)
	}

	// Paging, and the path address in any case.
	var all, second withdrawalPage
	c.okEE(t, "/stakers/0x"+strings.ToUpper(staker[2:])+"/withdrawals?take=2", &all)
	c.okEE(t, base+"?skip=1&take=1", &second)
	if len(all.Data) > 1 && (len(second.Data) != 1 || second.Data[0].WithdrawalRoot != all.Data[1].WithdrawalRoot) {
		t.Errorf("skip=1&take=1 is not the second withdrawal")
	}
	var none withdrawalPage
	c.okEE(t, "/stakers/0x000000000000000000000000000000000000dead/withdrawals", &none)
	if len(none.Data) != 0 || none.Meta.Total != 0 {
		t.Errorf("a staker without withdrawals: %+v", none)
	}
	c.failsEE(t, "/stakers/0x1234/withdrawals", http.StatusUnprocessableEntity, "unprocessable_entity", "address", `"0x1234"`)
	c.failsEE(t, base+"/queued?take=0", http.StatusUnprocessableEntity, "unprocessable_entity", "take")
}

// testWithdrawalDetail checks GET /withdrawals/{withdrawalRoot} against the
// records of GET /withdrawals.
func testWithdrawalDetail(t *testing.T, c *client) {
	var listed page
	c.okEE(t, "/withdrawals?take=5", &listed)
	if len(listed.Data) == 0 {
		t.Fatal("the demo data has no withdrawals")
	}
	for _, w := range listed.Data {
		root := w["withdrawalRoot"].(string)
		var detail map[string]any
		c.okEE(t, "/withdrawals/"+root, &detail)
		checkAgrees(t, "withdrawal "+root, detail, w, []string{"withdrawalRoot", "nonce", "stakerAddress",
			"delegatedTo", "withdrawerAddress", "shares", "createdAtBlock", "createdAt", "updatedAtBlock", "updatedAt", "isCompleted"})
		if len(detail) != len(w) {
			t.Errorf("withdrawal %s: detail keys %d, listed %d", root, len(detail), len(w))
		}
	}
	root := listed.Data[0]["withdrawalRoot"].(string)
	var upper map[string]any
	c.okEE(t, "/withdrawals/0x"+strings.ToUpper(root[2:]), &upper)
	if upper["withdrawalRoot"] != root {
		t.Errorf("upper-case root answered %v", upper["withdrawalRoot"])
	}
	c.failsEE(t, "/withdrawals/0x"+strings.Repeat("0", 64), http.StatusNotFound, "not_found", "withdrawal")
	c.failsEE(t, "/withdrawals/0x12", http.StatusUnprocessableEntity, "unprocessable_entity", "withdrawalRoot", `"0x12"`)
}

// testStakerDeposits checks GET /stakers/{address}/deposits: newest first,
// paged consistently, each with the token it deposited.
func testStakerDeposits(t *testing.T, c *client) {
	var withdrawals withdrawalPage
	c.okEE(t, "/withdrawals?take=50", &withdrawals)
	type deposit struct {
		TransactionHash, StakerAddress, TokenAddress, StrategyAddress, Shares, CreatedAt string
		CreatedAtBlock                                                                   int64
	}
	type depositPage struct {
		Data []deposit
		Meta meta
	}
	// A staker that withdrew has deposited, unless it only restaked
	// beacon-chain ETH.
	var staker string
	var all depositPage
	for _, w := range withdrawals.Data {
		c.okEE(t, "/stakers/"+w.StakerAddress+"/deposits?take=1000", &all)
		if len(all.Data) > 1 {
			staker = w.StakerAddress
			break
		}
	}
	if staker == "" {
		t.Fatal("no staker of the newest withdrawals has two deposits")
	}
	if all.Meta.Total != len(all.Data) || all.Meta.Skip != 0 || all.Meta.Take != 1000 {
		t.Errorf("meta %+v for %d deposits", all.Meta, len(all.Data))
	}
	for i, d := range all.Data {
		if d.StakerAddress != staker || d.TokenAddress == "" || d.Shares == "" || d.TransactionHash == "" {
			t.Errorf("deposit %d: %+v", i, d)
		}
		if i > 0 && d.CreatedAtBlock > all.Data[i-1].CreatedAtBlock {
			t.Errorf("deposit %d is newer than the one before it", i)
		}
	}
	var def, second depositPage
	c.okEE(t, "/stakers/0x"+strings.ToUpper(staker[2:])+"/deposits", &def)
	if def.Meta.Take != 12 || def.Meta.Total != all.Meta.Total || len(def.Data) != min(12, len(all.Data)) || def.Data[0] != all.Data[0] {
		t.Errorf("defaults: %+v, %d records", def.Meta, len(def.Data))
	}
	c.okEE(t, "/stakers/"+staker+"/deposits?skip=1&take=1", &second)
	if len(second.Data) != 1 || second.Data[0] != all.Data[1] {
		t.Errorf("skip=1&take=1: %+v, want the second deposit", second.Data)
	}
	var none depositPage
	c.okEE(t, "/stakers/0x000000000000000000000000000000000000dead/deposits", &none)
	if len(none.Data) != 0 || none.Meta.Total != 0 {
		t.Errorf("a staker without deposits: %+v", none)
	}
	c.failsEE(t, "/stakers/0xzz/deposits", http.StatusUnprocessableEntity, "unprocessable_entity", "address")
	c.failsEE(t, "/stakers/"+staker+"/deposits?take=1001", http.StatusUnprocessableEntity, "unprocessable_entity", "take")
}

// testAVSStakers checks GET /avs/{address}/stakers: its total is the
// AVS's totalStakers, its pages are consistent, withTvl adds the TVL and
// updatedSince narrows the list to the stakers changed since.
func testAVSStakers(t *testing.T, c *client) {
	var avs page
	c.okEE(t, "/avs?sortByTotalStakers=desc&take=1", &avs)
	addr := avs.Data[0]["address"].(string)
	totalStakers := int(avs.Data[0]["totalStakers"].(float64))
	type share struct{ StakerAddress, StrategyAddress, Shares string }
	type staker struct {
		Address, OperatorAddress, CreatedAtBlock, UpdatedAtBlock, CreatedAt, UpdatedAt string
		Shares                                                                         []share
		Tvl                                                                            map[string]any
	}
	type stakerPage struct {
		Data []staker
		Meta meta
	}
	target := "/avs/" + addr + "/stakers"
	var def, p1, p2 stakerPage
	c.okEE(t, target, &def)
	if def.Meta.Total != totalStakers || totalStakers == 0 || len(def.Data) != min(12, totalStakers) {
		t.Fatalf("GET %s: total %d, %d records; the AVS has %d stakers", target, def.Meta.Total, len(def.Data), totalStakers)
	}
	for _, s := range def.Data {
		if s.OperatorAddress == "" || s.CreatedAtBlock == "" || s.Tvl != nil {
			t.Errorf("staker %+v", s)
		}
		for _, sh := range s.Shares {
			if sh.StakerAddress != s.Address {
				t.Errorf("staker %s: a share names %s", s.Address, sh.StakerAddress)
			}
		}
	}
	c.okEE(t, target+"?take=6", &p1)
	c.okEE(t, target+"?take=6&skip=6", &p2)
	for i := range min(6, len(p2.Data)) {
		if p1.Data[i].Address != def.Data[i].Address || p2.Data[i].Address != def.Data[6+i].Address {
			t.Errorf("pages differ from the first 12 at %d", i)
		}
	}
	var withTvl stakerPage
	c.okEE(t, target+"?withTvl=true&take=3", &withTvl)
	for _, s := range withTvl.Data {
		if _, ok := s.Tvl["tvl"]; !ok {
			t.Errorf("withTvl: staker %s has no tvl", s.Address)
		}
	}

	// updatedSince keeps exactly the stakers changed at or after it.
	var all []staker
	for skip := 0; skip < totalStakers; skip += 1000 {
		var p stakerPage
		c.ok(t, target+"?take=1000&skip="+strconv.Itoa(skip), &p)
		all = append(all, p.Data...)
	}
	if len(all) != totalStakers {
		t.Fatalf("pages hold %d stakers, total %d", len(all), totalStakers)
	}
	since := all[len(all)/3].UpdatedAt
	want := 0
	for _, s := range all {
		if s.UpdatedAt >= since {
			want++
		}
	}
	var recent stakerPage
	c.okEE(t, target+"?take=1000&updatedSince="+since, &recent)
	if recent.Meta.Total != want || want == 0 || want == len(all) {
		t.Errorf("updatedSince=%s: total %d, want %d of %d", since, recent.Meta.Total, want, len(all))
	}
	for _, s := range recent.Data {
		if s.UpdatedAt < since {
			t.Errorf("updatedSince=%s: staker %s updated at %s", since, s.Address, s.UpdatedAt)
		}
	}

	c.failsEE(t, "/avs/0x000000000000000000000000000000000000dead/stakers", http.StatusNotFound, "not_found", "AVS")
	c.failsEE(t, target+"?updatedSince=yesterday", http.StatusUnprocessableEntity, "unprocessable_entity", "updatedSince")
	c.failsEE(t, target+"?withTvl=yes", http.StatusUnprocessableEntity, "unprocessable_entity", "withTvl")
}

// testDeposits checks GET /deposits: its totals against SQL, unfiltered
// (read from the daily snapshot) and per filter, its filters record by
// record, its pages, and that a staker's deposits route lists the same
// records as the staker filter.
func testDeposits(t *testing.T, c *client) {
	type deposit struct {
		TransactionHash, StakerAddress, TokenAddress, StrategyAddress, Shares, CreatedAt string
		CreatedAtBlock                                                                   int64
	}
	type depositPage struct {
		Data []deposit
		Meta meta
	}
	count := func(cond string, args ...any) int {
		var n int
		if err := storetest.SQL(t, c.db).Get(&n, `SELECT count(*) FROM deposits d LEFT JOIN strategies s ON s.address = d.strategy_address WHERE `+cond, args...); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var first depositPage
	c.okEE(t, "/deposits?take=100", &first)
	if want := count("true"); first.Meta.Total != want || len(first.Data) != 100 {
		t.Fatalf("/deposits: total %d, %d records; SQL counts %d", first.Meta.Total, len(first.Data), want)
	}
	for i := 1; i < len(first.Data); i++ {
		if first.Data[i].CreatedAt > first.Data[i-1].CreatedAt {
			t.Fatalf("/deposits: record %d is newer than the one before it", i)
		}
	}
	var second depositPage
	c.okEE(t, "/deposits?skip=50&take=50", &second)
	if !reflect.DeepEqual(second.Data, first.Data[50:]) {
		t.Errorf("/deposits?skip=50&take=50 is not records 50-99 of take=100")
	}
	d := first.Data[0]
	for _, f := range []struct {
		param, value, cond string
		match              func(deposit) bool
	}{
		{"stakerAddress", d.StakerAddress, "d.staker_address = $1", func(x deposit) bool { return x.StakerAddress == d.StakerAddress }},
		{"strategyAddress", d.StrategyAddress, "d.strategy_address = $1", func(x deposit) bool { return x.StrategyAddress == d.StrategyAddress }},
		{"tokenAddress", d.TokenAddress, "COALESCE(d.token_address, s.underlying_token) = $1", func(x deposit) bool { return x.TokenAddress == d.TokenAddress }},
	} {
		var p depositPage
		c.okEE(t, "/deposits?take=1000&"+f.param+"="+f.value, &p)
		if want := count(f.cond, f.value); p.Meta.Total != want || want == 0 {
			t.Errorf("/deposits?%s=%s: total %d; SQL counts %d", f.param, f.value, p.Meta.Total, want)
		}
		for _, x := range p.Data {
			if !f.match(x) {
				t.Fatalf("/deposits?%s=%s: %+v does not match", f.param, f.value, x)
			}
		}
		if f.param == "stakerAddress" {
			var own depositPage
			c.okEE(t, "/stakers/"+f.value+"/deposits?take=1000", &own)
			if !reflect.DeepEqual(own, p) {
				t.Errorf("/stakers/%s/deposits differs from /deposits?stakerAddress", f.value)
			}
		}
	}
	c.failsEE(t, "/deposits?tokenAddress=0x12", http.StatusUnprocessableEntity, "unprocessable_entity", "tokenAddress")
	c.failsEE(t, "/deposits?take=0", http.StatusUnprocessableEntity, "unprocessable_entity", "take")
}

// testStakers checks GET /stakers: every staker by address, its totals
// against SQL (unfiltered, read from the daily snapshot, and since a time),
// its pages, the zero address for undelegated stakers, and the answers
// against EigenExplorer's document.
func testStakers(t *testing.T, c *client) {
	type staker struct {
		Address, OperatorAddress, CreatedAtBlock, UpdatedAtBlock, CreatedAt, UpdatedAt string
		Shares                                                                         []struct{ StrategyAddress, Shares string }
	}
	type stakerPage struct {
		Data []staker
		Meta meta
	}
	count := func(cond string, args ...any) int {
		var n int
		if err := storetest.SQL(t, c.db).Get(&n, `SELECT count(*) FROM stakers WHERE `+cond, args...); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var all stakerPage
	c.okEE(t, "/stakers?take=1000&withTvl=true", &all)
	if want := count("true"); all.Meta.Total != want || len(all.Data) != min(1000, want) {
		t.Fatalf("/stakers: total %d, %d records; SQL counts %d", all.Meta.Total, len(all.Data), want)
	}
	for i := 1; i < len(all.Data); i++ {
		if all.Data[i].Address <= all.Data[i-1].Address {
			t.Fatalf("/stakers: not by address at %d", i)
		}
	}
	var page stakerPage
	c.okEE(t, "/stakers?skip=500&take=20", &page)
	for i, s := range page.Data {
		if w := all.Data[500+i]; s.Address != w.Address || s.OperatorAddress != w.OperatorAddress {
			t.Fatalf("/stakers?skip=500: record %d is %s, want %s", i, s.Address, w.Address)
		}
	}
	var delegated, undelegated int
	for _, s := range all.Data {
		var op *string
		if err := storetest.SQL(t, c.db).Get(&op, `SELECT operator_address FROM stakers WHERE address = $1`, s.Address); err != nil {
			t.Fatal(err)
		}
		switch {
		case op == nil && s.OperatorAddress == zeroAddress:
			undelegated++
		case op != nil && s.OperatorAddress == *op:
			delegated++
		default:
			t.Fatalf("/stakers: %s has operator %s; the database has %v", s.Address, s.OperatorAddress, op)
		}
	}
	if delegated == 0 || undelegated == 0 {
		t.Errorf("/stakers: %d delegated and %d undelegated stakers; both kinds must be exercised", delegated, undelegated)
	}
	since := demoNow.Add(-3 * 24 * time.Hour)
	var recent stakerPage
	c.okEE(t, "/stakers?take=1000&updatedSince="+since.Format(time.RFC3339), &recent)
	if want := count("updated_at >= $1", since); recent.Meta.Total != want || want == 0 || want == all.Meta.Total {
		t.Errorf("/stakers?updatedSince: total %d; SQL counts %d of %d", recent.Meta.Total, want, all.Meta.Total)
	}
	for _, s := range recent.Data {
		if s.UpdatedAt < since.Format("2006-01-02T15:04:05") {
			t.Fatalf("/stakers?updatedSince: %s updated at %s", s.Address, s.UpdatedAt)
		}
	}
	c.failsEE(t, "/stakers?updatedSince=yesterday", http.StatusUnprocessableEntity, "unprocessable_entity", "updatedSince")
}

// testStakerDetail checks GET /stakers/{address} against /stakers and SQL:
// the record agrees with the list's, each strategy's APY is the sum of
// the APYs of the AVS the staker's operator serves, the AVS APYs add up to
// the aggregate, and the claimed amounts are those of the RewardsClaimed
// events; every answer is checked against EigenExplorer's document.
func testStakerDetail(t *testing.T, c *client) {
	type apy struct {
		StrategyAddress string
		Apy             float64
		Tokens          []any
	}
	type detail struct {
		Address, OperatorAddress, CreatedAtBlock, UpdatedAtBlock, CreatedAt, UpdatedAt string
		Shares                                                                         []map[string]any
		Tvl                                                                            map[string]any
		Rewards                                                                        struct {
			AggregateApy, NativeApy float64
			TokenAmounts            []struct{ TokenAddress, CumulativeAmount string }
			StrategyApys            []apy
			AvsApys                 []struct {
				AvsAddress string
				Apy        float64
				Strategies []apy
			}
		}
	}
	var picks []string
	if err := storetest.SQL(t, c.db).Select(&picks, `
		(SELECT s.address FROM stakers s
		 JOIN avs_operators ao ON ao.operator_address = s.operator_address AND ao.is_active
		 JOIN avs_strategy_apy asa ON asa.avs_address = ao.avs_address AND asa.apy > 0
		 JOIN staker_shares ss ON ss.staker_address = s.address AND ss.strategy_address = asa.strategy_address AND ss.shares > 0
		 GROUP BY 1 ORDER BY count(DISTINCT ss.strategy_address) DESC, count(*) DESC, 1 LIMIT 3)
		UNION ALL
		(SELECT args->>'earner' FROM protocol_events WHERE name = 'RewardsClaimed' GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 2)
		UNION ALL
		(SELECT address FROM stakers WHERE operator_address IS NULL ORDER BY address LIMIT 1)`); err != nil {
		t.Fatal(err)
	}
	if len(picks) < 5 {
		t.Fatalf("only %d stakers to check", len(picks))
	}
	withAPY, withClaims, withNative := 0, 0, 0
	var incentives struct{ EigenStrategyApy, EthAndLstStrategiesApy string }
	c.okEE(t, "/rewards/programmatic-incentives", &incentives)
	incentiveAPY := 0.0
	for _, a := range []string{incentives.EigenStrategyApy, incentives.EthAndLstStrategiesApy} {
		f, _ := strconv.ParseFloat(a, 64)
		incentiveAPY = max(incentiveAPY, f)
	}
	for _, addr := range picks {
		var d detail
		c.okEE(t, "/stakers/"+addr+"?withTvl=true&withRewards=true", &d)
		var listed struct{ Data []detail }
		c.ok(t, "/stakers?take=1&withTvl=true&skip="+strconv.Itoa(stakerRank(t, c, addr)), &listed)
		if len(listed.Data) != 1 || !reflect.DeepEqual(listed.Data[0].Shares, d.Shares) || !reflect.DeepEqual(listed.Data[0].Tvl, d.Tvl) ||
			listed.Data[0].Address != d.Address || listed.Data[0].OperatorAddress != d.OperatorAddress || listed.Data[0].UpdatedAt != d.UpdatedAt {
			t.Errorf("staker %s: the detail differs from the list's record", addr)
		}
		rw := d.Rewards
		var want []struct {
			Strategy string
			Apy      float64
		}
		if err := storetest.SQL(t, c.db).Select(&want, `
			SELECT asa.strategy_address AS strategy, sum(asa.apy)::float8 AS apy
			FROM stakers s
			JOIN avs_operators ao ON ao.operator_address = s.operator_address AND ao.is_active
			JOIN avs_strategy_apy asa ON asa.avs_address = ao.avs_address
			JOIN staker_shares ss ON ss.staker_address = s.address AND ss.strategy_address = asa.strategy_address AND ss.shares > 0
			WHERE s.address = $1 GROUP BY 1 ORDER BY 1`, addr); err != nil {
			t.Fatal(err)
		}
		if len(rw.StrategyApys) != len(want) {
			t.Errorf("staker %s: %d strategy APYs, SQL has %d", addr, len(rw.StrategyApys), len(want))
		} else {
			for i, w := range want {
				if g := rw.StrategyApys[i]; g.StrategyAddress != w.Strategy || math.Abs(g.Apy-w.Apy) > 1e-9*max(1, w.Apy) || len(g.Tokens) != 0 {
					t.Errorf("staker %s: strategy APY %+v, SQL %+v", addr, g, w)
				}
			}
		}
		sum, most := 0.0, 0.0
		for _, a := range rw.AvsApys {
			sum += a.Apy
		}
		for _, s := range rw.StrategyApys {
			most = max(most, s.Apy)
		}
		// nativeApy averages the incentive groups' APYs over the staker's
		// holdings (0 where it holds no named strategy), only for a staker
		// whose operator serves an AVS; the aggregate adds it.
		var earns bool
		if err := storetest.SQL(t, c.db).Get(&earns, `
			SELECT EXISTS (SELECT 1 FROM stakers s JOIN operators o ON o.address = s.operator_address
			               WHERE s.address = $1 AND o.total_avs > 0)`, addr); err != nil {
			t.Fatal(err)
		}
		if math.Abs(sum+rw.NativeApy-rw.AggregateApy) > 1e-9*max(1, sum) || rw.AggregateApy < 0 || rw.AggregateApy > most+incentiveAPY+1e-9 ||
			rw.NativeApy < 0 || rw.NativeApy > incentiveAPY+1e-9 || (!earns && rw.NativeApy != 0) {
			t.Errorf("staker %s: aggregate APY %v, AVS APYs sum to %v, strategies' largest %v, native %v (incentive APYs up to %v, earns %v)",
				addr, rw.AggregateApy, sum, most, rw.NativeApy, incentiveAPY, earns)
		}
		if rw.AggregateApy > 0 {
			withAPY++
		}
		if rw.NativeApy > 0 {
			withNative++
		}
		var claims []struct{ Token, Amount string }
		if err := storetest.SQL(t, c.db).Select(&claims, `
			SELECT args->>'token' AS token, sum((args->>'claimedAmount')::numeric)::text AS amount
			FROM protocol_events WHERE name = 'RewardsClaimed' AND args->>'earner' = $1 GROUP BY 1 ORDER BY 1`, addr); err != nil {
			t.Fatal(err)
		}
		if len(claims) != len(rw.TokenAmounts) {
			t.Errorf("staker %s: %d claimed tokens, SQL has %d", addr, len(rw.TokenAmounts), len(claims))
		} else {
			for i, cl := range claims {
				if g := rw.TokenAmounts[i]; g.TokenAddress != cl.Token || g.CumulativeAmount != cl.Amount {
					t.Errorf("staker %s: claimed %+v, SQL %+v", addr, g, cl)
				}
			}
		}
		if len(claims) > 0 {
			withClaims++
		}
	}
	if withAPY == 0 || withClaims == 0 {
		t.Errorf("%d stakers with an APY and %d with claims; both must be exercised", withAPY, withClaims)
	}
	if withNative == 0 {
		t.Errorf("no staker checked earns programmatic incentives")
	}
	c.failsEE(t, "/stakers/0x00000000000000000000000000000000000000ff", http.StatusNotFound, "not_found", "0x00000000000000000000000000000000000000ff")
	c.failsEE(t, "/stakers/0x12", http.StatusUnprocessableEntity, "unprocessable_entity", "address")
	c.fails(t, "/stakers/"+picks[0]+"?withRewards=yes", http.StatusUnprocessableEntity, "unprocessable_entity", "withRewards")
}

// stakerRank returns the position of a staker in the list by address.
func stakerRank(t *testing.T, c *client, addr string) int {
	var n int
	if err := storetest.SQL(t, c.db).Get(&n, `SELECT count(*) FROM stakers WHERE address < $1`, addr); err != nil {
		t.Fatal(err)
	}
	return n
}
