package graph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/validator"
)

// The REST routes run fixed operations (rest/operations), known when the
// service is built. execgen compiles each into a function of
// operations_gen.go that executes it as gqlgen's executor does (the same
// argument coercion, resolvers, methods, struct fields and leaf
// marshallers, in the same order, with sibling loader calls batched
// together) but without gqlgen's machinery around each field: no field
// context, closure, field set or marshaller value per field, which on a
// page of operators made up most of the server's time and garbage. A
// compiled operation gives up on anything but a clean result (an error, a
// null where the schema forbids one, a panic), and the operation then
// runs through gqlgen's executor, which answers it as it always did; the
// data of a clean result is byte for byte gqlgen's (see
// TestCompiledOperationsMatchExecutor).

// A compiledOperation is one operation of operations_gen.go: its document,
// the selection paths of its fields (each a list of indexes into nested
// selection sets, fragments included) and its function, which writes the
// operation's data to w and reports false when it could not.
type compiledOperation struct {
	name  string
	query string
	paths [][]int
	run   func(ec *executionContext, ctx context.Context, fields []*ast.Field, w *bytes.Buffer) bool
}

// preparedOperation is a compiledOperation with its document parsed and
// validated against the schema and its fields' nodes, in the order of the
// compiled code's field indexes.
type preparedOperation struct {
	compiledOperation
	doc    *ast.QueryDocument
	op     *ast.OperationDefinition
	fields []*ast.Field
}

// preparedOperations are the compiled operations by the text of their
// document.
var preparedOperations = prepareOperations(compiledOperations)

func prepareOperations(ops []compiledOperation) map[string]*preparedOperation {
	out := make(map[string]*preparedOperation, len(ops))
	for _, op := range ops {
		p, err := prepareOperation(op)
		if err != nil {
			// operations_gen.go was generated from these documents and
			// this schema: they no longer agree only if it is stale.
			panic(fmt.Sprintf("graph: compiled operation %s: %v (run go generate ./graph)", op.name, err))
		}
		out[op.query] = p
	}
	return out
}

func prepareOperation(op compiledOperation) (*preparedOperation, error) {
	doc, errs := gqlparser.LoadQuery(parsedSchema, op.query)
	if errs != nil {
		return nil, errs
	}
	if len(doc.Operations) != 1 || doc.Operations[0].Name != op.name {
		return nil, fmt.Errorf("the document is not the operation %s alone", op.name)
	}
	p := &preparedOperation{compiledOperation: op, doc: doc, op: doc.Operations[0]}
	for _, path := range op.paths {
		f, err := fieldAt(p.op.SelectionSet, path)
		if err != nil {
			return nil, err
		}
		p.fields = append(p.fields, f)
	}
	return p, nil
}

// fieldAt returns the field at path in set: each index selects within a
// selection set, a field's, a fragment's or an inline fragment's.
func fieldAt(set ast.SelectionSet, path []int) (*ast.Field, error) {
	var f *ast.Field
	for _, i := range path {
		if i >= len(set) {
			return nil, fmt.Errorf("no selection at %v", path)
		}
		switch s := set[i].(type) {
		case *ast.Field:
			f, set = s, s.SelectionSet
		case *ast.FragmentSpread:
			f, set = nil, s.Definition.SelectionSet
		case *ast.InlineFragment:
			f, set = nil, s.SelectionSet
		}
	}
	if f == nil {
		return nil, fmt.Errorf("no field at %v", path)
	}
	return f, nil
}

// FastPathRuns counts, since the process started, the operations the
// compiled code and the interpreter answered and those they declined to
// gqlgen's executor. A decline is expected for an error or introspection;
// many more declines than errors mean a fast path no longer applies.
type FastPathRuns struct {
	CompiledAnswered, CompiledDeclined       int64
	InterpretedAnswered, InterpretedDeclined int64
}

// fastPathRuns holds the counts of ReadFastPathRuns.
var fastPathRuns struct {
	compiledAnswered, compiledDeclined       atomic.Int64
	interpretedAnswered, interpretedDeclined atomic.Int64
}

// ReadFastPathRuns returns the counts of the fast paths' runs.
func ReadFastPathRuns() FastPathRuns {
	return FastPathRuns{
		CompiledAnswered:    fastPathRuns.compiledAnswered.Load(),
		CompiledDeclined:    fastPathRuns.compiledDeclined.Load(),
		InterpretedAnswered: fastPathRuns.interpretedAnswered.Load(),
		InterpretedDeclined: fastPathRuns.interpretedDeclined.Load(),
	}
}

// countRun adds one run to answered or declined and returns ok.
func countRun(ok bool, answered, declined *atomic.Int64) bool {
	if ok {
		answered.Add(1)
	} else {
		declined.Add(1)
	}
	return ok
}

// runCompiled runs op with vars and returns its data, or false when the
// operation must run through gqlgen's executor instead: its variables do
// not coerce, or the compiled code declined.
func (e *Executor) runCompiled(ctx context.Context, op *preparedOperation, vars map[string]any) ([]byte, bool) {
	coerced, err := validator.VariableValues(parsedSchema, op.op, vars)
	if err != nil {
		countRun(false, &fastPathRuns.compiledAnswered, &fastPathRuns.compiledDeclined)
		return nil, false
	}
	opCtx := &graphql.OperationContext{
		RawQuery:             op.query,
		Variables:            coerced,
		OperationName:        op.name,
		Doc:                  op.doc,
		Operation:            op.op,
		DisableIntrospection: true,
		RecoverFunc:          func(context.Context, any) error { return errDeclinedPanic },
	}
	ctx = graphql.WithOperationContext(ctx, opCtx)
	ctx = graphql.WithResponseContext(ctx, graphql.DefaultErrorPresenter, opCtx.RecoverFunc)
	ec := newExecutionContext(opCtx, e.schema, nil)
	buf := outputBuffer(ctx)
	ok := runRecovered(ctx, ec, op, buf) && len(graphql.GetErrors(ctx)) == 0
	if !countRun(ok, &fastPathRuns.compiledAnswered, &fastPathRuns.compiledDeclined) {
		return nil, false
	}
	return buf.Bytes(), true
}

// outputBuffers are the buffers a compiled operation writes its data into
// when its context lends them (WithOutputBuffers).
var outputBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledOutput is the largest output buffer kept for reuse.
const maxPooledOutput = 512 << 10

// lentBuffers are the output buffers lent to the operations of one
// request, returned to outputBuffers together when it is done.
type lentBuffers struct {
	mu   sync.Mutex
	lent []*bytes.Buffer
}

type lentBuffersKey struct{}

// WithOutputBuffers returns ctx, through which Execute writes the data of
// compiled operations into pooled buffers, and the function that returns
// them to the pool. Call it once the data that Execute returned through
// ctx, and every slice of it, is no longer used: it then aliases memory
// that later requests write over. Without it, each operation's data has a
// buffer of its own, grown by doubling, which was a fifth of the bytes a
// REST route allocated per response-cache miss.
func WithOutputBuffers(ctx context.Context) (context.Context, func()) {
	lb := &lentBuffers{}
	return context.WithValue(ctx, lentBuffersKey{}, lb), func() {
		lb.mu.Lock()
		defer lb.mu.Unlock()
		for _, b := range lb.lent {
			if b.Cap() <= maxPooledOutput {
				b.Reset()
				outputBuffers.Put(b)
			}
		}
		lb.lent = nil
	}
}

// outputBuffer returns an empty buffer for a compiled operation's data:
// from the pool when ctx lends buffers, else a new one.
func outputBuffer(ctx context.Context) *bytes.Buffer {
	lb, _ := ctx.Value(lentBuffersKey{}).(*lentBuffers)
	if lb == nil {
		b := new(bytes.Buffer)
		b.Grow(4096)
		return b
	}
	b := outputBuffers.Get().(*bytes.Buffer)
	lb.mu.Lock()
	lb.lent = append(lb.lent, b)
	lb.mu.Unlock()
	return b
}

// errDeclinedPanic is the error a panic becomes in a compiled operation or
// an interpreted query, which then declines.
var errDeclinedPanic = errors.New("graph: a compiled operation or interpreted query panicked")

// runRecovered runs op's function, false if it panicked.
func runRecovered(ctx context.Context, ec *executionContext, op *preparedOperation, buf *bytes.Buffer) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return op.run(ec, ctx, op.fields, buf)
}

// scratchBuffers holds the buffers that compiled operations write a list's
// elements and an object's concurrently resolved fields into before
// copying them into place.
var scratchBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxScratch is the largest buffer kept for reuse: a rare huge element
// would otherwise stay in the pool's memory.
const maxScratch = 64 << 10

// scratchBuffer returns an empty buffer from scratchBuffers.
func scratchBuffer() *bytes.Buffer {
	b := scratchBuffers.Get().(*bytes.Buffer)
	b.Reset()
	return b
}

// releaseScratch returns buffers, whose contents have been copied, to
// scratchBuffers. A buffer not released (an operation that declined) is
// left to the garbage collector.
func releaseScratch(buffers ...*bytes.Buffer) {
	for _, b := range buffers {
		if b != nil && b.Cap() <= maxScratch {
			scratchBuffers.Put(b)
		}
	}
}

// swallowPanic ends a panic of a compiled operation's goroutine, whose
// result then reports false: gqlgen's executor runs the operation again
// and reports the panic as it does.
func swallowPanic() {
	recover()
}

// included reports whether f's @include and @skip select it with vars, as
// gqlgen decides.
func included(f *ast.Field, vars map[string]any) bool {
	return directivesInclude(f.Directives, vars)
}

// directivesInclude reports whether @include and @skip among directives
// select the field or fragment they are on with vars, as gqlgen decides.
func directivesInclude(directives ast.DirectiveList, vars map[string]any) bool {
	skip, include := false, true
	if d := directives.ForName("skip"); d != nil {
		skip = directiveIf(d, vars)
	}
	if d := directives.ForName("include"); d != nil {
		include = directiveIf(d, vars)
	}
	return !skip && include
}

// directiveIf returns the value of d's argument if. The operation was
// validated and its variables coerced, so it is a Boolean; anything else
// panics, as in gqlgen, and the operation declines.
func directiveIf(d *ast.Directive, vars map[string]any) bool {
	arg := d.Arguments.ForName("if")
	if arg == nil {
		panic("@" + d.Name + " without if")
	}
	v, err := arg.Value.Value(vars)
	if err != nil {
		panic(err)
	}
	return v.(bool)
}
