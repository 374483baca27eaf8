package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// marshalList marshals the n elements of a list of objects whose selection
// is sel; generated.go calls it for every such list (see execgen, whose
// list template calls it where gqlgen's calls
// graphql.MarshalSliceConcurrently).
//
// gqlgen marshals each element in its own goroutine so that the elements'
// resolvers run concurrently and their dataloader calls gather into one
// batch. When sel reaches no field that gqlgen resolves concurrently, at
// any depth, no element can wait on a loader or anything else, and the
// goroutines are pure cost: the elements are marshalled in order on the
// calling goroutine, with the same field context per element and the same
// handling of a panic as gqlgen's.
func marshalList(ctx context.Context, sel ast.SelectionSet, n int, marshal func(ctx context.Context, i int) graphql.Marshaler) graphql.Array {
	if n <= 1 || !inlineSelection(sel) {
		return graphql.MarshalSliceConcurrently(ctx, n, 0, false, marshal)
	}
	ret := make(graphql.Array, n)
	for i := range n {
		if !marshalElement(ctx, i, ret, marshal) {
			return nil
		}
	}
	return ret
}

// marshalElement marshals element i into ret[i]; false if it panicked, in
// which case the panic is the field's error, as gqlgen reports it.
func marshalElement(ctx context.Context, i int, ret graphql.Array, marshal func(ctx context.Context, i int) graphql.Marshaler) (ok bool) {
	index := i
	ctx = graphql.WithFieldContext(ctx, &graphql.FieldContext{Index: &index})
	defer func() {
		if r := recover(); r != nil {
			graphql.AddError(ctx, graphql.Recover(ctx, r))
			ok = false
		}
	}()
	ret[i] = marshal(ctx, i)
	return true
}

// inlineSelection reports whether marshalling a selection set reaches no
// field that gqlgen resolves in its own goroutine (concurrentFields), at any
// depth. Fields of interfaces count as concurrent: which object's field
// runs is known only then. The schema has no @defer (see init in
// defer.go), so no fragment here is deferred.
func inlineSelection(sel ast.SelectionSet) bool {
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			if s.Name == "__typename" {
				continue
			}
			if s.ObjectDefinition == nil || s.ObjectDefinition.Kind != ast.Object ||
				concurrentFields[s.ObjectDefinition.Name+"."+s.Name] {
				return false
			}
			if !inlineSelection(s.SelectionSet) {
				return false
			}
		case *ast.InlineFragment:
			if !inlineSelection(s.SelectionSet) {
				return false
			}
		case *ast.FragmentSpread:
			if s.Definition == nil || !inlineSelection(s.Definition.SelectionSet) {
				return false
			}
		default:
			return false
		}
	}
	return true
}
