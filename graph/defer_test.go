package graph

import (
	"strings"
	"testing"

	"github.com/vektah/gqlparser/v2"
)

// TestSchemaHasNoDefer checks that @defer, which the service cannot
// deliver, is neither listed nor accepted, while the other built-in
// directives still are.
func TestSchemaHasNoDefer(t *testing.T) {
	schema := newSchema().Schema()
	if schema.Directives["defer"] != nil {
		t.Error("the schema declares @defer")
	}
	for _, name := range []string{"include", "skip", "deprecated", "specifiedBy"} {
		if schema.Directives[name] == nil {
			t.Errorf("the schema lost @%s", name)
		}
	}
	_, errs := gqlparser.LoadQuery(schema, `{ ... @defer { __typename } }`)
	if len(errs) == 0 || !strings.Contains(errs.Error(), `Unknown directive "@defer"`) {
		t.Errorf("a deferred fragment validated: %v", errs)
	}
	if _, errs := gqlparser.LoadQuery(schema, `{ ... @include(if: true) { __typename } }`); errs != nil {
		t.Errorf("@include: %v", errs)
	}
}
