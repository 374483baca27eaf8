package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/stakegraph/stakegraph/internal/derrors"
	"github.com/stakegraph/stakegraph/store"
)

// Media types of GraphQL responses.
const (
	mediaJSON            = "application/json"
	mediaGraphQLResponse = "application/graphql-response+json"
)

// endpoint serves GraphQL requests over HTTP, GET and POST as GraphQL over
// HTTP describes them, with the executor of NewHandler. It reads requests
// itself rather than through gqlgen's transports, so that
//
//   - a request is never read past opts.BodyLimit bytes (413), nor a GET
//     query string past as many (414);
//   - errors of the request itself (a method other than GET, HEAD and
//     POST: 405; a POST body that is not application/json: 415; a body that
//     is not JSON: 400) are GraphQL errors with a code, and never quote
//     more than a little of the request;
//   - each request gets its own dataloaders and statement budget; a request
//     that exceeds its budget is stopped and answered 422 with the
//     budget's error alone;
//   - a request whose fields failed because the database was unavailable
//     is answered 503 (504 when time ran out), so that clients and load
//     balancers can tell it from an answer;
//   - the statuses and media types of the answers are those GraphQL over
//     HTTP asks for (see responseMediaType and operationErrorStatus), and
//     an answer whose status is not 2xx has no data entry; and
//   - the failures of a request are logged once, not once per field.
type endpoint struct {
	exec *executor.Executor
	// schema is exec's schema, which interpreted queries run against.
	schema *executableSchema
	db     *store.DB
	opts   Options
}

// requestError is an error of an HTTP request that is not a GraphQL
// request the executor can run.
type requestError struct {
	status  int
	code    string
	message string
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	media := responseMediaType(r)
	params, rerr := readParams(w, r, e.opts.BodyLimit)
	if rerr != nil {
		if rerr.status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", AllowedMethods)
		}
		writeResponse(w, media, rerr.status, errorResponse(rerr.code, rerr.message))
		return
	}

	ctx, stop := context.WithCancelCause(r.Context())
	defer stop(nil)
	budget := newStatementBudget(e.opts.StatementLimit, stop)
	failures := &requestFailures{}
	ctx = withFailures(ctx, failures)
	db, entities := e.opts.reads(ctx, e.db)
	ctx = withLoaders(ctx, newLoaders(db, e.opts.Now(), e.opts.BatchWait, entities, budget))
	ctx = graphql.StartOperationTrace(ctx)
	defer func() {
		if p := recover(); p != nil {
			e.opts.Logger.ErrorContext(ctx, "graphql: panic", "panic", p, "stack", string(debug.Stack()))
			writeResponse(w, media, http.StatusInternalServerError, errorResponse(codeInternal, "internal error"))
		}
	}()

	resp, status := e.execute(ctx, params, media)
	switch {
	case budget.exceeded():
		// The fields stopped by the budget failed one by one; the answer
		// is the budget's error alone.
		resp, status = errorResponse(codeUnprocessableEntity, budget.err.Error()), http.StatusUnprocessableEntity
	case failures.status() != 0:
		status = failures.status()
	}
	failures.log(ctx, e.opts.Logger)
	writeResponse(w, media, status, resp)
}

// execute runs the request params and returns the response and its HTTP
// status.
func (e *endpoint) execute(ctx context.Context, params *graphql.RawParams, media string) (*graphql.Response, int) {
	params.ReadTime.End = graphql.Now()
	opCtx, errs := e.exec.CreateOperationContext(ctx, params)
	if errs != nil {
		resp := e.exec.DispatchError(graphql.WithOperationContext(ctx, opCtx), errs)
		// The operation did not run: the response has no data entry.
		resp.Data = nil
		return resp, operationErrorStatus(errs, resp.Errors, media)
	}
	if data, ok := interpret(ctx, e.schema, opCtx); ok {
		return &graphql.Response{Data: data}, http.StatusOK
	}
	responses, ctx := e.exec.DispatchOperation(ctx, opCtx)
	resp := responses(ctx)
	if resp == nil {
		// The context ended before the operation ran: the client left or
		// the request's deadline passed.
		cause := context.Cause(ctx)
		if errors.Is(cause, context.DeadlineExceeded) {
			cause = fmt.Errorf("%w: %w", derrors.Timeout, cause)
		}
		err := gqlerror.WrapPath(nil, fmt.Errorf("%w: %w", errRequestEnded, cause))
		return e.exec.DispatchError(graphql.WithOperationContext(ctx, opCtx), gqlerror.List{err}), http.StatusOK
	}
	return resp, http.StatusOK
}

// errRequestEnded is the error of a request whose context ended before its
// operation ran.
var errRequestEnded = errors.New("the request ended before its operation ran")

// operationErrorStatus returns the status of a request the executor
// rejected before running it, with the errors errs, presented as
// presented, for a response of media type media:
//
//   - a document over one of the limits of Options (code
//     unprocessable_entity) is answered 422 with either media type, as a
//     request stopped by its statement budget is;
//   - the errors GraphQL itself defines (a document that does not parse or
//     is not valid, variables that do not fit their types, an unknown
//     operation; code bad_request) are answered as GraphQL over HTTP asks:
//     400 with application/graphql-response+json, 200 with
//     application/json, whose clients read the errors, each with its code,
//     from the body;
//   - errors that are not about the request's document (an unknown
//     persisted query) are answered 200.
func operationErrorStatus(errs, presented gqlerror.List, media string) int {
	switch {
	case errcode.GetErrorKind(errs) != errcode.KindProtocol:
		return http.StatusOK
	case len(presented) > 0 && presented[0].Extensions["code"] == codeUnprocessableEntity:
		return http.StatusUnprocessableEntity
	case media == mediaGraphQLResponse:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// readParams reads the GraphQL request of r, reading at most limit bytes
// of its body or query string.
func readParams(w http.ResponseWriter, r *http.Request, limit int64) (*graphql.RawParams, *requestError) {
	params := &graphql.RawParams{Headers: r.Header}
	params.ReadTime.Start = graphql.Now()
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if int64(len(r.URL.RawQuery)) > limit {
			return nil, &requestError{http.StatusRequestURITooLong, codeBadRequest,
				fmt.Sprintf("the query string has %d bytes, more than the limit of %d; send large requests by POST", len(r.URL.RawQuery), limit)}
		}
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return nil, &requestError{http.StatusBadRequest, codeBadRequest, "the query string does not parse: " + capMessage(err.Error())}
		}
		params.Query = q.Get("query")
		params.OperationName = q.Get("operationName")
		if v := q.Get("variables"); v != "" {
			if err := decodeJSON([]byte(v), &params.Variables); err != nil {
				return nil, &requestError{http.StatusBadRequest, codeBadRequest, "the variables parameter is not a JSON object: " + err.Error()}
			}
		}
		if v := q.Get("extensions"); v != "" {
			if err := decodeJSON([]byte(v), &params.Extensions); err != nil {
				return nil, &requestError{http.StatusBadRequest, codeBadRequest, "the extensions parameter is not a JSON object: " + err.Error()}
			}
		}
		return params, checkQuery(params)
	case http.MethodPost:
		mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if mt != mediaJSON {
			return nil, &requestError{http.StatusUnsupportedMediaType, codeBadRequest,
				"a GraphQL POST request has Content-Type application/json"}
		}
		if r.ContentLength > limit {
			return nil, tooLarge(limit)
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
		if err != nil {
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				return nil, tooLarge(limit)
			}
			return nil, &requestError{http.StatusBadRequest, codeBadRequest, "the request body could not be read"}
		}
		var p struct {
			Query         string         `json:"query"`
			OperationName string         `json:"operationName"`
			Variables     map[string]any `json:"variables"`
			Extensions    map[string]any `json:"extensions"`
		}
		if err := decodeJSON(body, &p); err != nil {
			return nil, &requestError{http.StatusBadRequest, codeBadRequest, "the request body is not a GraphQL request in JSON: " + err.Error()}
		}
		params.Query, params.OperationName, params.Variables, params.Extensions = p.Query, p.OperationName, p.Variables, p.Extensions
		return params, checkQuery(params)
	default:
		return nil, &requestError{http.StatusMethodNotAllowed, codeMethodNotAllowed,
			fmt.Sprintf("method %s is not allowed: GraphQL requests are GET or POST", capMessage(r.Method))}
	}
}

// checkQuery returns the error of a request without a query, unless it
// names an automatic persisted query by its hash, whose query the executor
// supplies.
func checkQuery(params *graphql.RawParams) *requestError {
	if params.Query != "" || params.Extensions["persistedQuery"] != nil {
		return nil
	}
	return &requestError{http.StatusBadRequest, codeBadRequest, "the request has no query parameter"}
}

// codeMethodNotAllowed is the contract's code of a method a route does not
// serve.
const codeMethodNotAllowed = "method_not_allowed"

// tooLarge is the error of a body over limit bytes.
func tooLarge(limit int64) *requestError {
	return &requestError{http.StatusRequestEntityTooLarge, codeBadRequest,
		fmt.Sprintf("the request body is larger than the limit of %d bytes", limit)}
}

// decodeJSON decodes data, one JSON value, into v, keeping numbers as
// written (the executor coerces variables to their types). Its errors
// describe what is wrong without quoting the data.
func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	err := dec.Decode(v)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			return fmt.Errorf("data follows the JSON value at byte %d", dec.InputOffset())
		}
		return nil
	}
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return errors.New("it is empty")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("it ends before the JSON value does")
	case errors.As(err, &syntax):
		return fmt.Errorf("%s at byte %d", capMessage(syntax.Error()), syntax.Offset)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Errorf("%s is a JSON %s, which it cannot be", capMessage(strings.TrimPrefix(typ.Field, ".")), typ.Value)
		}
		return fmt.Errorf("it is a JSON %s", typ.Value)
	}
	return errors.New("it is not valid JSON")
}

// responseMediaType returns the media type of the response to r, which
// GraphQL over HTTP lets the client choose with its Accept header:
// application/graphql-response+json when the client prefers it (it has the
// highest quality among the acceptable types of the header, or the same
// as application/json and is listed before it), else application/json,
// which is also the answer to a request without an Accept header or that
// accepts */* or application/* (a client that predates
// application/graphql-response+json). A header that accepts neither (only
// text/plain, say) gets application/graphql-response+json rather than 406.
func responseMediaType(r *http.Request) string {
	accept := r.Header.Values("Accept")
	if len(accept) == 0 {
		return mediaJSON
	}
	best, bestQ := "", 0.0
	for _, header := range accept {
		for part := range strings.SplitSeq(header, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			var media string
			switch mt {
			case "*/*", "application/*", mediaJSON:
				media = mediaJSON
			case mediaGraphQLResponse:
				media = mediaGraphQLResponse
			default:
				continue
			}
			q := 1.0
			if v, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f <= 1 {
					q = f
				}
			}
			if q > bestQ {
				best, bestQ = media, q
			}
		}
	}
	if best == "" {
		return mediaGraphQLResponse
	}
	return best
}

// errorResponse is a response of one error with a code.
func errorResponse(code, message string) *graphql.Response {
	return &graphql.Response{Errors: gqlerror.List{{Message: message, Extensions: map[string]any{"code": code}}}}
}

// wireResponse is a GraphQL response as written: without a data entry when
// the request failed before its operation ran, as GraphQL over HTTP asks.
type wireResponse struct {
	Errors     gqlerror.List   `json:"errors,omitempty"`
	Data       json.RawMessage `json:"data,omitempty"`
	Extensions map[string]any  `json:"extensions,omitempty"`
}

// marshalsAsIs reports whether encoding/json writes the JSON text data as
// it is when it marshals it as a json.RawMessage: data has no whitespace
// outside its strings (encoding/json compacts it) and nothing that
// encoding/json escapes for HTML (<, >, &, U+2028 and U+2029).
func marshalsAsIs(data []byte) bool {
	inString := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if !jsonNotable[c] {
			continue
		}
		switch {
		case c == '<' || c == '>' || c == '&' || c == 0xe2:
			// 0xe2 starts U+2028 and U+2029 in UTF-8 (and other
			// characters, which take the slow path too).
			return false
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case !inString:
			return false // whitespace outside a string
		}
	}
	return !inString
}

// jsonNotable marks the bytes marshalsAsIs looks at; it skips the others,
// most of an answer, with one lookup each.
var jsonNotable = func() (t [256]bool) {
	for _, c := range []byte("\"\\<>&\xe2 \t\n\r") {
		t[c] = true
	}
	return t
}()

// writeResponse writes resp with status as the body of media type media,
// without its data when status is not 2xx: GraphQL over HTTP allows data
// only in a successful answer.
func writeResponse(w http.ResponseWriter, media string, status int, resp *graphql.Response) {
	data := resp.Data
	if status < 200 || status > 299 {
		data = nil
	}
	var body []byte
	var err error
	if len(resp.Errors) == 0 && resp.Extensions == nil && len(data) > 0 && marshalsAsIs(data) {
		// What json.Marshal would write, without its second pass over
		// the data (a tenth of the server's time on a large answer).
		body = make([]byte, 0, len(data)+len(`{"data":}`))
		body = append(append(append(body, `{"data":`...), data...), '}')
	} else {
		body, err = json.Marshal(wireResponse{Errors: resp.Errors, Data: data, Extensions: resp.Extensions})
	}
	if err != nil {
		slog.Error("graphql: encode response", "err", err)
		status = http.StatusInternalServerError
		body, _ = json.Marshal(errorResponse(codeInternal, "internal error"))
	}
	h := w.Header()
	h.Set("Content-Type", media)
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
