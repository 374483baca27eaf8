package graph

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/stakegraph/stakegraph/internal/derrors"
	"github.com/stakegraph/stakegraph/store"
)

// Executor runs GraphQL operations in process, without HTTP. The REST layer
// answers each route by running one fixed operation whose result has the
// REST shape. It is safe for concurrent use.
type Executor struct {
	db   *store.DB
	opts Options
	exec *executor.Executor
	// schema is exec's schema, which compiled operations run against.
	schema *executableSchema
}

// NewExecutor returns an Executor over db. It applies no complexity or depth
// limit: its operations are the service's own.
func NewExecutor(db *store.DB, opts Options) *Executor {
	opts = opts.withDefaults()
	schema := newSchema()
	return &Executor{db: db, opts: opts, exec: newExecutorOf(schema, opts), schema: schema.(*executableSchema)}
}

// Execute runs the operation query (the only one in the document) with
// vars, with fresh dataloaders, and returns the JSON of its data. When the
// operation fails, it returns an *Error for the first GraphQL error and no
// data; a field that resolved to null (a lookup of something that does not
// exist) is not an error. An operation that execgen compiled runs as
// compiled code first (see compiledOperation). Internal errors are not
// logged here, as the caller logs the error returned, whose text names the
// cause; a panic is, once, with its stack.
func (e *Executor) Execute(ctx context.Context, query string, vars map[string]any) (json.RawMessage, error) {
	return e.execute(ctx, query, vars, true)
}

// ExecuteUncompiled is Execute through gqlgen's executor alone, even for
// an operation that execgen compiled: the reference that compiled
// operations are checked against.
func (e *Executor) ExecuteUncompiled(ctx context.Context, query string, vars map[string]any) (json.RawMessage, error) {
	return e.execute(ctx, query, vars, false)
}

// ExecuteCompiled runs query as compiled code alone and returns its data,
// or false when query is not an operation execgen compiled or the
// compiled code declined it (an error, which Execute would answer).
func (e *Executor) ExecuteCompiled(ctx context.Context, query string, vars map[string]any) (json.RawMessage, bool) {
	op := preparedOperations[query]
	if op == nil {
		return nil, false
	}
	ctx, _ = e.requestContext(ctx)
	return e.runCompiled(ctx, op, vars)
}

// ExecuteInterpreted runs query with the interpreter of /graphql alone
// and returns its data, or false when the interpreter declined it (an
// error, which Execute would answer, or a query it cannot plan).
func (e *Executor) ExecuteInterpreted(ctx context.Context, query string, vars map[string]any) (json.RawMessage, bool) {
	ctx, _ = e.requestContext(ctx)
	ctx = graphql.StartOperationTrace(ctx)
	opCtx, errs := e.exec.CreateOperationContext(ctx, &graphql.RawParams{Query: query, Variables: vars})
	if errs != nil {
		return nil, false
	}
	return interpret(ctx, e.schema, opCtx)
}

// requestContext returns ctx with the fresh dataloaders of one operation
// and the record of its failures.
func (e *Executor) requestContext(ctx context.Context) (context.Context, *requestFailures) {
	failures := &requestFailures{}
	db, entities := e.opts.reads(ctx, e.db)
	ctx = withLoaders(ctx, newLoaders(db, e.opts.Now(), e.opts.BatchWait, entities, nil))
	return withFailures(ctx, failures), failures
}

func (e *Executor) execute(ctx context.Context, query string, vars map[string]any, compiled bool) (json.RawMessage, error) {
	ctx, failures := e.requestContext(ctx)
	defer failures.logPanic(ctx, e.opts.Logger)
	if op := preparedOperations[query]; op != nil && compiled {
		if data, ok := e.runCompiled(ctx, op, vars); ok {
			return data, nil
		}
	}
	ctx = graphql.StartOperationTrace(ctx)
	params := &graphql.RawParams{Query: query, Variables: vars}
	params.ReadTime.Start = graphql.Now()
	params.ReadTime.End = params.ReadTime.Start

	opCtx, errs := e.exec.CreateOperationContext(ctx, params)
	if errs != nil {
		resp := e.exec.DispatchError(graphql.WithOperationContext(ctx, opCtx), errs)
		return nil, firstError(resp.Errors)
	}
	responses, ctx := e.exec.DispatchOperation(ctx, opCtx)
	resp := responses(ctx)
	if resp == nil {
		return nil, ctx.Err()
	}
	if len(resp.Errors) > 0 {
		return nil, firstError(resp.Errors)
	}
	return resp.Data, nil
}

// Error is a failed operation of Executor.Execute: the first GraphQL error,
// with its code from the REST contract (bad_request, not_found,
// unprocessable_entity, internal_server_error, ...). It unwraps to the
// derrors sentinel of its code and to the error the resolver returned, so
// derrors.Status(err) gives the HTTP status and code to answer with.
type Error struct {
	// Code is the REST contract's error code.
	Code string
	// Message is the message to show the client (internal errors say no
	// more than "internal error").
	Message string
	// Path is the path of the field that failed, such as
	// "avs.operators"; empty for errors of the whole operation.
	Path string

	presented *gqlerror.Error
}

// Error returns the path and the message; for the failures of the
// server's side (internal errors, time running out), whose message says
// nothing, the cause follows, for the log.
func (e *Error) Error() string {
	msg := e.Message
	if e.Code == codeInternal || e.Code == codeGatewayTimeout {
		if e.presented != nil && e.presented.Unwrap() != nil {
			msg += ": " + e.presented.Unwrap().Error()
		}
	}
	if e.Path != "" {
		return e.Path + ": " + msg
	}
	return msg
}

// Unwrap returns the derrors sentinel of the code and the presented error,
// which wraps the resolver's error.
func (e *Error) Unwrap() []error {
	var errs []error
	if s := sentinels[e.Code]; s != nil {
		errs = append(errs, s)
	}
	if e.presented != nil {
		errs = append(errs, e.presented)
	}
	return errs
}

// sentinels maps the contract's codes to the derrors sentinels.
var sentinels = map[string]error{
	codeBadRequest:          derrors.BadRequest,
	"unauthorized":          derrors.Unauthorized,
	"forbidden":             derrors.Forbidden,
	codeNotFound:            derrors.NotFound,
	codeUnprocessableEntity: derrors.InvalidArgument,
	"rate_limit_exceeded":   derrors.RateLimited,
	codeGatewayTimeout:      derrors.Timeout,
}

// firstError converts the first of the presented errors.
func firstError(list gqlerror.List) error {
	if len(list) == 0 {
		return errors.New("graph: operation failed without an error")
	}
	first := list[0]
	code, _ := first.Extensions["code"].(string)
	if code == "" {
		code = codeInternal
	}
	return &Error{Code: code, Message: first.Message, Path: first.Path.String(), presented: first}
}
