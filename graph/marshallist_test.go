package graph

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// selectionAt returns the selection set of the field reached from sel by
// the given response names, looking through fragments.
func selectionAt(t *testing.T, sel ast.SelectionSet, names ...string) ast.SelectionSet {
	t.Helper()
	for _, name := range names {
		f := findField(sel, name)
		if f == nil {
			t.Fatalf("no field %s", name)
		}
		sel = f.SelectionSet
	}
	return sel
}

func findField(sel ast.SelectionSet, name string) *ast.Field {
	for _, s := range sel {
		switch s := s.(type) {
		case *ast.Field:
			if s.Alias == name {
				return s
			}
		case *ast.InlineFragment:
			if f := findField(s.SelectionSet, name); f != nil {
				return f
			}
		case *ast.FragmentSpread:
			if f := findField(s.Definition.SelectionSet, name); f != nil {
				return f
			}
		}
	}
	return nil
}

func TestInlineSelection(t *testing.T) {
	schema := newSchema().Schema()
	for _, tc := range []struct {
		name   string
		query  string
		path   []string
		inline bool
	}{
		{"plain leaves", `{ operators { data { shares { strategyAddress shares __typename } } } }`,
			[]string{"operators", "data", "shares"}, true},
		{"a resolver among the leaves", `{ operators { data { shares { strategyAddress strategy { address } } } } }`,
			[]string{"operators", "data", "shares"}, false},
		{"the operators, whose shares are a resolver", `{ operators { data { address shares { shares } } } }`,
			[]string{"operators", "data"}, false},
		{"plain leaves through fragments", `{ operators { data { shares { ...S ... on StrategyShares { shares } } } } } fragment S on StrategyShares { strategyAddress }`,
			[]string{"operators", "data", "shares"}, true},
		{"a resolver in a fragment", `{ operators { data { shares { ...S } } } } fragment S on StrategyShares { strategy { address } }`,
			[]string{"operators", "data", "shares"}, false},
	} {
		doc, errs := gqlparser.LoadQuery(schema, tc.query)
		if errs != nil {
			t.Fatalf("%s: %v", tc.name, errs)
		}
		sel := selectionAt(t, doc.Operations[0].SelectionSet, tc.path...)
		if got := inlineSelection(sel); got != tc.inline {
			t.Errorf("%s: inlineSelection = %v, want %v", tc.name, got, tc.inline)
		}
	}
}

// concurrentFields names exactly the fields gqlgen resolves in their own
// goroutine, read from generated.go, which marshals every list through
// marshalList (go generate ran both steps).
func TestConcurrentFieldsAreGenerated(t *testing.T) {
	for field, want := range map[string]bool{
		"StrategyShares.strategy":        true,
		"Operator.shares":                true,
		"AvsRegistration.avs":            true,
		"StrategyShares.shares":          false,
		"StrategyShares.strategyAddress": false,
		"Operator.address":               false,
	} {
		if concurrentFields[field] != want {
			t.Errorf("concurrentFields[%s] = %v, want %v", field, concurrentFields[field], want)
		}
	}
	src, err := os.ReadFile("generated.go")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(src), "graphql.MarshalSliceConcurrently(") || !strings.Contains(string(src), "marshalList(ctx, sel,") {
		t.Error("generated.go does not marshal its lists through marshalList: run go generate ./graph")
	}
	if groups, guarded := strings.Count(string(src), "ec.ProcessDeferredGroup("), strings.Count(string(src), "if len(deferLabelToView) > 0 {"); groups == 0 || guarded != groups {
		t.Errorf("generated.go builds the path of %d of %d objects when nothing is deferred: run go generate ./graph", groups-guarded, groups)
	}
}

func TestMarshalListInline(t *testing.T) {
	schema := newSchema().Schema()
	doc, errs := gqlparser.LoadQuery(schema, `{ operators { data { shares { shares } } } }`)
	if errs != nil {
		t.Fatal(errs)
	}
	leaves := selectionAt(t, doc.Operations[0].SelectionSet, "operators", "data", "shares")
	// The recover function of the response reports the panic as the
	// service's does, without gqlgen's default stack dump on stderr.
	var recovered []any
	ctx := graphql.WithResponseContext(context.Background(), graphql.DefaultErrorPresenter, func(_ context.Context, v any) error {
		recovered = append(recovered, v)
		return errors.New("internal system error")
	})

	// In order, one element at a time, each with its index.
	var trace []string
	ret := marshalList(ctx, leaves, 3, func(ctx context.Context, i int) graphql.Marshaler {
		fc := graphql.GetFieldContext(ctx)
		if fc == nil || fc.Index == nil || *fc.Index != i {
			t.Errorf("element %d: field context %+v", i, fc)
		}
		trace = append(trace, "start", "end")
		return graphql.MarshalInt(i)
	})
	if len(ret) != 3 || strings.Join(trace, " ") != "start end start end start end" {
		t.Errorf("marshalled %d elements, trace %v", len(ret), trace)
	}

	// A panic is the list's error and the list is null, as with gqlgen.
	ret = marshalList(ctx, leaves, 3, func(ctx context.Context, i int) graphql.Marshaler {
		if i == 1 {
			panic("broken element")
		}
		return graphql.MarshalInt(i)
	})
	if ret != nil {
		t.Errorf("after a panic: %v, want nil", ret)
	}
	if errs := graphql.GetErrors(ctx); len(errs) != 1 || len(recovered) != 1 || recovered[0] != "broken element" {
		t.Errorf("after a panic: errors %v, recovered %v; want one, the element's panic", errs, recovered)
	}
}
