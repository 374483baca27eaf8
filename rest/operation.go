package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

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
		return nil, err
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
	respond.JSON(w, r, http.StatusOK, v)
}

// notFoundError turns errNull into a derrors.NotFound error with message msg.
func notFoundError(err error, msg string) error {
	if errors.Is(err, errNull) {
		return fmt.Errorf("%w: %s", derrors.NotFound, msg)
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
