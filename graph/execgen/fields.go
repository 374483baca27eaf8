package main

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/99designs/gqlgen/codegen"
	"github.com/99designs/gqlgen/codegen/templates"
	"github.com/vektah/gqlparser/v2/ast"
)

// fieldsFile is the file, beside the executable schema, of the table of
// fields the interpreter of graph executes queries with.
const fieldsFile = "fields_gen.go"

// renderFields writes fieldsFile: for every field of every object, how
// gqlgen resolves it (its argument function, and the resolver, method or
// struct field it reads) and, for a leaf, how gqlgen writes it, as
// functions over an object of any type, for graph's interpreter of
// queries (see graph's interpretedField).
func renderFields(data *codegen.Data) error {
	return renderSource(data, fieldsFile, []string{"bytes", "context"}, func() (string, error) {
		return fieldsSource(data)
	})
}

func fieldsSource(data *codegen.Data) (string, error) {
	objects := append(codegen.Objects(nil), data.Objects...)
	sort.Slice(objects, func(i, j int) bool { return objects[i].Name < objects[j].Name })
	var b bytes.Buffer
	b.WriteString("// interpretedFields are the fields of the schema's objects, by\n")
	b.WriteString("// \"Type.field\", as the interpreter resolves and writes them. A field\n")
	b.WriteString("// gqlgen resolves in a way execgen does not compile is missing, and a\n")
	b.WriteString("// query that selects it runs through gqlgen's executor.\n")
	b.WriteString("var interpretedFields = map[string]*interpretedField{\n")
	for _, o := range objects {
		if o.Kind != ast.Object || strings.HasPrefix(o.Name, "__") || (o.Root && o.Name != data.Schema.Query.Name) {
			continue
		}
		for _, f := range o.Fields {
			if f.TypeReference == nil || f.Name == "__typename" || f.Name == "__schema" || f.Name == "__type" {
				continue
			}
			entry, err := fieldEntry(data, o, f)
			if err != nil {
				// Left to gqlgen's executor.
				continue
			}
			fmt.Fprintf(&b, "%q: %s,\n", o.Name+"."+f.Name, entry)
		}
	}
	b.WriteString("}\n")
	return b.String(), nil
}

// fieldEntry returns the Go literal of the interpretedField of f.
func fieldEntry(data *codegen.Data, o *codegen.Object, f *codegen.Field) (string, error) {
	typ := f.FieldDefinition.Type
	def := data.Schema.Types[typ.Name()]
	var b bytes.Buffer
	b.WriteString("{\n")
	if f.ArgsFunc() != "" {
		fmt.Fprintf(&b, "args: (*executionContext).%s,\n", f.ArgsFunc())
	}
	fmt.Fprintf(&b, "concurrent: %t,\n", o.Root || f.IsConcurrent())
	fmt.Fprintf(&b, "nonNull: %t,\n", typ.NonNull)
	obj := "_ = o\n"
	if !o.Root {
		obj = "obj := o.(" + templates.CurrentImports.LookupType(o.Reference()) + ")\n"
	}
	var body bytes.Buffer
	ref := f.TypeReference
	switch {
	case def.Kind != ast.Object:
		b.WriteString("kind: leafField,\n")
		if err := call(&body, f, "return false"); err != nil {
			return "", err
		}
		marshalLeaf(&body, ref, typ)
		fmt.Fprintf(&b, "leaf: func(ec *executionContext, ctx context.Context, o any, fc fieldArgs, w *bytes.Buffer) bool {\n%s%sreturn true\n},\n", obj, body.String())
	case ref.IsSlice():
		if typ.Elem == nil || typ.Elem.Elem != nil {
			return "", fmt.Errorf("a list of lists")
		}
		b.WriteString("kind: listField,\n")
		fmt.Fprintf(&b, "elemNonNull: %t,\n", typ.Elem.NonNull)
		fmt.Fprintf(&b, "object: %q,\n", def.Name)
		if err := call(&body, f, "return nil, false, false"); err != nil {
			return "", err
		}
		if !typ.NonNull {
			body.WriteString("if v == nil {\nreturn nil, true, true\n}\n")
		}
		body.WriteString("items := make([]any, len(v))\n")
		body.WriteString("for i := range v {\n")
		if ref.Elem().IsPtr() {
			// A nil element stays a nil interface, not a typed nil.
			body.WriteString("if v[i] != nil {\nitems[i] = v[i]\n}\n")
		} else {
			body.WriteString("items[i] = &v[i]\n")
		}
		body.WriteString("}\n")
		body.WriteString("return items, false, true\n")
		fmt.Fprintf(&b, "list: func(ec *executionContext, ctx context.Context, o any, fc fieldArgs) ([]any, bool, bool) {\n%s%s},\n", obj, body.String())
	default:
		b.WriteString("kind: objectField,\n")
		fmt.Fprintf(&b, "object: %q,\n", def.Name)
		if err := call(&body, f, "return nil, false"); err != nil {
			return "", err
		}
		if ref.IsNilable() {
			body.WriteString("if v == nil {\nreturn nil, true\n}\n")
			body.WriteString("return v, true\n")
		} else {
			body.WriteString("return &v, true\n")
		}
		fmt.Fprintf(&b, "resolve: func(ec *executionContext, ctx context.Context, o any, fc fieldArgs) (any, bool) {\n%s%s},\n", obj, body.String())
	}
	b.WriteString("}")
	return b.String(), nil
}
