package graph_test

import (
	"math/big"
	"slices"
	"testing"
)

type sharesRecord struct {
	StrategyAddress string
	Shares          string
	UnderlyingToken *string
	UnderlyingValue float64
	EthValue        float64
	Strategy        *struct{ Symbol string }
}

type tvlRecord struct {
	Tvl              float64
	TvlBeaconChain   float64
	TvlRestaking     float64
	TvlWETH          float64
	TvlStrategies    map[string]float64
	TvlStrategiesEth map[string]float64
}

func TestAVSRelations(t *testing.T) {
	db := demoDB(t)
	c := newClient(t, db, testOptions())
	avs := sqlString(t, db, `SELECT address FROM avs ORDER BY total_operators DESC, address LIMIT 1`)

	type avsOperator struct {
		Address            string
		IsActive           bool
		MaxApyNumber       float64
		RestakedStrategies []string
		Shares             []sharesRecord
		Tvl                tvlRecord
		Operator           struct{ Address string }
		Avs                struct{ Address string }
	}
	type operatorPage struct {
		Data []avsOperator
		Meta meta
	}
	got := query[struct {
		Avs struct {
			Address         string
			TotalOperators  int
			TotalStakers    int
			Shares          []sharesRecord
			Tvl             tvlRecord
			CuratedMetadata *struct {
				MetadataName string
				AvsAddress   string
				Tags         []string
			}
			StrategyApys []struct{ StrategyAddress, Apy string }
			Active       operatorPage
			Inactive     operatorPage
			All          operatorPage
			ByTvl        operatorPage
			Paged        operatorPage
			Stakers      struct {
				Data []struct {
					Address         string
					OperatorAddress *string
				}
				Meta meta
			}
			Rewards struct {
				Address          string
				TotalRewards     string
				TotalSubmissions int
				RewardTokens     []string
				RewardStrategies []string
				Submissions      []struct {
					RewardsSubmissionHash string
					TotalAmount           string
					TokenAddress          string
					Duration              int
					Strategies            []struct{ StrategyAddress, Multiplier, Amount string }
					Avs                   struct{ Address string }
				}
			}
		}
	}](c, `query($a: Address!) {
		avs(address: $a) {
			address totalOperators totalStakers
			shares { strategyAddress shares underlyingValue ethValue }
			tvl { tvl tvlBeaconChain tvlRestaking tvlWETH tvlStrategies tvlStrategiesEth }
			curatedMetadata { metadataName avsAddress tags }
			strategyApys { strategyAddress apy }
			active: operators(take: 400) { ...ops }
			inactive: operators(isActive: false, take: 400) { ...ops }
			all: operators(isActive: null, take: 400) { ...ops }
			byTvl: operators(sortByTvl: desc, take: 400) { ...ops }
			paged: operators(skip: 2, take: 3) { ...ops }
			stakers(take: 7) { data { address operatorAddress } meta { total skip take } }
			rewards {
				address totalRewards totalSubmissions rewardTokens rewardStrategies
				submissions { rewardsSubmissionHash totalAmount tokenAddress duration
				              strategies { strategyAddress multiplier amount } avs { address } }
			}
		}
	}
	fragment ops on AvsOperatorPage {
		data { address isActive maxApyNumber restakedStrategies shares { strategyAddress shares ethValue }
		       tvl { tvl } operator { address } avs { address } }
		meta { total skip take }
	}`, map[string]any{"a": avs}).Avs

	active := sqlInt(t, db, `SELECT count(*) FROM avs_operators WHERE avs_address = $1 AND is_active`, avs)
	registered := sqlInt(t, db, `SELECT count(*) FROM avs_operators WHERE avs_address = $1`, avs)
	if active == registered || active < 5 {
		t.Fatalf("want an AVS with several active and some inactive operators: %d of %d", active, registered)
	}
	if got.TotalOperators != active {
		t.Errorf("totalOperators %d, want %d", got.TotalOperators, active)
	}
	checkMeta(t, "active operators", got.Active.Meta, len(got.Active.Data), active, 0, 400)
	checkMeta(t, "inactive operators", got.Inactive.Meta, len(got.Inactive.Data), registered-active, 0, 400)
	checkMeta(t, "all operators", got.All.Meta, len(got.All.Data), registered, 0, 400)
	checkMeta(t, "paged operators", got.Paged.Meta, len(got.Paged.Data), active, 2, 3)
	for i, o := range got.Paged.Data {
		if o.Address != got.Active.Data[2+i].Address {
			t.Errorf("paged operator %d: %s, want %s", i, o.Address, got.Active.Data[2+i].Address)
		}
	}
	for _, o := range got.Active.Data {
		if !o.IsActive || o.Operator.Address != o.Address || o.Avs.Address != avs {
			t.Errorf("active operator %+v", o)
		}
		var sum float64
		for _, s := range o.Shares {
			if !slices.Contains(o.RestakedStrategies, s.StrategyAddress) {
				t.Errorf("operator %s shows shares in %s, which it does not restake for the AVS", o.Address, s.StrategyAddress)
			}
			if s.StrategyAddress != eigenStrategy {
				sum += s.EthValue
			}
		}
		if !near(sum, o.Tvl.Tvl) {
			t.Errorf("operator %s: tvl %v but its shares are worth %v", o.Address, o.Tvl.Tvl, sum)
		}
	}
	for _, o := range got.Inactive.Data {
		if o.IsActive {
			t.Errorf("isActive: false listed active operator %s", o.Address)
		}
	}
	var tvls []float64
	for _, o := range got.ByTvl.Data {
		tvls = append(tvls, o.Tvl.Tvl)
	}
	ordered(t, "operators by tvl", tvls, true)

	// The AVS's TVL is the refresh step's tvl_eth, computed by the same value
	// functions.
	if want := parseFloat(t, sqlString(t, db, `SELECT tvl_eth::text FROM avs WHERE address = $1`, avs)); !near(got.Tvl.Tvl, want) {
		t.Errorf("tvl %v, want tvl_eth %v", got.Tvl.Tvl, want)
	}
	if !near(got.Tvl.Tvl, got.Tvl.TvlBeaconChain+got.Tvl.TvlRestaking) {
		t.Errorf("tvl %+v is not beacon + restaking", got.Tvl)
	}
	if _, ok := got.Tvl.TvlStrategies["Beacon ETH"]; ok {
		t.Errorf("tvlStrategies lists beacon ETH: %v", got.Tvl.TvlStrategies)
	}
	if len(got.Shares) != sqlInt(t, db, `SELECT count(*) FROM avs_shares WHERE avs_address = $1`, avs) {
		t.Errorf("%d shares", len(got.Shares))
	}
	if got.CuratedMetadata == nil || got.CuratedMetadata.AvsAddress != avs ||
		got.CuratedMetadata.MetadataName != sqlString(t, db, `SELECT metadata_name FROM curated_avs_metadata WHERE avs_address = $1`, avs) {
		t.Errorf("curatedMetadata %+v", got.CuratedMetadata)
	}
	if len(got.StrategyApys) != sqlInt(t, db, `SELECT count(*) FROM avs_strategy_apy WHERE avs_address = $1`, avs) {
		t.Errorf("%d strategy APYs", len(got.StrategyApys))
	}

	if got.TotalStakers == 0 {
		t.Fatal("the AVS has no stakers")
	}
	checkMeta(t, "stakers", got.Stakers.Meta, len(got.Stakers.Data), got.TotalStakers, 0, 7)
	for _, s := range got.Stakers.Data {
		if s.OperatorAddress == nil || !slices.ContainsFunc(got.Active.Data, func(o avsOperator) bool { return o.Address == *s.OperatorAddress }) {
			t.Errorf("staker %s is not delegated to an active operator of the AVS", s.Address)
		}
	}

	r := got.Rewards
	if r.Address != avs || r.TotalSubmissions != sqlInt(t, db, `SELECT count(*) FROM rewards_submissions WHERE avs_address = $1`, avs) ||
		r.TotalSubmissions == 0 || len(r.Submissions) != r.TotalSubmissions {
		t.Errorf("rewards: %d submissions listed, total %d", len(r.Submissions), r.TotalSubmissions)
	}
	if want := sqlString(t, db, `SELECT sum(amount)::text FROM rewards_submissions WHERE avs_address = $1`, avs); r.TotalRewards != want {
		t.Errorf("totalRewards %s, want %s", r.TotalRewards, want)
	}
	sum := new(big.Int)
	for _, s := range r.Submissions {
		amount, _ := new(big.Int).SetString(s.TotalAmount, 10)
		sum.Add(sum, amount)
		if !slices.Contains(r.RewardTokens, s.TokenAddress) || s.Avs.Address != avs || len(s.Strategies) == 0 {
			t.Errorf("submission %+v", s)
		}
		for _, st := range s.Strategies {
			if !slices.Contains(r.RewardStrategies, st.StrategyAddress) {
				t.Errorf("submission strategy %s not among rewardStrategies", st.StrategyAddress)
			}
		}
	}
	if sum.String() != r.TotalRewards {
		t.Errorf("submissions sum to %s, totalRewards %s", sum, r.TotalRewards)
	}
	if !slices.IsSorted(r.RewardTokens) || !slices.IsSorted(r.RewardStrategies) {
		t.Errorf("reward tokens and strategies should be sorted: %v %v", r.RewardTokens, r.RewardStrategies)
	}

	missing := query[struct{ Avs *struct{ Address string } }](c, `{ avs(address: "0x000000000000000000000000000000000000dead") { address } }`, nil)
	if missing.Avs != nil {
		t.Errorf("unknown AVS: %+v, want null", missing.Avs)
	}
}

const eigenStrategy = "0xacb55c530acdb2849e6d4f36992cd8c9d50ed8f7"

type withdrawalRecord struct {
	WithdrawalRoot      string
	Nonce               int
	StakerAddress       string
	DelegatedTo         string
	WithdrawerAddress   string
	CreatedAtBlock      int
	IsCompleted         bool
	IsWithdrawable      bool
	Shares              []sharesRecord
	Staker              struct{ Address string }
	Withdrawer          struct{ Address string }
	DelegatedToOperator *struct{ Address string }
}

type withdrawalPage struct {
	Data []withdrawalRecord
	Meta meta
}

const withdrawalFields = `withdrawalRoot nonce stakerAddress delegatedTo withdrawerAddress createdAtBlock
	isCompleted isWithdrawable shares { strategyAddress shares ethValue }
	staker { address } withdrawer { address } delegatedToOperator { address }`

func TestWithdrawals(t *testing.T) {
	db := demoDB(t)
	c := newClient(t, db, testOptions())
	list := func(vars map[string]any) withdrawalPage {
		t.Helper()
		return query[struct{ Withdrawals withdrawalPage }](c, `
			query($staker: Address, $operator: Address, $strategy: Address, $status: WithdrawalStatus, $skip: Int, $take: Int) {
				withdrawals(stakerAddress: $staker, delegatedTo: $operator, strategyAddress: $strategy,
				            status: $status, skip: $skip, take: $take) {
					data { `+withdrawalFields+` }
					meta { total skip take }
				}
			}`, vars).Withdrawals
	}

	all := list(map[string]any{"take": 1000})
	checkMeta(t, "withdrawals", all.Meta, len(all.Data), sqlInt(t, db, `SELECT count(*) FROM withdrawals`), 0, 1000)
	var blocks []int
	for _, w := range all.Data {
		blocks = append(blocks, w.CreatedAtBlock)
		if w.Staker.Address != w.StakerAddress || w.Withdrawer.Address != w.WithdrawerAddress || len(w.Shares) == 0 {
			t.Errorf("withdrawal %+v", w)
		}
	}
	ordered(t, "createdAtBlock", blocks, true)

	statuses := map[string]string{
		"queued":    `NOT is_completed`,
		"completed": `is_completed`,
		"queued_withdrawable": `NOT is_completed AND created_at_block + (SELECT min_withdrawal_delay_blocks FROM service_state)
		                        <= (SELECT head_block FROM service_state)`,
	}
	for status, cond := range statuses {
		want := sqlInt(t, db, `SELECT count(*) FROM withdrawals WHERE `+cond)
		if want == 0 {
			t.Errorf("no %s withdrawals in the demo data", status)
		}
		got := list(map[string]any{"status": status, "take": 50})
		checkMeta(t, status, got.Meta, len(got.Data), want, 0, 50)
		for _, w := range got.Data {
			if (status == "completed") != w.IsCompleted || (status == "queued_withdrawable" && !w.IsWithdrawable) {
				t.Errorf("%s lists %+v", status, w)
			}
		}
	}

	delegated := sqlString(t, db, `SELECT delegated_to FROM withdrawals WHERE delegated_to <> $1 GROUP BY 1 ORDER BY count(*) DESC LIMIT 1`, zeroAddress)
	staker := sqlString(t, db, `SELECT staker_address FROM withdrawals GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`)
	strategy := "0x93c4b944d05dfe6df7645a86cd2206016c51564d" // stETH
	for name, f := range map[string]struct {
		vars  map[string]any
		want  int
		check func(withdrawalRecord) bool
	}{
		"staker": {map[string]any{"staker": staker}, sqlInt(t, db, `SELECT count(*) FROM withdrawals WHERE staker_address = $1`, staker),
			func(w withdrawalRecord) bool { return w.StakerAddress == staker }},
		"delegatedTo": {map[string]any{"operator": delegated}, sqlInt(t, db, `SELECT count(*) FROM withdrawals WHERE delegated_to = $1`, delegated),
			func(w withdrawalRecord) bool { return w.DelegatedTo == delegated && w.DelegatedToOperator != nil }},
		"strategy": {map[string]any{"strategy": strategy}, sqlInt(t, db, `SELECT count(*) FROM withdrawals WHERE $1 = ANY(strategies)`, strategy),
			func(w withdrawalRecord) bool {
				return slices.ContainsFunc(w.Shares, func(s sharesRecord) bool { return s.StrategyAddress == strategy })
			}},
	} {
		f.vars["take"] = 100
		got := list(f.vars)
		checkMeta(t, name, got.Meta, len(got.Data), f.want, 0, 100)
		for _, w := range got.Data {
			if !f.check(w) {
				t.Errorf("filter %s lists %+v", name, w)
			}
		}
	}

	root := all.Data[5]
	one := query[struct{ Withdrawal *withdrawalRecord }](c, `query($r: String!) { withdrawal(withdrawalRoot: $r) { `+withdrawalFields+` } }`,
		map[string]any{"r": root.WithdrawalRoot})
	if one.Withdrawal == nil || one.Withdrawal.WithdrawalRoot != root.WithdrawalRoot || one.Withdrawal.Nonce != root.Nonce ||
		len(one.Withdrawal.Shares) != len(root.Shares) {
		t.Errorf("withdrawal(%s) = %+v, want %+v", root.WithdrawalRoot, one.Withdrawal, root)
	}
	none := query[struct{ Withdrawal *withdrawalRecord }](c, `{ withdrawal(withdrawalRoot: "0x`+repeat("ab", 32)+`") { withdrawalRoot } }`, nil)
	if none.Withdrawal != nil {
		t.Errorf("unknown withdrawal: %+v", none.Withdrawal)
	}
	c.expectCode("unprocessable_entity", `{ withdrawal(withdrawalRoot: "0x1234") { withdrawalRoot } }`, nil)
	c.expectCode("unprocessable_entity", `{ withdrawals(stakerAddress: "0xnope") { meta { total } } }`, nil)
}

const zeroAddress = "0x0000000000000000000000000000000000000000"

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

func TestStrategiesAndRewards(t *testing.T) {
	db := demoDB(t)
	c := newClient(t, db, testOptions())
	got := query[struct {
		Strategies []struct {
			Address         string
			Symbol          string
			Kind            string
			UnderlyingToken *string
			TotalShares     string
			Tvl, TvlEth     float64
			RewardTokens    []string
		}
		RewardStrategies struct {
			Strategies []struct {
				StrategyAddress string
				Tokens          []string
			}
			Total int
		}
		Unknown *struct{ Address string }
	}](c, `{
		strategies { address symbol kind underlyingToken totalShares tvl tvlEth rewardTokens }
		rewardStrategies { strategies { strategyAddress tokens } total }
		unknown: strategy(address: "0x000000000000000000000000000000000000dead") { address }
	}`, nil)
	if len(got.Strategies) != sqlInt(t, db, `SELECT count(*) FROM strategies`) || len(got.Strategies) < 10 {
		t.Errorf("%d strategies", len(got.Strategies))
	}
	rewarded := map[string][]string{}
	for _, s := range got.RewardStrategies.Strategies {
		rewarded[s.StrategyAddress] = s.Tokens
	}
	if got.RewardStrategies.Total != len(got.RewardStrategies.Strategies) ||
		got.RewardStrategies.Total != sqlInt(t, db, `SELECT count(DISTINCT strategy_address) FROM rewards_submission_strategies`) {
		t.Errorf("rewardStrategies total %d", got.RewardStrategies.Total)
	}
	for _, s := range got.Strategies {
		if (s.Kind == "beacon") != (s.UnderlyingToken == nil) {
			t.Errorf("strategy %s (%s) underlying token %v", s.Symbol, s.Kind, s.UnderlyingToken)
		}
		if !slices.Equal(s.RewardTokens, rewarded[s.Address]) && !(len(s.RewardTokens) == 0 && rewarded[s.Address] == nil) {
			t.Errorf("strategy %s reward tokens %v, rewardStrategies says %v", s.Symbol, s.RewardTokens, rewarded[s.Address])
		}
		want := parseFloat(t, sqlString(t, db, `
			SELECT strategy_eth(total_shares, shares_to_underlying, decimals, eth_price)::text FROM strategies WHERE address = $1`, s.Address))
		if !near(s.TvlEth, want) {
			t.Errorf("strategy %s tvlEth %v, want %v", s.Symbol, s.TvlEth, want)
		}
	}
	if got.Unknown != nil {
		t.Errorf("unknown strategy: %+v", got.Unknown)
	}

	hash := sqlString(t, db, `SELECT rewards_submission_hash FROM rewards_submissions ORDER BY block_number DESC LIMIT 1`)
	sub := query[struct {
		RewardsSubmission *struct {
			RewardsSubmissionHash string
			AvsAddress            string
			Avs                   *struct{ Address string }
			Strategies            []struct {
				StrategyAddress string
				Strategy        *struct{ Address string }
			}
		}
	}](c, `query($h: String!) { rewardsSubmission(rewardsSubmissionHash: $h) {
		rewardsSubmissionHash avsAddress avs { address } strategies { strategyAddress strategy { address } } } }`,
		map[string]any{"h": hash}).RewardsSubmission
	if sub == nil || sub.RewardsSubmissionHash != hash || len(sub.Strategies) == 0 {
		t.Fatalf("rewardsSubmission(%s) = %+v", hash, sub)
	}
	if sub.Avs != nil && sub.Avs.Address != sub.AvsAddress {
		t.Errorf("submission avs %+v, avsAddress %s", sub.Avs, sub.AvsAddress)
	}
	for _, s := range sub.Strategies {
		if s.Strategy == nil || s.Strategy.Address != s.StrategyAddress {
			t.Errorf("submission strategy %+v", s)
		}
	}
}

// TestEventStakersReadOnlyWhenNeeded checks that the stakers an operator's
// events name are read only when the operation selects a field from
// their records: by address alone they are not read, and either way the
// addresses agree with the events'.
func TestEventStakersReadOnlyWhenNeeded(t *testing.T) {
	db := demoDB(t)
	c := newClient(t, db, testOptions())
	operator := sqlString(t, db, `
		SELECT operator_address FROM delegation_events
		GROUP BY operator_address ORDER BY count(*) DESC, operator_address LIMIT 1`)
	end := sqlString(t, db, `
		SELECT to_char(max(block_time) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
		FROM delegation_events WHERE operator_address = $1`, operator)
	type page struct {
		Operator struct {
			DelegationEvents struct {
				Data []struct {
					Args   struct{ Staker string }
					Staker struct {
						Address   string
						CreatedAt *string
					}
				}
			}
		}
	}
	run := func(stakerFields string) (page, int64) {
		t.Helper()
		before := db.StatementCount()
		p := query[page](c, `query($o: Address!, $end: String) { operator(address: $o) { delegationEvents(endAt: $end, take: 10) {
			data { args { staker } staker { `+stakerFields+` } } } } }`, map[string]any{"o": operator, "end": end})
		return p, db.StatementCount() - before
	}
	alone, aloneStatements := run("address")
	records, recordStatements := run("address createdAt")
	events := alone.Operator.DelegationEvents.Data
	if len(events) == 0 || len(records.Operator.DelegationEvents.Data) != len(events) {
		t.Fatalf("%d events by address alone, %d with records", len(events), len(records.Operator.DelegationEvents.Data))
	}
	for i, e := range events {
		r := records.Operator.DelegationEvents.Data[i]
		if e.Staker.Address != e.Args.Staker || r.Staker.Address != e.Args.Staker {
			t.Errorf("event %d of staker %s: staker %s alone, %s with its record", i, e.Args.Staker, e.Staker.Address, r.Staker.Address)
		}
		if r.Staker.CreatedAt == nil {
			t.Errorf("event %d: staker %s has no createdAt", i, r.Staker.Address)
		}
	}
	if recordStatements != aloneStatements+1 {
		t.Errorf("%d statements with the stakers' records, %d by address alone; want one more", recordStatements, aloneStatements)
	}

	// A staker's rewards depend on the operator its record names: the
	// events' stakers' rewards are those of the stakers read alone.
	type rewards struct{ NativeApy, AggregateApy float64 }
	withRewards := query[struct {
		Operator struct {
			DelegationEvents struct {
				Data []struct {
					Staker struct {
						Address string
						Rewards rewards
					}
				}
			}
		}
	}](c, `query($o: Address!, $end: String) { operator(address: $o) { delegationEvents(endAt: $end, take: 10) {
		data { staker { address rewards { nativeApy aggregateApy } } } } } }`, map[string]any{"o": operator, "end": end})
	native := false
	for _, e := range withRewards.Operator.DelegationEvents.Data {
		want := query[struct{ Staker struct{ Rewards rewards } }](c, `query($s: Address!) { staker(address: $s) { rewards { nativeApy aggregateApy } } }`,
			map[string]any{"s": e.Staker.Address}).Staker.Rewards
		if e.Staker.Rewards != want {
			t.Errorf("staker %s: rewards %+v in the events, %+v alone", e.Staker.Address, e.Staker.Rewards, want)
		}
		native = native || want.NativeApy != 0
	}
	if !native {
		t.Error("no staker of the events has a native APY: their rewards are not tested")
	}
}
