package graph_test

import (
	"encoding/json"
	"testing"
)

// TestWithdrawalSharesFromTheirRows checks that the shares of withdrawals
// shown without their values, which come with the withdrawals' rows, are
// those read with their values through the withdrawal share loader, in the
// same order, on every path that reads withdrawals (the list, a staker's,
// one by root), and that they cost no statement of their own.
func TestWithdrawalSharesFromTheirRows(t *testing.T) {
	db := demoDB(t)
	c := newClient(t, db, testOptions())
	staker := sqlString(t, db, `
		SELECT staker_address FROM withdrawals
		WHERE cardinality(strategies) > 1
		GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1`)
	root := sqlString(t, db, `
		SELECT withdrawal_root FROM withdrawals
		WHERE cardinality(strategies) > 1 ORDER BY withdrawal_root LIMIT 1`)
	type share struct{ StrategyAddress, Shares string }
	type withdrawal struct {
		WithdrawalRoot string
		Shares         []share
	}
	type page struct{ Data []withdrawal }
	type answer struct {
		List       page
		Staker     struct{ Withdrawals page }
		Withdrawal withdrawal
	}
	// The staker's own shares are shown with their values: they come
	// through another loader, and do not keep the withdrawals' amounts
	// from coming with their rows.
	run := func(shareFields string) (answer, int64) {
		t.Helper()
		q := `query($s: Address!, $r: String!) {
			list: withdrawals(take: 100) { data { withdrawalRoot shares { ` + shareFields + ` } } }
			staker(address: $s) { shares { ethValue } withdrawals(take: 100) { data { withdrawalRoot shares { ` + shareFields + ` } } } }
			withdrawal(withdrawalRoot: $r) { withdrawalRoot shares { ` + shareFields + ` } }
		}`
		before := db.StatementCount()
		got := query[answer](c, q, map[string]any{"s": staker, "r": root})
		return got, db.StatementCount() - before
	}
	amounts, amountStatements := run("strategyAddress shares")
	values, valueStatements := run("strategyAddress shares ethValue")

	a, _ := json.Marshal(amounts)
	v, _ := json.Marshal(values)
	if string(a) != string(v) {
		t.Errorf("shares without values differ from those read with them:\n%s\n%s", a, v)
	}
	multi := 0
	for _, w := range append(append(amounts.List.Data, amounts.Staker.Withdrawals.Data...), amounts.Withdrawal) {
		if len(w.Shares) > 1 {
			multi++
		}
	}
	if len(amounts.List.Data) == 0 || len(amounts.Staker.Withdrawals.Data) == 0 || amounts.Withdrawal.WithdrawalRoot != root || multi == 0 {
		t.Fatalf("the demo data exercises too little: %d listed, %d of staker %s, withdrawal %q, %d with several strategies",
			len(amounts.List.Data), len(amounts.Staker.Withdrawals.Data), staker, amounts.Withdrawal.WithdrawalRoot, multi)
	}
	if amountStatements >= valueStatements {
		t.Errorf("%d statements without share values, %d with them; want fewer without", amountStatements, valueStatements)
	}
}
