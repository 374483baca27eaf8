package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/stakegraph/stakegraph/internal/derrors"
)

// The error codes of the REST contract, which the GraphQL API reports in
// extensions.code.
const (
	codeBadRequest          = "bad_request"
	codeNotFound            = "not_found"
	codeUnprocessableEntity = "unprocessable_entity"
	codeInternal            = "internal_server_error"
)

// gqlgen's own codes for operations it rejects before running them.
const (
	gqlgenComplexityLimit = "COMPLEXITY_LIMIT_EXCEEDED"
	gqlgenAPQNotFound     = "PERSISTED_QUERY_NOT_FOUND"
	gqlgenAPQNotSupported = "PERSISTED_QUERY_NOT_SUPPORTED"
)

// errorPresenter returns the error presenter of the API: every error gets
// the contract's code in extensions.code, and internal errors are logged
// and replaced by a message that reveals nothing.
func errorPresenter(logger *slog.Logger) graphql.ErrorPresenterFunc {
	return func(ctx context.Context, err error) *gqlerror.Error {
		presented := graphql.DefaultErrorPresenter(ctx, err)
		// Copy, so that the error gqlgen may still hold is left as it was.
		out := *presented
		out.Extensions = make(map[string]any, len(presented.Extensions)+1)
		for k, v := range presented.Extensions {
			out.Extensions[k] = v
		}
		code := errorCode(err, presented)
		out.Extensions["code"] = code
		if code == codeInternal {
			logger.ErrorContext(ctx, "graphql: internal error", "path", presented.Path.String(), "err", err)
			if errors.Is(err, derrors.Unavailable) {
				out.Message = "the service is unavailable; try again later"
			} else {
				out.Message = "internal error"
			}
		}
		return &out
	}
}

// errorCode returns the contract's code for err, which presented is the
// gqlgen form of.
func errorCode(err error, presented *gqlerror.Error) string {
	var gqlgenCode string
	if c, ok := presented.Extensions["code"].(string); ok {
		gqlgenCode = c
	}
	switch gqlgenCode {
	case errcode.ParseFailed:
		return codeBadRequest
	case errcode.ValidationFailed:
		// Values of variables that do not fit their types are invalid
		// arguments; anything else wrong with the document is a bad request.
		if len(presented.Path) > 0 && presented.Path[0] == ast.PathName("variable") {
			return codeUnprocessableEntity
		}
		return codeBadRequest
	case gqlgenComplexityLimit, depthLimitExceeded:
		return codeUnprocessableEntity
	case gqlgenAPQNotFound:
		return codeNotFound
	case gqlgenAPQNotSupported:
		return codeBadRequest
	}
	if errors.Is(err, derrors.Unavailable) {
		return codeInternal
	}
	// gqlgen's own complaints about a request (a body that is not JSON, a
	// persisted-query extension that does not fit) have no code, no path
	// and no cause: the client's request is at fault.
	var ge *gqlerror.Error
	if gqlgenCode == "" && len(presented.Path) == 0 && errors.As(err, &ge) && ge.Unwrap() == nil {
		return codeBadRequest
	}
	_, code := derrors.Status(err)
	return code
}

// recoverFunc turns a panic in a resolver into an internal error, logging
// it with its stack.
func recoverFunc(logger *slog.Logger) graphql.RecoverFunc {
	return func(ctx context.Context, p any) error {
		logger.ErrorContext(ctx, "graphql: panic", "panic", p, "stack", string(debug.Stack()))
		return fmt.Errorf("panic: %v", p)
	}
}
