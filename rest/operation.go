package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/stakegraph/stakegraph/graph"
	"github.com/stakegraph/stakegraph/internal/derrors"
	"github.com/stakegraph/stakegraph/internal/respond"
)

// handlers holds what the route handlers share.
type handlers struct {
	exec Executor
}

// vars are the variables of one GraphQL operation. Absent optional values
// are left out, which GraphQL reads as null.
type vars map[string]any

// setOptional sets name to *v, or leaves it out when v is nil.
func setOptional[T any](vs vars, name string, v *T) {
	if v != nil {
		vs[name] = *v
	}
}

// errNull marks an operation result that is null: the looked-up subject
// does not exist.
var errNull = errors.New("result is null")

// result runs op with vs and returns the JSON value at path within the
// operation's data. Each operation aliases the value the route answers with
// to "result" at the end of path. A null anywhere on the path is errNull.
func (h *handlers) result(ctx context.Context, op string, vs vars, path ...string) (json.RawMessage, error) {
	data, err := h.exec.Execute(ctx, op, vs)
	if err != nil {
		return nil, presentOperationError(err)
	}
	if v, ok := cutPath(data, path); ok {
		return v, nil
	}
	v := data
	for _, key := range path {
		if isNull(v) {
			return nil, errNull
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(v, &obj); err != nil {
			return nil, fmt.Errorf("operation data at %q: %w", key, err)
		}
		var ok bool
		if v, ok = obj[key]; !ok {
			return nil, fmt.Errorf("operation data has no %q", key)
		}
	}
	if isNull(v) {
		return nil, errNull
	}
	return v, nil
}

// cutPath returns the value at path in data when data is the compact JSON
// that the executor writes for an operation selecting one field at each
// level of path ({"avs":{"result":...}}), by cutting off the enclosing
// text instead of decoding the whole answer. It reports false for anything
// else, a null on the path included, which result then decodes.
func cutPath(data json.RawMessage, path []string) (json.RawMessage, bool) {
	v := []byte(data)
	for _, key := range path {
		if len(v) < len(key)+5 || v[0] != '{' || v[1] != '"' || v[len(v)-1] != '}' {
			return nil, false
		}
		rest, ok := bytes.CutPrefix(v[2:], []byte(key))
		if !ok || len(rest) < 3 || rest[0] != '"' || rest[1] != ':' {
			return nil, false
		}
		v = rest[2 : len(rest)-1]
	}
	if len(v) == 0 || isNull(v) || (v[0] != '{' && v[0] != '[') {
		return nil, false
	}
	return v, true
}

func isNull(v json.RawMessage) bool {
	return len(bytes.TrimSpace(v)) == 0 || string(bytes.TrimSpace(v)) == "null"
}

// serve runs op and answers with the value at path as it is, or with 404
// and notFoundMsg when it is null.
func (h *handlers) serve(w http.ResponseWriter, r *http.Request, op string, vs vars, notFoundMsg string, path ...string) {
	v, err := h.result(r.Context(), op, vs, path...)
	if err != nil {
		respond.Error(w, r, notFoundError(err, notFoundMsg))
		return
	}
	respond.RawJSON(w, r, http.StatusOK, v)
}

// notFoundError turns errNull into a derrors.NotFound error with message msg.
func notFoundError(err error, msg string) error {
	if errors.Is(err, errNull) {
		return fmt.Errorf("%w: %s", derrors.NotFound, msg)
	}
	return err
}

// clientErrors are the sentinels of the errors whose message the client
// sees.
var clientErrors = []error{
	derrors.BadRequest, derrors.Unauthorized, derrors.Forbidden, derrors.NotFound,
	derrors.MethodNotAllowed, derrors.InvalidArgument, derrors.RateLimited,
}

// operationError is a client error of an operation, shown with the GraphQL
// error's message but not its path, which names the operation's aliases
// rather than anything of the REST route.
type operationError struct {
	sentinel error
	msg      string
	err      error
}

func (e *operationError) Error() string   { return e.msg }
func (e *operationError) Unwrap() []error { return []error{e.sentinel, e.err} }

// presentOperationError returns err, or for a client error of the
// executor an error whose message leaves the GraphQL path out.
func presentOperationError(err error) error {
	var ge *graph.Error
	if !errors.As(err, &ge) {
		return err
	}
	for _, s := range clientErrors {
		if errors.Is(err, s) {
			return &operationError{sentinel: s, msg: ge.Message, err: err}
		}
	}
	return err
}

// decode unmarshals raw keeping numbers exactly as written.
func decode(raw json.RawMessage, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	return d.Decode(v)
}

// dropNulls removes the keys among names whose value in m is null.
func dropNulls(m map[string]any, names ...string) {
	for _, n := range names {
		if v, ok := m[n]; ok && v == nil {
			delete(m, n)
		}
	}
}
