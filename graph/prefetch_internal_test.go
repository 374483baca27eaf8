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
// fields of stakers or the shares of other objects.
func TestOperationSelects(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  bool
	}{
		{`{ stakers { data { address } } }`, false},
		{`{ stakers { data { address shares { shares } } } }`, true},
		{`{ operators { data { address shares { shares } tvl { tvl } } } }`, false},
		{`query($w: Boolean!) { stakers { data { tvl @include(if: $w) { tvl } } } }`, true},
		{`{ avs(address: "0xfae013aee223c3659dd348ea518fae7b0d0c8a01") { stakers { data { ...S } } } } fragment S on Staker { rewards { aprs: strategyApys { apy } } }`, true},
		{`{ operator(address: "0x7e95bf4c5be6a9840e173056c1a044a1656daba5") { stakers { data { ... on Staker { address } } } } }`, false},
		{`{ operator(address: "0x7e95bf4c5be6a9840e173056c1a044a1656daba5") { stakers { data { ... on Staker { tvl { tvl } } } } } }`, true},
	} {
		doc, err := gqlparser.LoadQuery(parsedSchema, tc.query)
		if err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		ctx := graphql.WithOperationContext(context.Background(), &graphql.OperationContext{Doc: doc, Operation: doc.Operations[0]})
		if got := operationSelects(ctx, "Staker", stakerShareFields); got != tc.want {
			t.Errorf("%s: operationSelects = %v, want %v", tc.query, got, tc.want)
		}
	}
	if operationSelects(context.Background(), "Staker", stakerShareFields) {
		t.Error("operationSelects without an operation = true")
	}
}
