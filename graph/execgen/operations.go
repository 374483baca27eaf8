package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/99designs/gqlgen/codegen"
	"github.com/99designs/gqlgen/codegen/config"
	"github.com/99designs/gqlgen/codegen/templates"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// operationsFile is the file, beside the executable schema, of the
// compiled operations.
const operationsFile = "operations_gen.go"

// An operation is one fixed operation to compile: its document's text and
// the file it was read from, relative to the module's root.
type operation struct {
	file  string
	query string
}

// readOperations reads every *.graphql file of dir.
func readOperations(dir string) ([]operation, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.graphql"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no operations in %s", dir)
	}
	sort.Strings(files)
	var ops []operation
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		ops = append(ops, operation{file: filepath.ToSlash(f), query: string(src)})
	}
	return ops, nil
}

// renderSource writes file, beside the executable schema, with the Go
// source that source returns (below the package clause and the imports
// it needs besides those named). source runs while gqlgen's templates
// package renders, so that the types it names through
// templates.CurrentImports are imported as in generated.go.
func renderSource(data *codegen.Data, file string, imports []string, source func() (string, error)) error {
	var tmpl strings.Builder
	for _, path := range imports {
		fmt.Fprintf(&tmpl, "{{ reserveImport %q }}\n", path)
	}
	tmpl.WriteString("{{ source }}\n")
	var sourceErr error
	return errors.Join(templates.Render(templates.Options{
		PackageName:     data.Config.Exec.Package,
		Filename:        filepath.Join(data.Config.Exec.Dir(), file),
		Template:        tmpl.String(),
		GeneratedHeader: true,
		Packages:        data.Config.Packages,
		PruneOptions:    data.Config.GetPruneOptions(),
		Funcs: template.FuncMap{
			"source": func() string {
				src, err := source()
				sourceErr = err
				return src
			},
		},
	}), sourceErr)
}

// renderOperations writes operationsFile: for every operation, a function
// that executes it as gqlgen's executor would, field by field, writing its
// data straight to a buffer.
func renderOperations(data *codegen.Data, ops []operation) error {
	c := &operationCompiler{data: data, objects: map[string]*codegen.Object{}}
	for _, o := range data.Objects {
		c.objects[o.Name] = o
	}
	return renderSource(data, operationsFile, []string{"bytes", "context", "sync", "github.com/vektah/gqlparser/v2/ast"}, func() (string, error) {
		return c.source(ops)
	})
}

// operationCompiler turns operations into Go source.
type operationCompiler struct {
	data    *codegen.Data
	objects map[string]*codegen.Object

	b     bytes.Buffer
	paths [][]int // the selection paths of the fields of the current operation
}

// source returns the Go source of the compiled operations and of the table
// that lists them.
func (c *operationCompiler) source(ops []operation) (string, error) {
	var table bytes.Buffer
	table.WriteString("// compiledOperations are the operations execgen compiled, in the order of\n")
	table.WriteString("// their files.\n")
	table.WriteString("var compiledOperations = []compiledOperation{\n")
	for _, op := range ops {
		name, paths, err := c.operation(op)
		if err != nil {
			return "", fmt.Errorf("%s: %w", op.file, err)
		}
		fmt.Fprintf(&table, "\t{\n\t\tname: %q,\n\t\tquery: %s,\n\t\tpaths: %s,\n\t\trun: (*executionContext).compiled%s,\n\t},\n",
			name, goString(op.query), pathsLiteral(paths), name)
	}
	table.WriteString("}\n\n")
	return table.String() + c.b.String(), nil
}

// goString quotes s as a raw string literal when it can, for readability.
func goString(s string) string {
	if !strings.Contains(s, "`") {
		return "`" + s + "`"
	}
	return strconv.Quote(s)
}

func pathsLiteral(paths [][]int) string {
	var b strings.Builder
	b.WriteString("[][]int{")
	for i, p := range paths {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("{")
		for j, n := range p {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Itoa(n))
		}
		b.WriteString("}")
	}
	b.WriteString("}")
	return b.String()
}

// operation writes the function of op and returns the operation's name
// and the selection paths of its fields.
func (c *operationCompiler) operation(op operation) (string, [][]int, error) {
	doc, errs := gqlparser.LoadQueryWithRules(c.data.Schema, op.query, nil)
	if errs != nil {
		return "", nil, errs
	}
	if len(doc.Operations) != 1 {
		return "", nil, fmt.Errorf("%d operations in one document, not 1", len(doc.Operations))
	}
	def := doc.Operations[0]
	if def.Operation != ast.Query || def.Name == "" {
		return "", nil, fmt.Errorf("only named queries are compiled")
	}
	c.paths = nil
	sel, err := c.collect(def.SelectionSet, nil, c.data.Schema.Query.Name)
	if err != nil {
		return "", nil, err
	}
	var body bytes.Buffer
	if err := c.object(&body, c.objects[c.data.Schema.Query.Name], sel, true, false); err != nil {
		return "", nil, err
	}
	fmt.Fprintf(&c.b, "// compiled%s writes the data of the operation %s (%s).\n", def.Name, def.Name, op.file)
	fmt.Fprintf(&c.b, "func (ec *executionContext) compiled%s(ctx context.Context, fields []*ast.Field, w *bytes.Buffer) bool {\n", def.Name)
	body.WriteTo(&c.b)
	c.b.WriteString("return true\n}\n\n")
	return def.Name, c.paths, nil
}

// A collected field is a field of a selection, with the index of its node
// among the operation's fields and whether an @include or @skip decides
// at run time whether it is selected.
type collected struct {
	field       *ast.Field
	index       int
	conditional bool
	children    []collected
}

// collect flattens a selection set on objectName as gqlgen's CollectFields
// does, at build time: fragments are inlined (the schema has no interfaces
// or unions, so a fragment's condition is its object), and fields keep the
// order of their first appearance. What only the variables decide, an
// @include or @skip on a field, is left to run time. Anything else (the
// same response key twice, a directive on a fragment) is refused.
func (c *operationCompiler) collect(set ast.SelectionSet, path []int, objectName string) ([]collected, error) {
	var out []collected
	seen := map[string]bool{}
	var walk func(set ast.SelectionSet, path []int) error
	walk = func(set ast.SelectionSet, path []int) error {
		for i, s := range set {
			p := append(append([]int(nil), path...), i)
			switch s := s.(type) {
			case *ast.Field:
				if seen[s.Alias] {
					return fmt.Errorf("the response key %q is selected twice", s.Alias)
				}
				seen[s.Alias] = true
				for _, d := range s.Directives {
					if d.Name != "include" && d.Name != "skip" {
						return fmt.Errorf("the directive @%s on %s", d.Name, s.Alias)
					}
				}
				f := collected{field: s, index: len(c.paths), conditional: len(s.Directives) > 0}
				c.paths = append(c.paths, p)
				if len(s.SelectionSet) > 0 {
					children, err := c.collect(s.SelectionSet, p, s.Definition.Type.Name())
					if err != nil {
						return err
					}
					f.children = children
				}
				out = append(out, f)
			case *ast.FragmentSpread:
				if len(s.Directives) > 0 || s.Definition == nil || s.Definition.TypeCondition != objectName {
					return fmt.Errorf("the fragment spread %s", s.Name)
				}
				if err := walk(s.Definition.SelectionSet, p); err != nil {
					return err
				}
			case *ast.InlineFragment:
				if len(s.Directives) > 0 || (s.TypeCondition != "" && s.TypeCondition != objectName) {
					return fmt.Errorf("an inline fragment")
				}
				if err := walk(s.SelectionSet, p); err != nil {
					return err
				}
			default:
				return fmt.Errorf("a selection of type %T", s)
			}
		}
		return nil
	}
	return out, walk(set, path)
}

// object writes the code that writes the selection sel of the object obj,
// which the generated code holds in the variable obj (not for the root).
// Fields that gqlgen resolves concurrently are resolved concurrently here
// too, when there are two or more, each into its own buffer, so that the
// dataloader calls of sibling fields gather into the same batches; the
// others are resolved in order. In an element of a list whose resolver
// loaded the list's primedFields (primed), those are resolved in order.
func (c *operationCompiler) object(b *bytes.Buffer, obj *codegen.Object, sel []collected, root, primed bool) error {
	type part struct {
		f          collected
		field      *codegen.Field
		concurrent bool
	}
	var parts []part
	var concurrent []int
	for _, f := range sel {
		if f.field.Name == "__typename" {
			parts = append(parts, part{f: f})
			continue
		}
		field := c.field(obj, f.field.Name)
		if field == nil {
			return fmt.Errorf("%s.%s is not in gqlgen's data", obj.Name, f.field.Name)
		}
		p := part{f: f, field: field, concurrent: root || field.IsConcurrent() && !(primed && primedFields[obj.Name+"."+field.Name])}
		if p.concurrent {
			concurrent = append(concurrent, len(parts))
		}
		parts = append(parts, p)
	}
	spawn := len(concurrent) > 1
	slot := map[int]int{}
	if spawn {
		// The parts are scratch buffers, whose memory the next operation
		// reuses: fresh buffers, doubling as they filled, had been 45% of
		// the bytes an uncached page of operators allocated.
		gets := make([]string, len(concurrent))
		for j := range gets {
			gets[j] = "scratchBuffer()"
		}
		fmt.Fprintf(b, "parts := [%d]*bytes.Buffer{%s}\n", len(concurrent), strings.Join(gets, ", "))
		fmt.Fprintf(b, "var oks [%d]bool\n", len(concurrent))
		b.WriteString("var wg sync.WaitGroup\n")
		// The goroutine writing the object resolves one of the fields
		// itself, after starting the others: a field that is always
		// selected, when there is one. Each goroutine handed work had its
		// stack shrunk by the last garbage collection and grew it again
		// by copying, about a twentieth of the server's time on a page
		// of stakers.
		inline := len(concurrent) - 1
		for j := len(concurrent) - 1; j >= 0; j-- {
			if !parts[concurrent[j]].f.conditional {
				inline = j
				break
			}
		}
		order := make([]int, 0, len(concurrent))
		for j := range concurrent {
			if j != inline {
				order = append(order, j)
			}
		}
		order = append(order, inline)
		for _, j := range order {
			i := concurrent[j]
			slot[i] = j
			p := parts[i]
			if p.f.conditional {
				fmt.Fprintf(b, "if included(fields[%d], ec.Variables) {\n", p.f.index)
			}
			if j == inline {
				b.WriteString("func() {\n")
			} else {
				b.WriteString("wg.Add(1)\n")
				b.WriteString("goConcurrently(func() {\n")
				b.WriteString("defer wg.Done()\n")
			}
			b.WriteString("defer swallowPanic()\n")
			fmt.Fprintf(b, "oks[%d] = func() bool {\n", j)
			fmt.Fprintf(b, "w := parts[%d]\n", j)
			if err := c.value(b, p.field, p.f); err != nil {
				return err
			}
			b.WriteString("return true\n}()\n")
			if j == inline {
				b.WriteString("}()\n")
			} else {
				b.WriteString("})\n")
			}
			if p.f.conditional {
				b.WriteString("}\n")
			}
		}
		b.WriteString("wg.Wait()\n")
		// The resolved fields are copied into w, which grows once to
		// hold them, as the elements of a list do.
		sizes := make([]string, len(concurrent))
		for j := range concurrent {
			sizes[j] = fmt.Sprintf("parts[%d].Len()", j)
		}
		fmt.Fprintf(b, "w.Grow(%s)\n", strings.Join(sizes, " + "))
	}
	anyConditional := false
	for _, p := range parts {
		anyConditional = anyConditional || p.f.conditional
	}
	if anyConditional {
		b.WriteString("sep := false\n")
	}
	b.WriteString("w.WriteByte('{')\n")
	for i, p := range parts {
		if p.f.conditional {
			fmt.Fprintf(b, "if included(fields[%d], ec.Variables) {\n", p.f.index)
		}
		key := strconv.Quote(strconv.Quote(p.f.field.Alias) + ":")
		switch {
		case anyConditional:
			b.WriteString("if sep {\nw.WriteByte(',')\n}\nsep = true\n")
		case i > 0:
			b.WriteString("w.WriteByte(',')\n")
		}
		fmt.Fprintf(b, "w.WriteString(%s)\n", key)
		switch {
		case p.field == nil:
			fmt.Fprintf(b, "w.WriteString(%s)\n", strconv.Quote(strconv.Quote(obj.Name)))
		case spawn && p.concurrent:
			j := slot[i]
			fmt.Fprintf(b, "if !oks[%d] {\nreturn false\n}\n", j)
			fmt.Fprintf(b, "w.Write(parts[%d].Bytes())\n", j)
		default:
			b.WriteString("{\n")
			if err := c.value(b, p.field, p.f); err != nil {
				return err
			}
			b.WriteString("}\n")
		}
		if p.f.conditional {
			b.WriteString("}\n")
		}
	}
	b.WriteString("w.WriteByte('}')\n")
	if spawn {
		b.WriteString("releaseScratch(parts[:]...)\n")
	}
	return nil
}

// field returns obj's field name from gqlgen's data.
func (c *operationCompiler) field(obj *codegen.Object, name string) *codegen.Field {
	for _, f := range obj.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// value writes the code that resolves field f of the object in obj and
// writes its value, as gqlgen's generated field function would: the
// arguments coerced by gqlgen's own argument function, the resolver,
// method or struct field gqlgen calls, and gqlgen's marshaller for a leaf.
// Any error, a null where the schema forbids one or a panic makes the
// operation's function return false, and the caller then runs the
// operation through gqlgen's executor instead, which answers the error.
func (c *operationCompiler) value(b *bytes.Buffer, field *codegen.Field, f collected) error {
	if len(field.Args) > 0 {
		b.WriteString("var fc struct{ Args map[string]any }\n")
		b.WriteString("var err error\n")
		fmt.Fprintf(b, "if fc.Args, err = ec.%s(ctx, fields[%d].ArgumentMap(ec.Variables)); err != nil {\nreturn false\n}\n", field.ArgsFunc(), f.index)
	}
	if err := call(b, field, "return false"); err != nil {
		return err
	}
	return c.marshal(b, field.TypeReference, f.field.Definition.Type, f, "v")
}

// call writes the code that resolves field into the variable v, with obj
// its object and fc.Args its coerced arguments, as gqlgen's field function
// does; fail is the statement that gives up on an error.
func call(b *bytes.Buffer, field *codegen.Field, fail string) error {
	switch {
	case field.IsMap(), field.VOkFunc, field.HasHaser, field.IsBatch(), field.HasDirectives(), field.Stream:
		return fmt.Errorf("%s.%s: a kind of field execgen does not compile", field.Object.Name, field.Name)
	case field.IsResolver:
		fmt.Fprintf(b, "v, err := ec.Resolvers.%s\n", field.ShortInvocation())
		fmt.Fprintf(b, "if err != nil {\n%s\n}\n", fail)
	case field.IsMethod() && field.NoErr:
		fmt.Fprintf(b, "v := %s.%s(%s)\n", field.GoReceiverName, field.GoFieldName, field.CallArgs())
	case field.IsMethod():
		fmt.Fprintf(b, "v, err := %s.%s(%s)\n", field.GoReceiverName, field.GoFieldName, field.CallArgs())
		fmt.Fprintf(b, "if err != nil {\n%s\n}\n", fail)
	case field.IsVariable():
		fmt.Fprintf(b, "v := %s.%s\n", field.GoReceiverName, field.GoFieldName)
	default:
		return fmt.Errorf("%s.%s: a kind of field execgen does not compile", field.Object.Name, field.Name)
	}
	return nil
}

// marshalLeaf writes the code that writes the leaf value (or list of
// leaves) in the variable v, of type ref (schema type typ): gqlgen's
// marshaller of the type, after the check of a null gqlgen makes.
func marshalLeaf(b *bytes.Buffer, ref *config.TypeReference, typ *ast.Type) {
	if typ.NonNull && ref.IsNilable() && !ref.IsSlice() {
		b.WriteString("if v == nil {\nreturn false\n}\n")
	}
	fmt.Fprintf(b, "ec.%s(ctx, nil, v).MarshalGQL(w)\n", ref.MarshalFunc())
}

// marshal writes the code that writes the value in the variable v, of
// type ref (schema type typ), selected by f.
func (c *operationCompiler) marshal(b *bytes.Buffer, ref *config.TypeReference, typ *ast.Type, f collected, v string) error {
	def := c.data.Schema.Types[typ.Name()]
	if def.Kind != ast.Object {
		marshalLeaf(b, ref, typ)
		return nil
	}
	obj := c.objects[def.Name]
	if ref.IsSlice() {
		if typ.Elem == nil || typ.Elem.Elem != nil {
			return fmt.Errorf("%s: a list of lists", f.field.Alias)
		}
		elem := ref.Elem()
		if !typ.NonNull {
			fmt.Fprintf(b, "if %s == nil {\nw.WriteString(\"null\")\n} else {\n", v)
		}
		elemCode := func() (string, error) {
			var e bytes.Buffer
			if elem.IsPtr() {
				e.WriteString("obj := " + v + "[i]\n")
				if typ.Elem.NonNull {
					e.WriteString("if obj == nil {\nreturn false\n}\n")
				} else {
					e.WriteString("if obj == nil {\nw.WriteString(\"null\")\n} else {\n")
				}
			} else {
				e.WriteString("obj := &" + v + "[i]\n")
			}
			if err := c.object(&e, obj, f.children, false, true); err != nil {
				return "", err
			}
			if elem.IsPtr() && !typ.Elem.NonNull {
				e.WriteString("}\n")
			}
			return e.String(), nil
		}
		code, err := elemCode()
		if err != nil {
			return err
		}
		if c.waits(f.children, def.Name, true) {
			// Each element in its own goroutine, as gqlgen marshals such
			// a list, so that the elements' loader calls batch together.
			// Elements whose only such calls are to the fields their
			// list's resolver loaded for the whole list (primedFields) are
			// written in order: the first waits for the list's batch, the
			// others find their values in the loader's cache.
			// Each element is written into a scratch buffer (see
			// object), released once copied.
			fmt.Fprintf(b, "elems := make([]*bytes.Buffer, len(%s))\n", v)
			fmt.Fprintf(b, "oks := make([]bool, len(%s))\n", v)
			b.WriteString("var wg sync.WaitGroup\n")
			fmt.Fprintf(b, "for i := range %s {\n", v)
			b.WriteString("wg.Add(1)\n")
			b.WriteString("goConcurrently(func() {\n")
			b.WriteString("defer wg.Done()\n")
			b.WriteString("defer swallowPanic()\n")
			b.WriteString("oks[i] = func() bool {\n")
			b.WriteString("elems[i] = scratchBuffer()\n")
			b.WriteString("w := elems[i]\n")
			b.WriteString(code)
			b.WriteString("return true\n}()\n")
			b.WriteString("})\n")
			b.WriteString("}\n")
			b.WriteString("wg.Wait()\n")
			// The elements are copied into w: it grows once, to their
			// size, rather than doubling as they are copied.
			b.WriteString("size := 2\n")
			b.WriteString("for i := range elems {\nsize += elems[i].Len() + 1\n}\n")
			b.WriteString("w.Grow(size)\n")
			b.WriteString("w.WriteByte('[')\n")
			b.WriteString("for i := range elems {\n")
			b.WriteString("if !oks[i] {\nreturn false\n}\n")
			b.WriteString("if i > 0 {\nw.WriteByte(',')\n}\n")
			b.WriteString("w.Write(elems[i].Bytes())\n")
			b.WriteString("}\n")
			b.WriteString("w.WriteByte(']')\n")
			b.WriteString("releaseScratch(elems...)\n")
		} else {
			b.WriteString("w.WriteByte('[')\n")
			fmt.Fprintf(b, "for i := range %s {\n", v)
			b.WriteString("if i > 0 {\nw.WriteByte(',')\n}\n")
			b.WriteString(code)
			b.WriteString("}\n")
			b.WriteString("w.WriteByte(']')\n")
		}
		if !typ.NonNull {
			b.WriteString("}\n")
		}
		return nil
	}
	if ref.IsNilable() {
		if typ.NonNull {
			fmt.Fprintf(b, "if %s == nil {\nreturn false\n}\n", v)
		} else {
			fmt.Fprintf(b, "if %s == nil {\nw.WriteString(\"null\")\n} else {\n", v)
		}
		fmt.Fprintf(b, "obj := %s\n", v)
	} else {
		fmt.Fprintf(b, "obj := &%s\n", v)
	}
	if err := c.object(b, obj, f.children, false, false); err != nil {
		return err
	}
	if ref.IsNilable() && !typ.NonNull {
		b.WriteString("}\n")
	}
	return nil
}

// waits reports whether marshalling sel on objectName reaches a field that
// gqlgen resolves concurrently, at any depth: a field that may wait on a
// dataloader. With primed, the primedFields of objectName itself (not of
// the objects below it) do not count: they are those of a list's element.
func (c *operationCompiler) waits(sel []collected, objectName string, primed bool) bool {
	obj := c.objects[objectName]
	for _, f := range sel {
		if f.field.Name == "__typename" {
			continue
		}
		field := c.field(obj, f.field.Name)
		if field == nil || field.IsConcurrent() && !(primed && primedFields[objectName+"."+f.field.Name]) {
			return true
		}
		if len(f.children) > 0 && c.waits(f.children, f.field.Definition.Type.Name(), false) {
			return true
		}
	}
	return false
}

// primedFields are the fields, by object and field name, whose values
// every resolver returning a list of their objects loads for the whole
// list before the list is written, when the operation selects them
// (graph's prefetchStakerShares, in Query.stakers, Avs.stakers and
// Operator.stakers): a staker's shares and its TVL, both from the staker
// share loader. A list's elements then need no goroutine each for their
// calls of that loader to gather into one batch, nor do these fields
// within an element. A resolver of such a list that did not load them
// would cost a statement per element, which the statement-count tests of
// those routes catch.
var primedFields = map[string]bool{
	"Staker.shares": true,
	"Staker.tvl":    true,
}
