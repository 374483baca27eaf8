package graph_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stakegraph/stakegraph/graph"
)

// TestInterpreterMatchesExecutor runs queries of the kinds frontends send
// to /graphql, exercising what the interpreter plans (aliases, fragments,
// inline fragments, __typename, @include and @skip with variables, nulls,
// nested lists that batch through dataloaders), both with the interpreter
// and through gqlgen's executor, and requires the same bytes. Queries the
// interpreter must leave to gqlgen's executor are checked to be declined.
func TestInterpreterMatchesExecutor(t *testing.T) {
	db := demoDB(t)
	ex := graph.NewExecutor(db, testOptions())
	ctx := context.Background()
	const (
		avs      = "0xfae013aee223c3659dd348ea518fae7b0d0c8a01"
		operator = "0x7e95bf4c5be6a9840e173056c1a044a1656daba5"
		missing  = "0x0000000000000000000000000000000000000001"
	)
	before := graph.ReadFastPathRuns()
	declines := 0
	for _, tc := range []struct {
		name    string
		query   string
		vars    map[string]any
		decline bool
	}{
		{name: "nested page", query: `{ operators(take: 50, sortByTotalStakers: desc) { data { address totalStakers shares { strategyAddress shares } avsRegistrations { avsAddress avs { address metadataName } } } meta { total skip take } } }`},
		{name: "aliases and typename", query: `{ first: operators(take: 2) { data { __typename id: address n: totalStakers } } second: operators(take: 2, skip: 2) { data { address } } }`},
		{name: "fragments", query: `query { avsList(take: 5) { data { ...A ... on Avs { totalOperators } } } } fragment A on Avs { address metadataName tvl { tvl tvlStrategies } }`},
		{name: "include and skip", query: `query($t: Boolean!, $s: Boolean!) { avsList(take: 3) { data { address tvl @include(if: $t) { tvl } totalStakers @skip(if: $s) } } }`, vars: map[string]any{"t": true, "s": true}},
		{name: "include and skip off", query: `query($t: Boolean!, $s: Boolean!) { avsList(take: 3) { data { address tvl @include(if: $t) { tvl } totalStakers @skip(if: $s) } } }`, vars: map[string]any{"t": false, "s": false}},
		{name: "lookup", query: `query($a: Address!) { avs(address: $a) { address metadataName operators(take: 3) { data { address } } } }`, vars: map[string]any{"a": avs}},
		{name: "null lookup", query: `query($a: Address!) { avs(address: $a) { address } operator(address: $a) { address } }`, vars: map[string]any{"a": missing}},
		{name: "operator page", query: `query($o: Address!) { operator(address: $o) { address metadataName tvl { tvl tvlStrategiesEth } avsRegistrations { avsAddress isActive restakedStrategies avs { metadataName operators(take: 2) { meta { total } } } } } }`, vars: map[string]any{"o": operator}},
		{name: "introspection", query: `{ __schema { queryType { name } } }`, decline: true},
		{name: "the same key twice", query: `{ operators(take: 1) { data { address address } } }`, decline: true},
		{name: "an invalid argument", query: `{ operators(take: 5000) { data { address } } }`, decline: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			interpreted, ok := ex.ExecuteInterpreted(ctx, tc.query, tc.vars)
			general, err := ex.ExecuteUncompiled(ctx, tc.query, tc.vars)
			switch {
			case tc.decline && ok:
				t.Fatalf("the interpreter answered %s", interpreted)
			case tc.decline:
				declines++
				return
			case err != nil:
				t.Fatalf("gqlgen's executor: %v", err)
			case !ok:
				t.Fatal("the interpreter declined")
			case !bytes.Equal(interpreted, general):
				t.Errorf("interpreted %s\ngqlgen      %s", interpreted, general)
			}
		})
	}
	after := graph.ReadFastPathRuns()
	if got := after.InterpretedDeclined - before.InterpretedDeclined; got < int64(declines) {
		t.Errorf("%d interpreter declines counted; want at least %d", got, declines)
	}
	if after.InterpretedAnswered-before.InterpretedAnswered < 8 {
		t.Errorf("%d interpreted answers counted; want at least 8", after.InterpretedAnswered-before.InterpretedAnswered)
	}
}
