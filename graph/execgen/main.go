// Command execgen generates graph's executable schema (generated.go), its
// models and new resolver skeletons from ../schema.graphqls and
// ../gqlgen.yml, as `gqlgen generate` does, with two of gqlgen's exec
// templates replaced by this directory's copies:
//
//   - type.gotpl marshals a list of objects through graph's marshalList
//     instead of graphql.MarshalSliceConcurrently. gqlgen marshals every
//     element of such a list in its own goroutine, so that the elements'
//     resolvers run concurrently and their dataloader calls batch together.
//     Most lists a response holds (an operator's shares, its registrations,
//     a page of events, the points of a chart) select only plain fields,
//     which never wait on anything: there, a goroutine per element is pure
//     overhead, a tenth of the server's CPU on a page of operators.
//     marshalList marshals the elements in order on the calling goroutine
//     when the selection on them reaches no concurrently resolved field,
//     and concurrently as gqlgen does otherwise.
//   - object.gotpl builds an object's path for @defer only when something
//     is deferred: an allocation per object, a tenth of a page of operators'
//     garbage, that gqlgen makes even when nothing is.
//
// It runs gqlgen's own pipeline (config, models, resolvers, its exec
// output and the build check) and then renders generated.go again from
// the same data with gqlgen's templates package and its exec templates,
// these two overlaid, so no generated file is ever edited as text. It also
// writes concurrentfields_gen.go, the table of the fields gqlgen resolves
// concurrently that marshalList consults, from the same data.
//
// With -operations DIR, it also compiles the fixed operations of DIR
// (*.graphql, the REST routes' operations) into operations_gen.go: for
// each, a function that executes it as gqlgen's executor does, with the
// same argument functions, resolvers, methods, struct fields and leaf
// marshallers named by gqlgen's data, but with no field context, closure
// or marshaller value per field (see graph's compiledOperation). The file
// is rendered by gqlgen's templates package, which imports what it names,
// from the plugin's hook, before gqlgen checks that the package builds.
//
// It also writes fields_gen.go, the table of every field of the schema's
// objects as graph's interpreter of /graphql queries executes it: the
// same argument function, call and leaf marshaller, over an object of any
// type (see graph's interpretedField).
//
// The copies are gqlgen's templates with those changes alone. execgen
// refuses to run when gqlgen's originals are not the ones the copies were
// made from (another gqlgen version), rather than generate from stale
// templates; the copies must then be made again from the new originals.
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"flag"
	"fmt"
	"go/format"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing/fstest"

	"github.com/99designs/gqlgen/api"
	"github.com/99designs/gqlgen/codegen"
	"github.com/99designs/gqlgen/codegen/config"
	"github.com/99designs/gqlgen/codegen/templates"
	"github.com/99designs/gqlgen/plugin"
)

// overlay holds this directory's copies of gqlgen's exec templates.
//
//go:embed type.gotpl object.gotpl
var overlay embed.FS

// originals are the SHA-256 sums of gqlgen's templates that overlay's
// copies were made from (gqlgen v0.17.95).
var originals = map[string]string{
	"type.gotpl":   "2a7fe68b5aaa5634db2d21ca50eb708d1f6e923edeffceb735cc934e68c0f670",
	"object.gotpl": "b89c7eba082c59e54bfb68e22d9a575fef7e4a16df09871692b16cb0ffbfd49c",
}

// execTemplates are the templates gqlgen renders a single-file executable
// schema from.
var execTemplates = []string{
	"api!.gotpl", "internal!.gotpl", "args.gotpl", "field.gotpl", "input.gotpl",
	"interface.gotpl", "object.gotpl", "type.gotpl", "generated!.gotpl", "directives_.gotpl",
}

// tableFile is the file, beside the executable schema, of the table of
// concurrently resolved fields.
const tableFile = "concurrentfields_gen.go"

func main() {
	log.SetFlags(0)
	log.SetPrefix("execgen: ")
	operations := flag.String("operations", "", "the `directory` of the fixed operations (*.graphql) to compile")
	flag.Parse()
	if err := run(context.Background(), *operations); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, operationsDir string) error {
	var ops []operation
	if operationsDir != "" {
		var err error
		if ops, err = readOperations(operationsDir); err != nil {
			return err
		}
	}
	templateFS, err := execTemplateFS(ctx)
	if err != nil {
		return err
	}
	cfg, err := config.LoadConfigFromDefaultLocations()
	if err != nil {
		return err
	}
	keep := &dataKeeper{operations: ops}
	if err := api.Generate(cfg, api.AddPlugin(keep)); err != nil {
		return err
	}
	data := keep.data
	if data == nil {
		return fmt.Errorf("gqlgen generated without handing its data to plugins")
	}
	if err := templates.Render(templates.Options{
		PackageName:     data.Config.Exec.Package,
		Filename:        data.Config.Exec.Filename,
		Data:            data,
		RegionTags:      true,
		GeneratedHeader: true,
		Packages:        data.Config.Packages,
		TemplateFS:      templateFS,
		PruneOptions:    data.Config.GetPruneOptions(),
	}); err != nil {
		return fmt.Errorf("render %s: %w", data.Config.Exec.Filename, err)
	}
	fields := concurrentFields(data)
	if len(fields) == 0 {
		return fmt.Errorf("the schema has no concurrently resolved field: not the gqlgen execgen knows")
	}
	table, err := format.Source(tableSource(data.Config.Exec.Package, fields))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(data.Config.Exec.Dir(), tableFile), table, 0o644); err != nil {
		return err
	}
	// gqlgen checked that its own output builds; this checks ours.
	build := exec.CommandContext(ctx, "go", "build", data.Config.Exec.ImportPath())
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("the generated executable schema does not build: %w", err)
	}
	return nil
}

// dataKeeper is a gqlgen plugin that keeps the data gqlgen generates from.
// It also compiles the operations into their file, at once, so that the
// package builds when gqlgen checks that it does.
type dataKeeper struct {
	operations []operation
	data       *codegen.Data
}

var _ plugin.CodeGenerator = (*dataKeeper)(nil)

func (*dataKeeper) Name() string { return "execgen" }

func (k *dataKeeper) GenerateCode(data *codegen.Data) error {
	k.data = data
	if err := renderOperations(data, k.operations); err != nil {
		return fmt.Errorf("compile the operations: %w", err)
	}
	if err := renderFields(data); err != nil {
		return fmt.Errorf("write the interpreter's fields: %w", err)
	}
	return nil
}

// execTemplateFS returns gqlgen's exec templates, read from the gqlgen
// module the build uses, with overlay's copies in place of their
// originals.
func execTemplateFS(ctx context.Context) (fs.FS, error) {
	dir, err := gqlgenCodegenDir(ctx)
	if err != nil {
		return nil, err
	}
	files := fstest.MapFS{}
	for _, name := range execTemplates {
		src, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		if want, ok := originals[name]; ok {
			sum := sha256.Sum256(src)
			if got := hex.EncodeToString(sum[:]); got != want {
				return nil, fmt.Errorf("gqlgen's %s is not the template graph/execgen/%s was copied from (SHA-256 %s, not %s): copy it again with the same changes and record its sum", name, name, got, want)
			}
			if src, err = overlay.ReadFile(name); err != nil {
				return nil, err
			}
		}
		files[name] = &fstest.MapFile{Data: src, Mode: 0o644}
	}
	return files, nil
}

// gqlgenCodegenDir returns the directory of gqlgen's codegen package, and
// of its templates, in the gqlgen module the build uses.
func gqlgenCodegenDir(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/99designs/gqlgen").Output()
	if err != nil {
		return "", fmt.Errorf("find the gqlgen module: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "codegen"), nil
}

// concurrentFields returns "Type.field" for every field of a non-root
// object that gqlgen resolves in its own goroutine: resolvers and methods
// that take a context.
func concurrentFields(data *codegen.Data) []string {
	var out []string
	for _, o := range data.Objects {
		if o.Root {
			continue
		}
		for _, f := range o.Fields {
			if f.IsConcurrent() {
				out = append(out, o.Name+"."+f.Name)
			}
		}
	}
	sort.Strings(out)
	return out
}

// tableSource is the Go source of the table of concurrent fields.
func tableSource(pkg string, fields []string) []byte {
	var b bytes.Buffer
	b.WriteString("// Code generated by execgen from ../schema.graphqls and ../gqlgen.yml. DO NOT EDIT.\n\n")
	fmt.Fprintf(&b, "package %s\n\n", pkg)
	b.WriteString("// concurrentFields are the fields, as \"Type.field\", that gqlgen resolves\n")
	b.WriteString("// in their own goroutine: resolvers and methods that take a context.\n")
	b.WriteString("var concurrentFields = map[string]bool{\n")
	for _, f := range fields {
		fmt.Fprintf(&b, "\t%q: true,\n", f)
	}
	b.WriteString("}\n")
	return b.Bytes()
}
