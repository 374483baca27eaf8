package graph

import (
	"context"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2"
)

// TestOperationSelects checks which operations prefetchStakerShares
// prefetches for: those that select a staker's shares, TVL or rewards,
// directly or through fragments, and not those that select only other
// fields of stakers or the shares of other objects, or leave them out
// with @include or @skip.
func TestOperationSelects(t *testing.T) {
	for _, tc := range []struct {
		query string
		vars  map[string]any
		want  bool
	}{
		{`{ stakers { data { address } } }`, nil, false},
		{`{ stakers { data { address shares { shares } } } }`, nil, true},
		{`{ operators { data { address shares { shares } tvl { tvl } } } }`, nil, false},
		{`query($w: Boolean!) { stakers { data { tvl @include(if: $w) { tvl } } } }`, map[string]any{"w": true}, true},
		{`query($w: Boolean!) { stakers { data { tvl @include(if: $w) { tvl } } } }`, map[string]any{"w": false}, false},
		{`query($w: Boolean!) { stakers { data { ... @skip(if: $w) { shares { shares } } } } }`, map[string]any{"w": true}, false},
		{`{ avs(address: "0xfae013aee223c3659dd348ea518fae7b0d0c8a01") { stakers { data { ...S } } } } fragment S on Staker { rewards { aprs: strategyApys { apy } } }`, nil, true},
		{`{ avs(address: "0xfae013aee223c3659dd348ea518fae7b0d0c8a01") { stakers { data { ...S @include(if: false) } } } } fragment S on Staker { rewards { aprs: strategyApys { apy } } }`, nil, false},
		{`{ operator(address: "0x7e95bf4c5be6a9840e173056c1a044a1656daba5") { stakers { data { ... on Staker { address } } } } }`, nil, false},
		{`{ operator(address: "0x7e95bf4c5be6a9840e173056c1a044a1656daba5") { stakers { data { ... on Staker { tvl { tvl } } } } } }`, nil, true},
	} {
		if got := operationSelects(operationContext(t, tc.query, tc.vars), "Staker", stakerShareFields); got != tc.want {
			t.Errorf("%s %v: operationSelects = %v, want %v", tc.query, tc.vars, got, tc.want)
		}
	}
	if operationSelects(context.Background(), "Staker", stakerShareFields) {
		t.Error("operationSelects without an operation = true")
	}
}

// TestSelectsShareValues checks which operations read stakers' shares with
// their values: those that select a staker's TVL or rewards, or a field of
// any owner's shares other than the amounts and the strategy, and those
// whose selection cannot be read.
func TestSelectsShareValues(t *testing.T) {
	for _, tc := range []struct {
		query string
		vars  map[string]any
		want  bool
	}{
		{`{ stakers { data { address shares { strategyAddress shares depositShares withdrawableShares strategy { symbol } __typename } } } }`, nil, false},
		{`{ stakers { data { shares { ethValue } } } }`, nil, true},
		{`{ stakers { data { shares { underlyingToken } } } }`, nil, true},
		{`{ operators { data { shares { underlyingValue } } } stakers { data { shares { shares } } } }`, nil, true},
		{`query($w: Boolean!) { stakers { data { shares { shares } tvl @include(if: $w) { tvl } } } }`, map[string]any{"w": false}, false},
		{`query($w: Boolean!) { stakers { data { shares { shares } tvl @include(if: $w) { tvl } } } }`, map[string]any{"w": true}, true},
		{`{ stakers { data { ...R } } } fragment R on Staker { rewards { aprs: strategyApys { apy } } }`, nil, true},
		// Variables not coerced (no Boolean): unknown, so the values.
		{`query($w: Boolean!) { stakers { data { shares { shares } tvl @include(if: $w) { tvl } } } }`, nil, true},
	} {
		if got := selectsShareValues(operationContext(t, tc.query, tc.vars)); got != tc.want {
			t.Errorf("%s %v: selectsShareValues = %v, want %v", tc.query, tc.vars, got, tc.want)
		}
	}
	if !selectsShareValues(context.Background()) {
		t.Error("selectsShareValues without an operation = false")
	}
}

// operationContext returns a context of the operation query, validated
// against the schema, with the variables vars.
func operationContext(t *testing.T, query string, vars map[string]any) context.Context {
	t.Helper()
	doc, err := gqlparser.LoadQuery(parsedSchema, query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return graphql.WithOperationContext(context.Background(), &graphql.OperationContext{Doc: doc, Operation: doc.Operations[0], Variables: vars})
}

// TestSelectsWithdrawalShareValues checks which operations read the shares
// of withdrawals with their values: those in which a selection of
// Withdrawal.shares, directly or through fragments and for the variables,
// selects a field other than the amounts and the strategy, whatever the
// shares of other owners select, and those whose selection cannot be read.
func TestSelectsWithdrawalShareValues(t *testing.T) {
	for _, tc := range []struct {
		query string
		vars  map[string]any
		want  bool
	}{
		{`{ withdrawals { data { shares { strategyAddress shares strategy { symbol } } } } }`, nil, false},
		{`{ withdrawals { data { shares { ethValue } } } }`, nil, true},
		{`{ withdrawals { data { shares { shares } } } stakers { data { shares { ethValue } tvl { tvl } } } }`, nil, false},
		{`{ stakers { data { withdrawals { data { shares { underlyingValue } } } } } }`, nil, true},
		{`{ withdrawals { data { shares { shares } } } w: withdrawals { data { ...W } } } fragment W on Withdrawal { shares { ethValue } }`, nil, true},
		{`query($v: Boolean!) { withdrawals { data { shares { shares ethValue @include(if: $v) } } } }`, map[string]any{"v": false}, false},
		{`query($v: Boolean!) { withdrawals { data { shares { shares ethValue @include(if: $v) } } } }`, map[string]any{"v": true}, true},
		{`query($v: Boolean!) { withdrawals { data { ... @skip(if: $v) { shares { ethValue } } } } }`, map[string]any{"v": true}, false},
		// Variables not coerced (no Boolean): unknown, so the values.
		{`query($v: Boolean!) { withdrawals { data { shares { shares ethValue @include(if: $v) } } } }`, nil, true},
	} {
		if got := selectsWithdrawalShareValues(operationContext(t, tc.query, tc.vars)); got != tc.want {
			t.Errorf("%s %v: selectsWithdrawalShareValues = %v, want %v", tc.query, tc.vars, got, tc.want)
		}
	}
	if !selectsWithdrawalShareValues(context.Background()) {
		t.Error("selectsWithdrawalShareValues without an operation = false")
	}
}
