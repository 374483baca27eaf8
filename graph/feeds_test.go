package graph_test

import (
	"encoding/json"
	"testing"
	"time"
)

// TestEventFeedsAgreeWithSubjects checks that the global delegation feed
// narrowed to one operator or staker is the subject's own feed, event for
// event: two reads of the same rule, one batched per subject and one not.
func TestEventFeedsAgreeWithSubjects(t *testing.T) {
	db := demoDB(t)
	c := newClient(t, db, testOptions())
	from := testNow.Add(-20 * 24 * time.Hour).Format(time.RFC3339)
	to := testNow.Format(time.RFC3339)
	operator := sqlString(t, db, `
		SELECT operator_address FROM delegation_events WHERE block_time BETWEEN $1 AND $2
		GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`, from, to)
	staker := sqlString(t, db, `
		SELECT staker_address FROM delegation_events WHERE block_time BETWEEN $1 AND $2
		GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`, from, to)
	const fields = `data { tx blockNumber logIndex type args { operator staker strategy shares } ethValue } meta { total }`
	got := query[struct {
		ByOperator, ByStaker json.RawMessage
		Operator, Staker     struct{ DelegationEvents json.RawMessage }
	}](c, `query($o: Address!, $s: Address!, $from: String, $to: String) {
		byOperator: delegationEvents(operatorAddress: $o, startAt: $from, endAt: $to, take: 1000) { `+fields+` }
		byStaker: delegationEvents(stakerAddress: $s, startAt: $from, endAt: $to, take: 1000) { `+fields+` }
		operator(address: $o) { delegationEvents(startAt: $from, endAt: $to, take: 1000) { `+fields+` } }
		staker(address: $s) { delegationEvents(startAt: $from, endAt: $to, take: 1000) { `+fields+` } }
	}`, map[string]any{"o": operator, "s": staker, "from": from, "to": to})
	if string(got.ByOperator) != string(got.Operator.DelegationEvents) {
		t.Errorf("operator %s: the feed and Operator.delegationEvents differ", operator)
	}
	if string(got.ByStaker) != string(got.Staker.DelegationEvents) {
		t.Errorf("staker %s: the feed and Staker.delegationEvents differ", staker)
	}
	var page struct{ Meta struct{ Total int } }
	if err := json.Unmarshal(got.ByOperator, &page); err != nil || page.Meta.Total == 0 {
		t.Errorf("operator %s: no events (%v)", operator, err)
	}
}

// TestEventFeedStatements checks that a feed page and its relations take
// about as many statements at 200 events as at 2: the relations of its
// events are loaded in batches, not one by one. A wide batch window keeps
// a busy machine from splitting a batch, a little slack allows for it, and
// a page that took more is measured again (fewestStatements).
func TestEventFeedStatements(t *testing.T) {
	db := demoDB(t)
	opts := testOptions()
	opts.BatchWait = 250 * time.Millisecond
	c := newClient(t, db, opts)
	const q = `query($take: Int, $from: String, $to: String) {
		depositEvents(take: $take, startAt: $from, endAt: $to) { data { tx staker { address totalDeposits: deposits { meta { total } } } } meta { total } }
		withdrawalEvents(take: $take, startAt: $from, endAt: $to) { data { tx withdrawal { withdrawalRoot isCompleted } args { strategies { strategy ethValue } } } meta { total } }
		rewardsEvents(take: $take, startAt: $from, endAt: $to) { data { tx submission { kind avs { address } } args { strategies { amount } } } meta { total } }
		registrationEvents(take: $take, startAt: $from, endAt: $to) { data { tx args { status } } meta { total } }
	}`
	vars := map[string]any{"from": testNow.Add(-30 * 24 * time.Hour).Format(time.RFC3339), "to": testNow.Format(time.RFC3339)}
	count := func(take int) (int64, int) {
		vars["take"] = take
		before := db.StatementCount()
		got := query[map[string]struct{ Data []any }](c, q, vars)
		n := 0
		for _, p := range got {
			n += len(p.Data)
		}
		return db.StatementCount() - before, n
	}
	small, smallRows := count(2)
	large, largeRows := count(200)
	if largeRows <= smallRows*4 {
		t.Fatalf("only %d events at take 200; the page size is not exercised", largeRows)
	}
	large = min(large, fewestStatements(5, small+4, func() int64 { n, _ := count(200); return n }))
	t.Logf("statements: %d for %d events, %d for %d", small, smallRows, large, largeRows)
	if large > small+4 {
		t.Errorf("%d statements at take 200, %d at take 2; want about the same", large, small)
	}
}
