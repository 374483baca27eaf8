package graph_test

import (
	"testing"
	"time"
)

type eventRecord struct {
	Tx          string
	BlockNumber int
	BlockTime   string
	Type        string
	Args        struct {
		Operator     string
		Strategy     *string
		Shares       *string
		SharesNumber *float64
	}
	UnderlyingToken *string
	UnderlyingValue *float64
	EthValue        *float64
	Staker          struct{ Address string }
	Operator        *struct{ Address string }
}

type eventPage struct {
	Data []eventRecord
	Meta meta
}

const eventsQuery = `
	query($s: Address!, $tx: String, $type: DelegationEventType, $strategy: Address, $operator: Address,
	      $startAt: String, $endAt: String, $skip: Int, $take: Int) {
		staker(address: $s) {
			delegationEvents(txHash: $tx, type: $type, strategyAddress: $strategy, operatorAddress: $operator,
			                 startAt: $startAt, endAt: $endAt, skip: $skip, take: $take) {
				data { tx blockNumber blockTime type args { operator strategy shares sharesNumber }
				       underlyingToken underlyingValue ethValue staker { address } operator { address } }
				meta { total skip take }
			}
		}
	}`

func TestStaker(t *testing.T) {
	db := demoDB(t)
	c := newClient(t, db, testOptions())
	// The staker with shares and withdrawals that has the most delegation
	// events in the last week of the demo history.
	staker := sqlString(t, db, `
		SELECT e.staker_address FROM delegation_events e
		WHERE e.block_time > $1::timestamptz - interval '7 days'
		  AND EXISTS (SELECT 1 FROM staker_shares s WHERE s.staker_address = e.staker_address AND s.shares > 0)
		  AND EXISTS (SELECT 1 FROM withdrawals w WHERE w.staker_address = e.staker_address)
		GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`, testNow)
	countEvents := func(from, to time.Time, extra string, args ...any) int {
		return sqlInt(t, db, `
			SELECT count(*) FROM delegation_events
			WHERE staker_address = $1 AND block_time >= $2 AND block_time <= $3`+extra,
			append([]any{staker, from, to}, args...)...)
	}
	events := func(vars map[string]any) eventPage {
		t.Helper()
		vars["s"] = staker
		return query[struct {
			Staker struct{ DelegationEvents eventPage }
		}](c, eventsQuery, vars).Staker.DelegationEvents
	}

	t.Run("profile", func(t *testing.T) {
		got := query[struct {
			Staker struct {
				Address         string
				OperatorAddress *string
				DelegatedTo     *struct{ Address string }
				CreatedAt       *string
				Shares          []sharesRecord
				Tvl             tvlRecord
				Withdrawals     withdrawalPage
				Completed       withdrawalPage
				Deposits        struct {
					Data []struct {
						Tx, StakerAddress, StrategyAddress, Shares string
						Strategy                                   *struct{ Address string }
					}
					Meta meta
				}
			}
		}](c, `query($s: Address!) { staker(address: $s) {
			address operatorAddress delegatedTo { address } createdAt
			shares { strategyAddress shares underlyingToken underlyingValue ethValue strategy { symbol } }
			tvl { tvl tvlBeaconChain tvlRestaking }
			withdrawals(take: 100) { data { withdrawalRoot stakerAddress isCompleted } meta { total skip take } }
			completed: withdrawals(status: completed, take: 100) { data { withdrawalRoot isCompleted } meta { total skip take } }
			deposits(take: 100) { data { tx stakerAddress strategyAddress shares strategy { address } } meta { total skip take } }
		} }`, map[string]any{"s": staker}).Staker

		op := sqlString(t, db, `SELECT COALESCE(operator_address, '') FROM stakers WHERE address = $1`, staker)
		if (op == "") != (got.OperatorAddress == nil) || (op != "" && (*got.OperatorAddress != op || got.DelegatedTo == nil || got.DelegatedTo.Address != op)) {
			t.Errorf("delegation: operatorAddress %v delegatedTo %v, want %q", got.OperatorAddress, got.DelegatedTo, op)
		}
		if got.CreatedAt == nil {
			t.Error("createdAt is null for a known staker")
		}
		if want := sqlInt(t, db, `SELECT count(*) FROM staker_shares WHERE staker_address = $1 AND shares <> 0`, staker); len(got.Shares) != want || want == 0 {
			t.Errorf("%d shares, want %d", len(got.Shares), want)
		}
		var eth float64
		for _, s := range got.Shares {
			// A staker's shares are its withdrawable shares.
			want := sqlString(t, db, `SELECT withdrawable_shares::text FROM staker_positions WHERE staker_address = $1 AND strategy_address = $2`, staker, s.StrategyAddress)
			if s.Shares != want || s.Strategy == nil {
				t.Errorf("shares in %s: %+v, want %s", s.StrategyAddress, s, want)
			}
			if s.StrategyAddress != eigenStrategy {
				eth += s.EthValue
			}
		}
		if !near(eth, got.Tvl.Tvl) {
			t.Errorf("tvl %v, shares worth %v", got.Tvl.Tvl, eth)
		}
		checkMeta(t, "withdrawals", got.Withdrawals.Meta, len(got.Withdrawals.Data),
			sqlInt(t, db, `SELECT count(*) FROM withdrawals WHERE staker_address = $1`, staker), 0, 100)
		checkMeta(t, "completed withdrawals", got.Completed.Meta, len(got.Completed.Data),
			sqlInt(t, db, `SELECT count(*) FROM withdrawals WHERE staker_address = $1 AND is_completed`, staker), 0, 100)
		for _, w := range got.Completed.Data {
			if !w.IsCompleted {
				t.Errorf("completed lists %+v", w)
			}
		}
		checkMeta(t, "deposits", got.Deposits.Meta, len(got.Deposits.Data),
			sqlInt(t, db, `SELECT count(*) FROM deposits WHERE staker_address = $1`, staker), 0, 100)
		if len(got.Deposits.Data) == 0 {
			t.Error("the staker has no deposits")
		}
		for _, d := range got.Deposits.Data {
			if d.StakerAddress != staker || d.Strategy == nil || d.Strategy.Address != d.StrategyAddress {
				t.Errorf("deposit %+v", d)
			}
		}
	})

	t.Run("default range", func(t *testing.T) {
		got := events(map[string]any{"take": 1000})
		want := countEvents(testNow.Add(-7*24*time.Hour), testNow, "")
		if want == 0 {
			t.Fatal("the staker has no events in the last week")
		}
		checkMeta(t, "last 7 days", got.Meta, len(got.Data), want, 0, 1000)
		var times []string
		for _, e := range got.Data {
			times = append(times, e.BlockTime)
			if e.Staker.Address != staker {
				t.Errorf("event of %s", e.Staker.Address)
			}
			if e.Operator == nil || e.Operator.Address != e.Args.Operator {
				t.Errorf("event with operator %s resolves to %+v", e.Args.Operator, e.Operator)
			}
			if (e.Type == "SHARES_INCREASED" || e.Type == "SHARES_DECREASED") != (e.Args.Shares != nil && e.Args.Strategy != nil) {
				t.Errorf("%s event with strategy %v shares %v", e.Type, e.Args.Strategy, e.Args.Shares)
			}
			if e.Args.Shares != nil {
				if e.Args.SharesNumber == nil || !near(*e.Args.SharesNumber, parseFloat(t, *e.Args.Shares)) {
					t.Errorf("sharesNumber %v for shares %s", e.Args.SharesNumber, *e.Args.Shares)
				}
				if e.UnderlyingValue == nil || e.EthValue == nil {
					t.Errorf("share event without values: %+v", e)
				}
				if *e.Args.Strategy != beaconStrategy {
					token := sqlString(t, db, `SELECT underlying_token FROM strategies WHERE address = $1`, *e.Args.Strategy)
					if e.UnderlyingToken == nil || *e.UnderlyingToken != token {
						t.Errorf("underlyingToken %v, want %s", e.UnderlyingToken, token)
					}
				}
			}
		}
		ordered(t, "blockTime", times, true)
	})

	t.Run("date rules", func(t *testing.T) {
		day := 24 * time.Hour
		start := testNow.Add(-20 * day)
		got := events(map[string]any{"startAt": start.Format(time.RFC3339), "take": 1000})
		checkMeta(t, "only startAt", got.Meta, len(got.Data), countEvents(start, start.Add(7*day), ""), 0, 1000)

		start = testNow.Add(-3 * day)
		got = events(map[string]any{"startAt": start.Format(time.RFC3339), "take": 1000})
		checkMeta(t, "only startAt, recent", got.Meta, len(got.Data), countEvents(start, testNow, ""), 0, 1000)

		end := testNow.Add(-2 * day)
		got = events(map[string]any{"endAt": end.Format("2006-01-02T15:04:05.000Z"), "take": 1000})
		checkMeta(t, "only endAt", got.Meta, len(got.Data), countEvents(end.Add(-7*day), end, ""), 0, 1000)

		start, end = testNow.Add(-30*day), testNow
		got = events(map[string]any{"startAt": start.Format(time.RFC3339), "endAt": end.Format(time.RFC3339), "take": 1000})
		checkMeta(t, "30 days", got.Meta, len(got.Data), countEvents(start, end, ""), 0, 1000)

		for name, vars := range map[string]map[string]any{
			"range over 30 days":   {"startAt": testNow.Add(-31 * day).Format(time.RFC3339), "endAt": testNow.Format(time.RFC3339)},
			"endAt before startAt": {"startAt": testNow.Add(-day).Format(time.RFC3339), "endAt": testNow.Add(-2 * day).Format(time.RFC3339)},
			"unparseable startAt":  {"startAt": "last tuesday"},
			"unparseable endAt":    {"endAt": "2025-13-45"},
			"startAt in future":    {"startAt": testNow.Add(day).Format(time.RFC3339)},
			"bad txHash":           {"tx": "0x1234"},
			"take too large":       {"take": 1001},
			"negative skip":        {"skip": -1},
		} {
			vars["s"] = staker
			e := c.queryError(eventsQuery, vars)
			if e.Extensions.Code != "unprocessable_entity" {
				t.Errorf("%s: code %q (%s), want unprocessable_entity", name, e.Extensions.Code, e.Message)
			}
		}
	})

	t.Run("filters", func(t *testing.T) {
		start, end := testNow.Add(-30*24*time.Hour), testNow
		window := map[string]any{"startAt": start.Format(time.RFC3339), "endAt": end.Format(time.RFC3339), "take": 1000}
		with := func(k string, v any) map[string]any {
			m := map[string]any{k: v}
			for k, v := range window {
				m[k] = v
			}
			return m
		}
		all := events(with("skip", 0))
		if len(all.Data) < 3 {
			t.Fatalf("only %d events in 30 days", len(all.Data))
		}
		shareEvent := all.Data[0]
		for _, e := range all.Data {
			if e.Args.Strategy != nil {
				shareEvent = e
				break
			}
		}
		if shareEvent.Args.Strategy == nil {
			t.Fatal("no share event")
		}

		got := events(with("type", shareEvent.Type))
		checkMeta(t, "type", got.Meta, len(got.Data), countEvents(start, end, " AND type = $4", shareEvent.Type), 0, 1000)
		got = events(with("strategy", *shareEvent.Args.Strategy))
		checkMeta(t, "strategy", got.Meta, len(got.Data), countEvents(start, end, " AND strategy_address = $4", *shareEvent.Args.Strategy), 0, 1000)
		got = events(with("operator", shareEvent.Args.Operator))
		checkMeta(t, "operator", got.Meta, len(got.Data), countEvents(start, end, " AND operator_address = $4", shareEvent.Args.Operator), 0, 1000)
		got = events(with("tx", shareEvent.Tx))
		checkMeta(t, "txHash", got.Meta, len(got.Data), countEvents(start, end, " AND tx_hash = $4", shareEvent.Tx), 0, 1000)
		for _, e := range got.Data {
			if e.Tx != shareEvent.Tx {
				t.Errorf("txHash filter lists %s", e.Tx)
			}
		}

		page := events(with("skip", 1))
		page.Data = page.Data[:min(2, len(page.Data))]
		for i, e := range page.Data {
			if e.Tx != all.Data[1+i].Tx || e.BlockNumber != all.Data[1+i].BlockNumber {
				t.Errorf("skip 1: event %d is %s, want %s", i, e.Tx, all.Data[1+i].Tx)
			}
		}

		// The same events, seen from the operator.
		op := query[struct {
			Operator struct{ DelegationEvents eventPage }
		}](c, `query($o: Address!, $s: Address!, $a: String, $b: String) { operator(address: $o) {
			delegationEvents(stakerAddress: $s, startAt: $a, endAt: $b, take: 1000) { data { tx } meta { total skip take } } } }`,
			map[string]any{"o": shareEvent.Args.Operator, "s": staker, "a": window["startAt"], "b": window["endAt"]}).Operator.DelegationEvents
		checkMeta(t, "operator's events of the staker", op.Meta, len(op.Data), countEvents(start, end, " AND operator_address = $4", shareEvent.Args.Operator), 0, 1000)
	})

	t.Run("unseen staker", func(t *testing.T) {
		got := query[struct {
			Staker struct {
				Address          string
				CreatedAt        *string
				DelegatedTo      *struct{ Address string }
				Shares           []sharesRecord
				DelegationEvents eventPage
				Withdrawals      withdrawalPage
			}
		}](c, `{ staker(address: "0x000000000000000000000000000000000000BEEF") {
			address createdAt delegatedTo { address } shares { strategyAddress }
			delegationEvents { data { tx } meta { total skip take } }
			withdrawals { data { withdrawalRoot } meta { total skip take } } } }`, nil).Staker
		if got.Address != "0x000000000000000000000000000000000000beef" || got.CreatedAt != nil || got.DelegatedTo != nil || len(got.Shares) != 0 {
			t.Errorf("unseen staker %+v", got)
		}
		checkMeta(t, "events", got.DelegationEvents.Meta, len(got.DelegationEvents.Data), 0, 0, 12)
		checkMeta(t, "withdrawals", got.Withdrawals.Meta, len(got.Withdrawals.Data), 0, 0, 12)
	})
}

const beaconStrategy = "0xbeac0eeeeeeeeeeeeeeeeeeeeeeeeeeeeeebeac0"
