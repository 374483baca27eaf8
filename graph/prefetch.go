package graph

import (
	"context"
	"slices"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/stakegraph/stakegraph/graph/model"
	"github.com/stakegraph/stakegraph/store"
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
func operationSelects(ctx context.Context, object string, fields []string) bool {
	return operationSelectsAny(ctx, func(o, f string) bool { return o == object && slices.Contains(fields, f) }, false)
}

// operationSelectsAny reports whether the operation of ctx selects
// anywhere, in its fragments too, a field of an object type for which
// match is true; unknown is the answer when ctx has no operation. A field
// that @skip or @include leaves out for the operation's variables is not
// selected. The operation was validated and its variables coerced; were a
// directive's condition not a Boolean, the answer would be unknown.
func operationSelectsAny(ctx context.Context, match func(object, field string) bool, unknown bool) bool {
	return inOperation(ctx, unknown, func(set ast.SelectionSet, vars map[string]any) bool {
		return selects(set, vars, match)
	})
}

// inOperation returns what check says of the selection set and variables
// of the operation of ctx, or unknown when ctx has no operation or check
// panics (a directive's condition that is not a Boolean).
func inOperation(ctx context.Context, unknown bool, check func(set ast.SelectionSet, vars map[string]any) bool) (answer bool) {
	if !graphql.HasOperationContext(ctx) {
		return unknown
	}
	oc := graphql.GetOperationContext(ctx)
	if oc.Operation == nil {
		return unknown
	}
	defer func() {
		if recover() != nil {
			answer = unknown
		}
	}()
	return check(oc.Operation.SelectionSet, oc.Variables)
}

// selects is operationSelectsAny within one selection set. A validated
// document has no fragment cycles and a bounded depth.
func selects(set ast.SelectionSet, vars map[string]any, match func(object, field string) bool) bool {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			if !directivesInclude(s.Directives, vars) {
				continue
			}
			if s.ObjectDefinition != nil && match(s.ObjectDefinition.Name, s.Name) {
				return true
			}
			if selects(s.SelectionSet, vars, match) {
				return true
			}
		case *ast.InlineFragment:
			if directivesInclude(s.Directives, vars) && selects(s.SelectionSet, vars, match) {
				return true
			}
		case *ast.FragmentSpread:
			if directivesInclude(s.Directives, vars) && s.Definition != nil && selects(s.Definition.SelectionSet, vars, match) {
				return true
			}
		}
	}
	return false
}

// stakerValueFields are the fields of Staker computed from the values of
// the staker's shares, and shareAmountFields the fields of StrategyShares
// that a staker's positions give without them.
var (
	stakerValueFields = []string{"tvl", "rewards"}
	shareAmountFields = []string{"strategyAddress", "shares", "depositShares", "withdrawableShares", "strategy", "__typename"}
)

// selectsShareValues reports whether the operation of ctx may need the
// values of stakers' shares: whether it selects a field of Staker computed
// from them or a field of StrategyShares (of any owner) other than the
// amounts; without an operation, it may.
func selectsShareValues(ctx context.Context) bool {
	return operationSelectsAny(ctx, func(object, field string) bool {
		switch object {
		case "Staker":
			return slices.Contains(stakerValueFields, field)
		case "StrategyShares":
			return !slices.Contains(shareAmountFields, field)
		}
		return false
	}, true)
}

// selectsWithdrawalShareValues reports whether the operation of ctx may
// need the values of withdrawals' shares: whether any selection of
// Withdrawal.shares selects a field of StrategyShares other than the
// amounts; without an operation, it may. The shares of other owners, such
// as a staker's, come through other loaders and do not count.
func selectsWithdrawalShareValues(ctx context.Context) bool {
	values := func(object, field string) bool {
		return object == "StrategyShares" && !slices.Contains(shareAmountFields, field)
	}
	return inOperation(ctx, true, func(set ast.SelectionSet, vars map[string]any) bool {
		return selectsWithin(set, vars, "Withdrawal", "shares", values)
	})
}

// withdrawalEventAmountFields are the fields of WithdrawalEventStrategy
// that a withdrawal event gives without reading its strategies.
var withdrawalEventAmountFields = []string{"strategy", "shares", "__typename"}

// selectsWithdrawalEventValues reports whether the operation of ctx may
// need the underlying tokens and values of withdrawal events' strategies:
// whether it selects a field of WithdrawalEventStrategy other than the
// amounts; without an operation, it may.
func selectsWithdrawalEventValues(ctx context.Context) bool {
	return operationSelectsAny(ctx, func(object, field string) bool {
		return object == "WithdrawalEventStrategy" && !slices.Contains(withdrawalEventAmountFields, field)
	}, true)
}

// selectsWithin reports whether, in set, a selection of field of object
// (included for vars) selects a field for which match is true (see
// selects).
func selectsWithin(set ast.SelectionSet, vars map[string]any, object, field string, match func(object, field string) bool) bool {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			if !directivesInclude(s.Directives, vars) {
				continue
			}
			if s.ObjectDefinition != nil && s.ObjectDefinition.Name == object && s.Name == field && selects(s.SelectionSet, vars, match) {
				return true
			}
			if selectsWithin(s.SelectionSet, vars, object, field, match) {
				return true
			}
		case *ast.InlineFragment:
			if directivesInclude(s.Directives, vars) && selectsWithin(s.SelectionSet, vars, object, field, match) {
				return true
			}
		case *ast.FragmentSpread:
			if directivesInclude(s.Directives, vars) && s.Definition != nil && selectsWithin(s.Definition.SelectionSet, vars, object, field, match) {
				return true
			}
		}
	}
	return false
}

// primeWithdrawalShares gives the withdrawal share loader the shares of
// withdrawals just read (store.Withdrawal.ShareRows), when the operation
// shows only the amounts of withdrawals' shares: a page of withdrawals
// then costs no statement for its shares, which was the most frequent
// statement of GET /withdrawals. An operation that selects their values
// reads them through the loader as before.
func primeWithdrawalShares(ctx context.Context, withdrawals ...*store.Withdrawal) {
	if len(withdrawals) == 0 {
		return
	}
	l := loadersFor(ctx)
	// A page of stakers asks once per staker: the operation is walked once.
	if values, _ := l.withdrawalShareValues.get(func() (bool, error) { return selectsWithdrawalShareValues(ctx), nil }); values {
		return
	}
	shares := l.withdrawalShares
	for _, w := range withdrawals {
		var set *shareSet
		if rows := w.ShareRows(); len(rows) > 0 {
			set = &shareSet{rows: rows}
		}
		shares.Prime(ctx, w.WithdrawalRoot, set)
	}
}
