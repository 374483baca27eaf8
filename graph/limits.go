package graph

import (
	"context"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/stakegraph/stakegraph/graph/model"
	"github.com/stakegraph/stakegraph/store"
)

// depthLimitExceeded is the gqlgen-style code of a too-deep operation; the
// error presenter reports it as unprocessable_entity.
const depthLimitExceeded = "DEPTH_LIMIT_EXCEEDED"

func init() {
	// Operations rejected for their size are protocol errors, which gqlgen's
	// HTTP transports answer with status 422 like other invalid operations.
	errcode.RegisterErrorType(depthLimitExceeded, errcode.KindProtocol)
	errcode.RegisterErrorType(gqlgenComplexityLimit, errcode.KindProtocol)
}

// depthLimit is a handler extension that rejects operations nested deeper
// than max fields. Introspection fields (__schema, __type) do not count, so
// that tools can always read the schema.
type depthLimit struct {
	max int
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = depthLimit{}

func (d depthLimit) ExtensionName() string { return "DepthLimit" }

func (d depthLimit) Validate(graphql.ExecutableSchema) error { return nil }

func (d depthLimit) MutateOperationContext(ctx context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	if depth := selectionDepth(opCtx.Operation.SelectionSet, map[string]bool{}); depth > d.max {
		err := gqlerror.Errorf("operation has depth %d, which exceeds the limit of %d", depth, d.max)
		err.Extensions = map[string]any{"code": depthLimitExceeded}
		return err
	}
	return nil
}

// selectionDepth returns the depth of the deepest field in set, following
// fragments (each at most once on a path, so that cycles, which validation
// rejects anyway, cannot loop).
func selectionDepth(set ast.SelectionSet, visiting map[string]bool) int {
	deepest := 0
	for _, sel := range set {
		var d int
		switch s := sel.(type) {
		case *ast.Field:
			if strings.HasPrefix(s.Name, "__") {
				continue
			}
			d = 1 + selectionDepth(s.SelectionSet, visiting)
		case *ast.InlineFragment:
			d = selectionDepth(s.SelectionSet, visiting)
		case *ast.FragmentSpread:
			if visiting[s.Name] || s.Definition == nil {
				continue
			}
			visiting[s.Name] = true
			d = selectionDepth(s.Definition.SelectionSet, visiting)
			delete(visiting, s.Name)
		}
		deepest = max(deepest, d)
	}
	return deepest
}

// Assumed lengths of lists that take no page arguments, for the complexity
// of a query: a network has a few dozen strategies, an operator registers to
// a few dozen AVS, an operator-directed rewards submission names a few dozen
// operators.
const (
	strategyListLength     = 15
	registrationListLength = 20
	operatorRewardsLength  = 20
)

// pagedComplexity is the complexity of a paged field: its page size times
// the complexity of one element (plus the page itself).
func pagedComplexity(child int, take *int) int {
	n := defaultTake
	if take != nil && *take > 0 {
		n = *take
	}
	return 1 + n*child
}

// setComplexity sets the complexity functions of the fields that return
// lists, so that the complexity limit bounds the rows an operation can make
// the database return. Other fields cost 1 plus their children.
func setComplexity(c *ComplexityRoot) {
	perStrategy := func(child int) int { return 1 + strategyListLength*child }
	perRegistration := func(child int) int { return 1 + registrationListLength*child }

	c.Query.AvsList = func(child int, _ *model.SearchMode, _ *string, _, _, _, _ *model.SortOrder, _ *bool, _, take *int) int {
		return pagedComplexity(child, take)
	}
	c.Query.AvsAddresses = func(child int, _ *model.SearchMode, _ *string, _ *bool, _, take *int) int {
		return pagedComplexity(child, take)
	}
	c.Query.Operators = func(child int, _ *model.SearchMode, _ *string, _, _, _, _ *model.SortOrder, _, take *int) int {
		return pagedComplexity(child, take)
	}
	c.Query.Withdrawals = func(child int, _, _, _ *string, _ *model.WithdrawalStatus, _, take *int) int {
		return pagedComplexity(child, take)
	}
	c.Query.OperatorSets = func(child int, _ *string, _, take *int) int { return pagedComplexity(child, take) }
	c.Query.Slashings = func(child int, _, _, _, _, _ *string, _, take *int) int { return pagedComplexity(child, take) }
	c.Query.Strategies = perStrategy
	c.Query.RewardStrategies = perStrategy

	c.Avs.Operators = func(child int, _ *model.SearchMode, _ *string, _ *bool, _ *model.SortOrder, _, take *int) int {
		return pagedComplexity(child, take)
	}
	c.Avs.Stakers = func(child int, _, take *int) int { return pagedComplexity(child, take) }
	c.Avs.Shares = perStrategy
	c.Avs.StrategyApys = perStrategy
	c.Avs.RestakeableStrategies = perStrategy
	c.AvsRewards.Submissions = func(child int, _, take *int) int {
		if take == nil {
			max := store.MaxTake
			take = &max
		}
		return pagedComplexity(child, take)
	}
	c.AvsRewards.RewardStrategies = perStrategy
	c.Avs.OperatorSets = func(child int, _, take *int) int { return pagedComplexity(child, take) }
	c.AvsRewards.RewardTokens = perStrategy

	c.Operator.Stakers = func(child int, _, take *int) int { return pagedComplexity(child, take) }
	c.Operator.DelegationEvents = func(child int, _ *string, _ *model.DelegationEventType, _, _, _, _ *string, _, take *int) int {
		return pagedComplexity(child, take)
	}
	c.Operator.Shares = perStrategy
	c.Operator.AvsRegistrations = perRegistration
	c.Operator.MaxMagnitudes = perStrategy
	c.Operator.Allocations = func(child int, _, take *int) int { return pagedComplexity(child, take) }
	c.Operator.OperatorSets = func(child int, _ *bool, _, take *int) int { return pagedComplexity(child, take) }
	c.Operator.Slashings = func(child int, _, take *int) int { return pagedComplexity(child, take) }
	c.AvsOperator.Shares = perStrategy
	c.AvsOperator.AvsRegistrations = perRegistration

	c.Staker.DelegationEvents = func(child int, _ *string, _ *model.DelegationEventType, _, _, _, _ *string, _, take *int) int {
		return pagedComplexity(child, take)
	}
	c.Staker.Withdrawals = func(child int, _ *model.WithdrawalStatus, _, take *int) int {
		return pagedComplexity(child, take)
	}
	c.Staker.Deposits = func(child int, _, take *int) int { return pagedComplexity(child, take) }
	c.Staker.Shares = perStrategy
	c.Withdrawal.Shares = perStrategy
	c.RewardsSubmission.Strategies = perStrategy
	c.RewardsSubmission.Operators = func(child int) int { return 1 + operatorRewardsLength*child }
	c.Withdrawal.ScaledShares = perStrategy
	c.Withdrawal.PayoutShares = perStrategy

	c.OperatorSet.Strategies = perStrategy
	c.OperatorSet.AllocatedStake = perStrategy
	c.OperatorSet.Operators = func(child int, _ *bool, _, take *int) int { return pagedComplexity(child, take) }
	c.OperatorSet.Slashings = func(child int, _, take *int) int { return pagedComplexity(child, take) }
	c.OperatorSet.RewardsSubmissions = func(child int, _, take *int) int { return pagedComplexity(child, take) }
	c.OperatorSetMember.Allocations = perStrategy
	c.Slashing.Strategies = perStrategy
	c.Metrics.StakerCountHistory = func(child int, _ *string, _ *model.CountVariant, _, _ *string) int {
		return 1 + 365*child
	}
}
