package graph

import (
	"bytes"
	"context"
	"strconv"
	"sync"
	"sync/atomic"

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
	return planSelection(op.SelectionSet, queryType)
}

func planSelection(set ast.SelectionSet, object string) (*planObject, bool) {
	p := &planObject{}
	seen := map[string]bool{}
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
					children, ok := planSelection(s.SelectionSet, spec.object)
					if !ok {
						return false
					}
					f.children = children
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
	return p, true
}

// interpreter executes a plan for one request, level by level: first
// every field of every object of a level that may wait (on a dataloader)
// is resolved, each in its own goroutine, so that the loader calls of the
// whole level gather into the same batches; then the objects those fields
// returned make up the next level, one per selection; and once every
// level is resolved, the answer is written in one walk. Only the
// resolvers run in other goroutines, with shallow stacks; plain fields
// and leaves are read as they are written.
type interpreter struct {
	ec *executionContext
	// failed is set by the first field that gives up.
	failed atomic.Bool
}

// A resolvedObject is an object of a level with the values of its fields
// that were resolved ahead of writing.
type resolvedObject struct {
	obj    any
	fields []resolvedField
}

// A resolvedField is one field of a resolvedObject: for a leaf resolved
// ahead (one that may wait), its written value; for an object or a list,
// the resolved object or elements (nil for null).
type resolvedField struct {
	skipped bool // @include or @skip left it out
	args    fieldArgs
	leaf    []byte
	null    bool
	child   *resolvedObject
	items   []*resolvedObject
	// value and list hold what the field's resolver returned, until the
	// next level resolves them.
	value any
	list  []any
}

// resolveLevel resolves the fields of objs (the objects of one selection
// p) that are not leaves written later, and then the levels below them.
func (in *interpreter) resolveLevel(ctx context.Context, objs []any, p *planObject) []*resolvedObject {
	out := make([]*resolvedObject, len(objs))
	var waiting []func()
	for i, obj := range objs {
		r := &resolvedObject{obj: obj, fields: make([]resolvedField, len(p.fields))}
		out[i] = r
		for j := range p.fields {
			f, rf := &p.fields[j], &r.fields[j]
			if f.conditional && !included(f.node, in.ec.Variables) {
				rf.skipped = true
				continue
			}
			if f.spec == nil || (f.spec.kind == leafField && !f.spec.concurrent) {
				continue
			}
			resolve := func() { in.resolve(ctx, obj, f, rf) }
			if f.spec.concurrent {
				waiting = append(waiting, resolve)
			} else {
				resolve()
			}
		}
	}
	switch len(waiting) {
	case 0:
	case 1:
		waiting[0]()
	default:
		var wg sync.WaitGroup
		wg.Add(len(waiting))
		for _, resolve := range waiting {
			goConcurrently(func() {
				defer wg.Done()
				defer func() {
					if recover() != nil {
						in.failed.Store(true)
					}
				}()
				resolve()
			})
		}
		wg.Wait()
	}
	if in.failed.Load() {
		return nil
	}
	// The next levels: for each selection below p, the objects every
	// object of this level returned for it.
	for j := range p.fields {
		f := &p.fields[j]
		if f.children == nil {
			continue
		}
		var children []any
		for _, r := range out {
			rf := &r.fields[j]
			if rf.skipped || rf.null {
				continue
			}
			if rf.value != nil {
				children = append(children, rf.value)
			}
			for _, item := range rf.list {
				if item != nil {
					children = append(children, item)
				}
			}
		}
		resolved := in.resolveLevel(ctx, children, f.children)
		if in.failed.Load() {
			return nil
		}
		k := 0
		for _, r := range out {
			rf := &r.fields[j]
			if rf.skipped || rf.null {
				continue
			}
			if rf.value != nil {
				rf.child, rf.value = resolved[k], nil
				k++
			}
			if rf.list != nil {
				rf.items = make([]*resolvedObject, len(rf.list))
				for i, item := range rf.list {
					if item != nil {
						rf.items[i] = resolved[k]
						k++
					}
				}
				rf.list = nil
			}
		}
	}
	return out
}

// resolve resolves field f of obj into rf: its arguments, and the value
// of an object or list field or of a leaf that may wait.
func (in *interpreter) resolve(ctx context.Context, obj any, f *planField, rf *resolvedField) {
	spec := f.spec
	if spec.args != nil {
		var err error
		if rf.args.Args, err = spec.args(in.ec, ctx, f.node.ArgumentMap(in.ec.Variables)); err != nil {
			in.failed.Store(true)
			return
		}
	}
	switch spec.kind {
	case leafField:
		var w bytes.Buffer
		if !spec.leaf(in.ec, ctx, obj, rf.args, &w) {
			in.failed.Store(true)
			return
		}
		rf.leaf = w.Bytes()
	case objectField:
		v, ok := spec.resolve(in.ec, ctx, obj, rf.args)
		switch {
		case !ok || (v == nil && spec.nonNull):
			in.failed.Store(true)
		case v == nil:
			rf.null = true
		default:
			rf.value = v
		}
	default:
		items, null, ok := spec.list(in.ec, ctx, obj, rf.args)
		switch {
		case !ok:
			in.failed.Store(true)
		case null:
			rf.null = true
		default:
			if spec.elemNonNull {
				for _, item := range items {
					if item == nil {
						in.failed.Store(true)
						return
					}
				}
			}
			if items == nil {
				items = []any{}
			}
			rf.list = items
		}
	}
}

// write writes the selection p of the resolved object r.
func (in *interpreter) write(ctx context.Context, r *resolvedObject, p *planObject, w *bytes.Buffer) bool {
	w.WriteByte('{')
	sep := false
	for j := range p.fields {
		f, rf := &p.fields[j], &r.fields[j]
		if rf.skipped {
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
		case f.spec.kind == leafField && f.spec.concurrent:
			w.Write(rf.leaf)
		case f.spec.kind == leafField:
			var fc fieldArgs
			if f.spec.args != nil {
				var err error
				if fc.Args, err = f.spec.args(in.ec, ctx, f.node.ArgumentMap(in.ec.Variables)); err != nil {
					return false
				}
			}
			if !f.spec.leaf(in.ec, ctx, r.obj, fc, w) {
				return false
			}
		case rf.null:
			w.WriteString("null")
		case f.spec.kind == objectField:
			if !in.write(ctx, rf.child, f.children, w) {
				return false
			}
		default:
			w.WriteByte('[')
			for i, item := range rf.items {
				if i > 0 {
					w.WriteByte(',')
				}
				if item == nil {
					w.WriteString("null")
				} else if !in.write(ctx, item, f.children, w) {
					return false
				}
			}
			w.WriteByte(']')
		}
	}
	w.WriteByte('}')
	return true
}

// interpret runs the query of opCtx, which CreateOperationContext made
// (validated, with its variables coerced and the request's limits
// checked), and returns its data, or false when gqlgen's executor must run
// it instead.
func interpret(ctx context.Context, schema *executableSchema, opCtx *graphql.OperationContext) ([]byte, bool) {
	plan, ok := planQuery(opCtx.Operation, parsedSchema.Query.Name)
	if !ok {
		countRun(false, &fastPathRuns.interpretedAnswered, &fastPathRuns.interpretedDeclined)
		return nil, false
	}
	ctx = graphql.WithOperationContext(ctx, opCtx)
	ctx = graphql.WithResponseContext(ctx, graphql.DefaultErrorPresenter, func(context.Context, any) error { return errDeclinedPanic })
	in := &interpreter{ec: newExecutionContext(opCtx, schema, nil)}
	var buf bytes.Buffer
	ok = in.run(ctx, plan, &buf) && len(graphql.GetErrors(ctx)) == 0
	if !countRun(ok, &fastPathRuns.interpretedAnswered, &fastPathRuns.interpretedDeclined) {
		return nil, false
	}
	return buf.Bytes(), true
}

// run writes the data of plan, false if it panicked or gave up.
func (in *interpreter) run(ctx context.Context, plan *planObject, buf *bytes.Buffer) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	root := in.resolveLevel(ctx, []any{nil}, plan)
	if in.failed.Load() {
		return false
	}
	return in.write(ctx, root[0], plan, buf)
}
