package graph

import (
	"bytes"
	"context"
	"strconv"
	"sync"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
)

// Queries sent to /graphql are not known in advance, so they cannot be
// compiled like the REST routes' operations; they are interpreted instead.
// A query is planned once per request from its validated document (its
// fields collected per object, fragments inlined, what @include and @skip
// leave to the variables kept for run time), and the plan is executed with
// the table of fields execgen generates (fields_gen.go): for each field of
// the schema, the argument function, resolver, method or struct field and
// leaf marshaller gqlgen's generated code uses, as functions over an
// object of any type. Like a compiled operation, an interpreted query
// gives up on anything but a clean result, and gqlgen's executor then
// runs it and answers, errors included; a query the plan cannot express
// (introspection, a field missing from the table, the same response key
// selected twice) goes to gqlgen's executor at once.

// fieldArgs holds a field's coerced arguments under the name gqlgen's
// generated calls read them from (fc.Args).
type fieldArgs struct{ Args map[string]any }

// fieldKind says what a field's value is.
type fieldKind int

const (
	leafField   fieldKind = iota // a scalar, an enum or a list of them
	objectField                  // an object
	listField                    // a list of objects
)

// An interpretedField is one field of the schema as the interpreter
// resolves it; fields_gen.go holds them all.
type interpretedField struct {
	kind fieldKind
	// args coerces the field's arguments; nil for a field without any.
	args func(ec *executionContext, ctx context.Context, raw map[string]any) (map[string]any, error)
	// concurrent says that gqlgen resolves the field in its own
	// goroutine: it may wait on a dataloader.
	concurrent bool
	// nonNull says that the field's type is non-null, and for a list,
	// elemNonNull that its elements' is.
	nonNull, elemNonNull bool
	// object is the name of the object type of an object or list field.
	object string

	// leaf resolves the field of o and writes its value; false on an
	// error or a forbidden null.
	leaf func(ec *executionContext, ctx context.Context, o any, fc fieldArgs, w *bytes.Buffer) bool
	// resolve resolves an object field of o: the object, nil for null.
	resolve func(ec *executionContext, ctx context.Context, o any, fc fieldArgs) (any, bool)
	// list resolves a list field of o: its elements (nil for a null
	// element), or null.
	list func(ec *executionContext, ctx context.Context, o any, fc fieldArgs) (items []any, null, ok bool)
}

// A planObject is the selection on one object type: its fields in the
// order gqlgen writes them.
type planObject struct {
	fields []planField
	// spawned are the indexes of the fields resolved each in its own
	// goroutine, when there are two or more concurrent fields.
	spawned []int
	// waits says that resolving the selection may wait on a dataloader,
	// at any depth: the elements of a list of such objects are resolved
	// concurrently.
	waits bool
}

// A planField is one selected field.
type planField struct {
	// key is the response key, quoted and followed by a colon.
	key  string
	node *ast.Field
	// conditional says that @include or @skip decide at run time.
	conditional bool
	// typename, for __typename, is the quoted name of the object.
	typename string
	spec     *interpretedField
	children *planObject
}

// planQuery plans the selection set of a query's operation, false when the
// interpreter cannot run it.
func planQuery(op *ast.OperationDefinition, queryType string) (*planObject, bool) {
	if op.Operation != ast.Query {
		return nil, false
	}
	return planSelection(op.SelectionSet, queryType, true)
}

func planSelection(set ast.SelectionSet, object string, root bool) (*planObject, bool) {
	p := &planObject{}
	seen := map[string]bool{}
	var concurrent []int
	var walk func(set ast.SelectionSet) bool
	walk = func(set ast.SelectionSet) bool {
		for _, s := range set {
			switch s := s.(type) {
			case *ast.Field:
				if seen[s.Alias] {
					return false
				}
				seen[s.Alias] = true
				for _, d := range s.Directives {
					if d.Name != "include" && d.Name != "skip" {
						return false
					}
				}
				f := planField{key: strconv.Quote(s.Alias) + ":", node: s, conditional: len(s.Directives) > 0}
				if s.Name == "__typename" {
					f.typename = strconv.Quote(object)
					p.fields = append(p.fields, f)
					continue
				}
				spec := interpretedFields[object+"."+s.Name]
				if spec == nil {
					return false
				}
				f.spec = spec
				if spec.kind != leafField {
					children, ok := planSelection(s.SelectionSet, spec.object, false)
					if !ok {
						return false
					}
					f.children = children
					p.waits = p.waits || children.waits
				}
				if spec.concurrent {
					p.waits = true
					concurrent = append(concurrent, len(p.fields))
				}
				p.fields = append(p.fields, f)
			case *ast.FragmentSpread:
				if len(s.Directives) > 0 || s.Definition == nil || s.Definition.TypeCondition != object {
					return false
				}
				if !walk(s.Definition.SelectionSet) {
					return false
				}
			case *ast.InlineFragment:
				if len(s.Directives) > 0 || (s.TypeCondition != "" && s.TypeCondition != object) {
					return false
				}
				if !walk(s.SelectionSet) {
					return false
				}
			default:
				return false
			}
		}
		return true
	}
	if !walk(set) {
		return nil, false
	}
	if len(concurrent) > 1 {
		p.spawned = concurrent
	}
	return p, true
}

// interpreter executes a plan for one request.
type interpreter struct {
	ec *executionContext
}

// object writes the selection p on obj.
func (in interpreter) object(ctx context.Context, obj any, p *planObject, w *bytes.Buffer) bool {
	vars := in.ec.Variables
	var parts []bytes.Buffer
	var oks []bool
	if len(p.spawned) > 0 {
		parts = make([]bytes.Buffer, len(p.spawned))
		oks = make([]bool, len(p.spawned))
		var wg sync.WaitGroup
		for j, i := range p.spawned {
			f := &p.fields[i]
			if f.conditional && !included(f.node, vars) {
				continue
			}
			wg.Add(1)
			goConcurrently(func() {
				defer wg.Done()
				defer swallowPanic()
				oks[j] = in.value(ctx, obj, f, &parts[j])
			})
		}
		wg.Wait()
	}
	w.WriteByte('{')
	sep, slot := false, 0
	for i := range p.fields {
		f := &p.fields[i]
		spawned := slot < len(p.spawned) && p.spawned[slot] == i
		if spawned {
			slot++
		}
		if f.conditional && !included(f.node, vars) {
			continue
		}
		if sep {
			w.WriteByte(',')
		}
		sep = true
		w.WriteString(f.key)
		switch {
		case f.typename != "":
			w.WriteString(f.typename)
		case spawned:
			if !oks[slot-1] {
				return false
			}
			w.Write(parts[slot-1].Bytes())
		default:
			if !in.value(ctx, obj, f, w) {
				return false
			}
		}
	}
	w.WriteByte('}')
	return true
}

// value resolves field f of obj and writes its value.
func (in interpreter) value(ctx context.Context, obj any, f *planField, w *bytes.Buffer) bool {
	spec := f.spec
	var fc fieldArgs
	if spec.args != nil {
		var err error
		if fc.Args, err = spec.args(in.ec, ctx, f.node.ArgumentMap(in.ec.Variables)); err != nil {
			return false
		}
	}
	switch spec.kind {
	case leafField:
		return spec.leaf(in.ec, ctx, obj, fc, w)
	case objectField:
		v, ok := spec.resolve(in.ec, ctx, obj, fc)
		switch {
		case !ok:
			return false
		case v == nil && spec.nonNull:
			return false
		case v == nil:
			w.WriteString("null")
			return true
		}
		return in.object(ctx, v, f.children, w)
	default:
		items, null, ok := spec.list(in.ec, ctx, obj, fc)
		switch {
		case !ok:
			return false
		case null:
			w.WriteString("null")
			return true
		}
		return in.list(ctx, items, f, w)
	}
}

// list writes the elements of a list of objects, each in its own goroutine
// when its selection may wait on a dataloader, as gqlgen does, so that the
// elements' loader calls gather into one batch.
func (in interpreter) list(ctx context.Context, items []any, f *planField, w *bytes.Buffer) bool {
	element := func(item any, w *bytes.Buffer) bool {
		if item == nil {
			if f.spec.elemNonNull {
				return false
			}
			w.WriteString("null")
			return true
		}
		return in.object(ctx, item, f.children, w)
	}
	w.WriteByte('[')
	if !f.children.waits || len(items) <= 1 {
		for i, item := range items {
			if i > 0 {
				w.WriteByte(',')
			}
			if !element(item, w) {
				return false
			}
		}
		w.WriteByte(']')
		return true
	}
	parts := make([]bytes.Buffer, len(items))
	oks := make([]bool, len(items))
	var wg sync.WaitGroup
	for i, item := range items {
		wg.Add(1)
		goConcurrently(func() {
			defer wg.Done()
			defer swallowPanic()
			oks[i] = element(item, &parts[i])
		})
	}
	wg.Wait()
	for i := range parts {
		if !oks[i] {
			return false
		}
		if i > 0 {
			w.WriteByte(',')
		}
		w.Write(parts[i].Bytes())
	}
	w.WriteByte(']')
	return true
}

// interpret runs the query of opCtx, which CreateOperationContext made
// (validated, with its variables coerced and the request's limits
// checked), and returns its data, or false when gqlgen's executor must run
// it instead.
func interpret(ctx context.Context, schema *executableSchema, opCtx *graphql.OperationContext) ([]byte, bool) {
	plan, ok := planQuery(opCtx.Operation, parsedSchema.Query.Name)
	if !ok {
		return nil, false
	}
	ctx = graphql.WithOperationContext(ctx, opCtx)
	ctx = graphql.WithResponseContext(ctx, graphql.DefaultErrorPresenter, func(context.Context, any) error { return errCompiledPanic })
	in := interpreter{ec: newExecutionContext(opCtx, schema, nil)}
	var buf bytes.Buffer
	if !in.run(ctx, plan, &buf) || len(graphql.GetErrors(ctx)) > 0 {
		return nil, false
	}
	return buf.Bytes(), true
}

// run writes the data of plan, false if it panicked or gave up.
func (in interpreter) run(ctx context.Context, plan *planObject, buf *bytes.Buffer) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return in.object(ctx, nil, plan, buf)
}
