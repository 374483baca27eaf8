package graph

import (
	"context"
	"slices"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/stakegraph/stakegraph/graph/model"
)

// stakerShareFields are the fields of Staker resolved from the staker's
// shares (the staker share loader).
var stakerShareFields = []string{"shares", "tvl", "rewards"}

// prefetchStakerShares asks the staker share loader for the shares of a
// page of stakers all at once, when the operation selects a field of a
// staker that needs them. The page's elements ask for their shares each
// from its own goroutine; under load the last of a page of a hundred asked
// after the loader's batch window had closed, so that a page's shares took
// two statements (a fifth of the uncached /stakers requests of the bench).
// The elements then find their pending result in the loader's cache.
func prefetchStakerShares(ctx context.Context, stakers []*model.Staker) {
	if len(stakers) == 0 || !operationSelects(ctx, "Staker", stakerShareFields) {
		return
	}
	shares := loadersFor(ctx).stakerShares
	for _, s := range stakers {
		if s != nil {
			shares.Load(ctx, s.Address)
		}
	}
}

// operationSelects reports whether the operation of ctx selects one of
// the given fields of the object type anywhere, in its fragments too.
// Directives are not evaluated: a field left out by @skip or @include
// counts as selected, which costs at most an unneeded read.
func operationSelects(ctx context.Context, object string, fields []string) bool {
	if !graphql.HasOperationContext(ctx) {
		return false
	}
	op := graphql.GetOperationContext(ctx).Operation
	return op != nil && selects(op.SelectionSet, object, fields)
}

// selects is operationSelects within one selection set. A validated
// document has no fragment cycles and a bounded depth.
func selects(set ast.SelectionSet, object string, fields []string) bool {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			if s.ObjectDefinition != nil && s.ObjectDefinition.Name == object && slices.Contains(fields, s.Name) {
				return true
			}
			if selects(s.SelectionSet, object, fields) {
				return true
			}
		case *ast.InlineFragment:
			if selects(s.SelectionSet, object, fields) {
				return true
			}
		case *ast.FragmentSpread:
			if s.Definition != nil && selects(s.Definition.SelectionSet, object, fields) {
				return true
			}
		}
	}
	return false
}
