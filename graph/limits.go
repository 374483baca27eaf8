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
	errcode.RegisterErrorType(documentLimitExceeded, errcode.KindProtocol)
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

// costLimit is a handler extension that rejects operations whose cost
// exceeds max. The cost is gqlgen's complexity, with the complexity
// functions of setComplexity (a paged field costs its page size times its
// elements), and three more rules:
//
//   - introspection counts: a list of the schema's types, fields,
//     arguments and so on is charged as many elements as the schema has
//     on average (see introspectionLengths), where gqlgen counts nothing
//     under __schema;
//   - a root field, and a field that takes a page size (which may need a
//     statement of its own for each distinct page), costs at least
//     minStatementFieldCost, so that thousands of aliased lookups or pages
//     of one row exceed the limit;
//   - the cost of a field saturates at maxCost, so that the product of
//     page sizes cannot overflow.
//
// It runs after validation, whose cost documentLimits bounds.
type costLimit struct {
	es      graphql.ExecutableSchema
	max     int
	lengths map[string]int
}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = costLimit{}

// minStatementFieldCost is the least a root field or a paged field costs.
const minStatementFieldCost = 50

// maxCost is where costs saturate: far above any limit, and small enough
// that a page size times it does not overflow.
const maxCost = 1 << 31

func newCostLimit(es graphql.ExecutableSchema, max int) costLimit {
	return costLimit{es: es, max: max, lengths: introspectionLengths(es.Schema())}
}

func (c costLimit) ExtensionName() string { return "CostLimit" }

func (c costLimit) Validate(graphql.ExecutableSchema) error { return nil }

func (c costLimit) MutateOperationContext(ctx context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	w := costWalker{ctx: ctx, es: c.es, schema: c.es.Schema(), vars: opCtx.Variables, lengths: c.lengths}
	if cost := w.selectionSet(opCtx.Operation.SelectionSet, true); cost > c.max {
		err := gqlerror.Errorf("operation has complexity %d, which exceeds the limit of %d", cost, c.max)
		errcode.Set(err, gqlgenComplexityLimit)
		return err
	}
	return nil
}

// operationCost returns the cost costLimit computes for op, a validated
// operation, with vars.
func operationCost(ctx context.Context, es graphql.ExecutableSchema, op *ast.OperationDefinition, vars map[string]any) int {
	w := costWalker{ctx: ctx, es: es, schema: es.Schema(), vars: vars, lengths: introspectionLengths(es.Schema())}
	return w.selectionSet(op.SelectionSet, true)
}

// costWalker computes the cost of a validated operation.
type costWalker struct {
	ctx     context.Context
	es      graphql.ExecutableSchema
	schema  *ast.Schema
	vars    map[string]any
	lengths map[string]int
}

// selectionSet returns the cost of set; root tells whether it is the
// operation's.
func (w *costWalker) selectionSet(set ast.SelectionSet, root bool) int {
	total := 0
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			total += w.field(s, root)
		case *ast.InlineFragment:
			total += w.selectionSet(s.SelectionSet, root)
		case *ast.FragmentSpread:
			if s.Definition != nil {
				total += w.selectionSet(s.Definition.SelectionSet, root)
			}
		}
		total = min(total, maxCost)
	}
	return total
}

// field returns the cost of f.
func (w *costWalker) field(f *ast.Field, root bool) int {
	if f.Definition == nil || f.ObjectDefinition == nil {
		return 1
	}
	child := min(w.selectionSet(f.SelectionSet, false), maxCost)
	parent := f.ObjectDefinition
	var cost int
	if n, ok := w.lengths[parent.Name+"."+f.Name]; ok {
		cost = 1 + n*child
	} else {
		args := f.ArgumentMap(w.vars)
		cost = w.custom(parent, f.Name, child, args)
		if cost < 1 {
			cost = 1 + child
		}
	}
	introspection := strings.HasPrefix(f.Name, "__")
	if !introspection && (root || f.Definition.Arguments.ForName("take") != nil) {
		cost = max(cost, minStatementFieldCost)
	}
	return min(cost, maxCost)
}

// custom returns the complexity function's cost of the field name of
// parent, or 0 when it has none. A field of an interface costs what it
// costs in the most costly implementation.
func (w *costWalker) custom(parent *ast.Definition, name string, child int, args map[string]any) int {
	types := []*ast.Definition{parent}
	if parent.Kind == ast.Interface {
		types = w.schema.GetPossibleTypes(parent)
	}
	cost := 0
	for _, t := range types {
		if c, ok := w.es.Complexity(w.ctx, t.Name, name, child, args); ok {
			if c < 0 {
				c = maxCost // an overflow
			}
			cost = max(cost, c)
		}
	}
	return cost
}

// introspectionLengths returns the lengths charged for the lists of the
// introspection types, keyed by type and field ("__Type.fields"): the
// schema's number of types and directives, and for the lists of a type,
// field or directive, their average length in the schema, rounded up and
// at least 1.
func introspectionLengths(s *ast.Schema) map[string]int {
	avg := func(total, n int) int {
		if n == 0 {
			return 1
		}
		return max(1, (total+n-1)/n)
	}
	var (
		objects, fields, args          int
		inputs, inputFields            int
		enums, enumValues              int
		interfacesOf, abstract, possib int
		dirArgs, locations             int
	)
	for _, t := range s.Types {
		switch t.Kind {
		case ast.Object, ast.Interface:
			objects++
			fields += len(t.Fields)
			interfacesOf += len(t.Interfaces)
			for _, f := range t.Fields {
				args += len(f.Arguments)
			}
			if t.Kind == ast.Interface {
				abstract++
				possib += len(s.GetPossibleTypes(t))
			}
		case ast.Union:
			abstract++
			possib += len(t.Types)
		case ast.InputObject:
			inputs++
			inputFields += len(t.Fields)
		case ast.Enum:
			enums++
			enumValues += len(t.EnumValues)
		}
	}
	for _, d := range s.Directives {
		dirArgs += len(d.Arguments)
		locations += len(d.Locations)
	}
	return map[string]int{
		"__Schema.types":        max(1, len(s.Types)),
		"__Schema.directives":   max(1, len(s.Directives)),
		"__Type.fields":         avg(fields, objects),
		"__Type.interfaces":     avg(interfacesOf, objects),
		"__Type.possibleTypes":  avg(possib, abstract),
		"__Type.enumValues":     avg(enumValues, enums),
		"__Type.inputFields":    avg(inputFields, inputs),
		"__Field.args":          avg(args, fields),
		"__Directive.args":      avg(dirArgs, len(s.Directives)),
		"__Directive.locations": avg(locations, len(s.Directives)),
	}
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
	c.Query.DelegationEvents = func(child int, _ *string, _ *model.DelegationEventType, _, _, _, _, _ *string, _, take *int) int {
		return pagedComplexity(child, take)
	}
	c.Query.Stakers = func(child int, _ *string, _, take *int) int { return pagedComplexity(child, take) }
	c.Query.Deposits = func(child int, _, _, _ *string, _, take *int) int { return pagedComplexity(child, take) }
	c.Query.DepositEvents = func(child int, _, _, _, _, _, _ *string, _, take *int) int { return pagedComplexity(child, take) }
	c.Query.WithdrawalEvents = func(child int, _ *string, _ *model.WithdrawalEventType, _, _, _, _, _, _ *string, _, take *int) int {
		return pagedComplexity(child, take)
	}
	c.Query.RewardsEvents = func(child int, _, _, _, _, _, _ *string, _, take *int) int { return pagedComplexity(child, take) }
	c.Query.RegistrationEvents = func(child int, _ *string, _ *model.RegistrationEventStatus, _, _, _, _ *string, _, take *int) int {
		return pagedComplexity(child, take)
	}
	c.WithdrawalEventArgs.Strategies = perStrategy
	c.StakerRewards.StrategyApys = perStrategy
	c.StakerRewards.TokenAmounts = perStrategy
	c.StakerRewards.AvsApys = perRegistration
	c.StakerAvsApy.Strategies = perStrategy
	c.RewardsEventArgs.Strategies = perStrategy
	c.Query.Strategies = perStrategy
	c.Query.RewardStrategies = perStrategy

	c.Avs.Operators = func(child int, _ *model.SearchMode, _ *string, _ *bool, _ *model.SortOrder, _, take *int) int {
		return pagedComplexity(child, take)
	}
	c.Avs.Stakers = func(child int, _ *string, _, take *int) int { return pagedComplexity(child, take) }
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
	c.Metrics.CountHistory = func(child int, _ model.CountSeries, _ *string, _ *model.CountVariant, _, _ *string) int {
		return 1 + 365*child
	}
	c.Metrics.TvlHistory = func(child int, _ model.TvlSeries, _ *string, _ *model.CountVariant, _, _ *string) int {
		return 1 + 365*child
	}
	c.Metrics.ValueHistory = func(child int, _ model.ValueSeries, _ *string, _ *model.CountVariant, _, _ *string) int {
		return 1 + 365*child
	}
	c.Metrics.StrategyTvlHistory = func(child int, _ string, _ *string, _ *model.CountVariant, _, _ *string) int {
		return 1 + 365*child
	}
	c.Metrics.OperatorHistory = func(child int, _ string, _ *string, _ *model.CountVariant, _, _ *string) int {
		return 1 + 365*child
	}
	c.Metrics.AvsHistory = func(child int, _ string, _ *string, _ *model.CountVariant, _, _ *string) int {
		return 1 + 365*child
	}
}
