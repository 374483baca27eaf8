package graph

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/stakegraph/stakegraph/internal/derrors"
	"github.com/stakegraph/stakegraph/internal/respond"
)

// The error codes of the REST contract, which the GraphQL API reports in
// extensions.code.
const (
	codeBadRequest          = "bad_request"
	codeNotFound            = "not_found"
	codeUnprocessableEntity = "unprocessable_entity"
	codeInternal            = "internal_server_error"
	codeGatewayTimeout      = "gateway_timeout"
)

// gqlgen's own codes for operations it rejects before running them.
const (
	gqlgenComplexityLimit = "COMPLEXITY_LIMIT_EXCEEDED"
	gqlgenAPQNotFound     = "PERSISTED_QUERY_NOT_FOUND"
	gqlgenAPQNotSupported = "PERSISTED_QUERY_NOT_SUPPORTED"
)

// errorPresenter returns the error presenter of the API: every error gets
// the contract's code in extensions.code, and a message that quotes at
// most a little of what the client sent. Internal errors are replaced by a
// message that reveals nothing and, like the other failures of the
// server's side, recorded in the request's failures (see requestFailures),
// which are logged once per request rather than once per field.
func errorPresenter() graphql.ErrorPresenterFunc {
	return func(ctx context.Context, err error) *gqlerror.Error {
		presented := graphql.DefaultErrorPresenter(ctx, err)
		// Copy, so that the error gqlgen may still hold is left as it was.
		out := *presented
		out.Extensions = make(map[string]any, len(presented.Extensions)+1)
		for k, v := range presented.Extensions {
			out.Extensions[k] = v
		}
		out.Message = capMessage(out.Message)
		code := errorCode(err, presented)
		if budgetExceeded(ctx, err) {
			// The field failed because the request spent its statement
			// budget and was stopped: the client's operation is at fault,
			// whatever the field's own error says.
			var be *budgetError
			if !errors.As(err, &be) {
				errors.As(context.Cause(ctx), &be)
			}
			out.Extensions["code"] = codeUnprocessableEntity
			out.Message = be.Error()
			return &out
		}
		out.Extensions["code"] = code
		if code == codeGatewayTimeout {
			// Past the request's deadline or the statement timeout; the
			// request's log line records it.
			out.Message = respond.TimeoutMessage
			failuresFrom(ctx).add(presented.Path, err)
		}
		if code == codeInternal {
			failuresFrom(ctx).add(presented.Path, err)
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
		// A document that is not valid, and variables whose values do not
		// fit their types (as a literal of the wrong type makes the
		// document invalid), are bad requests: GraphQL over HTTP answers
		// both 400.
		return codeBadRequest
	case gqlgenComplexityLimit, depthLimitExceeded, documentLimitExceeded:
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

// recoverFunc turns a panic in a resolver into an internal error. The
// first panic of a request is kept with its stack in the request's
// failures, which log it once (one panic in a field selected under a
// thousand aliases panics a thousand times); without failures in ctx, the
// panic is logged at once.
func recoverFunc(logger *slog.Logger) graphql.RecoverFunc {
	return func(ctx context.Context, p any) error {
		if f := failuresFrom(ctx); f != nil {
			f.addPanic(p, debug.Stack())
		} else {
			logger.ErrorContext(ctx, "graphql: panic", "panic", p, "stack", string(debug.Stack()))
		}
		return fmt.Errorf("panic: %v", p)
	}
}

// requestFailures collects the failures of one request on the server's
// side (internal errors, an unavailable database, time running out), so
// that the request is logged once however many of its fields failed, and
// answered with the HTTP status the failures call for. A nil
// *requestFailures records nothing.
type requestFailures struct {
	mu          sync.Mutex
	count       int
	first       error
	path        string
	unavailable bool
	timeout     bool
	// panicValue and stack are those of the request's first panic.
	panicValue any
	stack      []byte
}

type failuresKey struct{}

// withFailures returns ctx carrying f.
func withFailures(ctx context.Context, f *requestFailures) context.Context {
	return context.WithValue(ctx, failuresKey{}, f)
}

// failuresFrom returns the failures of the request of ctx, or nil.
func failuresFrom(ctx context.Context) *requestFailures {
	f, _ := ctx.Value(failuresKey{}).(*requestFailures)
	return f
}

// add records the failure err of the field at path.
func (f *requestFailures) add(path ast.Path, err error) {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.count++
	if f.first == nil {
		f.first, f.path = err, path.String()
	}
	f.unavailable = f.unavailable || errors.Is(err, derrors.Unavailable)
	f.timeout = f.timeout || errors.Is(err, derrors.Timeout)
}

// addPanic records a panic with its stack, unless the request panicked
// before.
func (f *requestFailures) addPanic(p any, stack []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stack == nil {
		f.panicValue, f.stack = p, stack
	}
}

// logPanic logs the request's first panic, if it panicked, with its stack.
func (f *requestFailures) logPanic(ctx context.Context, logger *slog.Logger) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stack != nil {
		logger.ErrorContext(ctx, "graphql: panic", "panic", f.panicValue, "stack", string(f.stack))
	}
}

// status returns the HTTP status the failures call for: 504 when time ran
// out, 503 when the database was unavailable, else 0 (the status of the
// response as it is).
func (f *requestFailures) status() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.timeout:
		return http.StatusGatewayTimeout
	case f.unavailable:
		return http.StatusServiceUnavailable
	}
	return 0
}

// log writes the request's one log line when fields failed: a warning
// when the database was unavailable or time ran out, which are not bugs,
// else an error, with the stack of the first panic if there was one.
func (f *requestFailures) log(ctx context.Context, logger *slog.Logger) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.count == 0 {
		return
	}
	level := slog.LevelError
	if (f.unavailable || f.timeout || ctx.Err() != nil) && f.stack == nil {
		level = slog.LevelWarn
	}
	attrs := []any{"failed_fields", f.count, "path", f.path, "err", f.first}
	if f.stack != nil {
		attrs = append(attrs, "panic", f.panicValue, "stack", string(f.stack))
	}
	logger.Log(ctx, level, "graphql: request failed", attrs...)
}

// Longest quotation and message of an error message: what a client sent
// (a field name, a value, an operation name) is never echoed whole.
const (
	maxQuotedBytes  = 100
	maxMessageBytes = 500
)

// capMessage shortens msg so that it quotes at most maxQuotedBytes of each
// quoted value or word (a run of characters without spaces, such as a name
// or a number the client sent) and is at most about maxMessageBytes long.
// A cut value is followed by "…" and its length, as respond.QuoteInput
// does.
func capMessage(msg string) string {
	if len(msg) <= maxQuotedBytes {
		return msg
	}
	var b strings.Builder
	for i := 0; i < len(msg); {
		switch {
		case msg[i] == '"':
			closing := closingQuote(msg, i+1)
			quoted := msg[i+1 : closing]
			b.WriteByte('"')
			if len(quoted) > maxQuotedBytes {
				b.WriteString(cutUTF8(quoted, maxQuotedBytes))
				b.WriteByte('"')
				fmt.Fprintf(&b, "… (%d bytes)", len(quoted))
			} else {
				b.WriteString(quoted)
				if closing < len(msg) {
					b.WriteByte('"')
				}
			}
			i = closing + 1
		case msg[i] == ' ':
			b.WriteByte(' ')
			i++
		default:
			end := i
			for end < len(msg) && msg[end] != ' ' && msg[end] != '"' {
				end++
			}
			if word := msg[i:end]; len(word) > maxQuotedBytes {
				b.WriteString(cutUTF8(word, maxQuotedBytes))
				fmt.Fprintf(&b, "… (%d bytes)", len(word))
			} else {
				b.WriteString(word)
			}
			i = end
		}
	}
	out := b.String()
	if len(out) > maxMessageBytes {
		out = cutUTF8(out, maxMessageBytes) + fmt.Sprintf("… (%d bytes)", len(out))
	}
	return out
}

// closingQuote returns the index in s of the quote that closes a quotation
// whose text starts at from, skipping escaped quotes, or len(s) when the
// quotation runs to the end.
func closingQuote(s string, from int) int {
	for i := from; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(s)
}

// cutUTF8 returns the longest prefix of s of at most n bytes that does not
// split a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
