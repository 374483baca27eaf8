// Package respond writes the JSON responses of the HTTP API: values, and
// errors in the one shape every route answers them in
//
//	{"error": {"code": "not_found", "message": "..."}}
//
// An error's status and code come from derrors.Status. Its message is the
// text of the error that wraps the derrors sentinel directly, so write the
// user-facing sentence where the sentinel is wrapped:
//
//	return fmt.Errorf("%w: no operator %s", derrors.NotFound, addr)
//
// Callers may add context by wrapping that error further ("get operator:
// ..."); the context is logged, not shown. Internal errors (500),
// unavailable dependencies (503) and requests that ran out of time (504)
// show a generic message and are logged.
package respond

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/stakegraph/stakegraph/internal/derrors"
)

// ErrorBody is the JSON body of an error response.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the "error" member of an error response.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Generic messages of the errors whose details are not shown.
const (
	internalMessage    = "internal server error"
	unavailableMessage = "service unavailable, try again later"
	// TimeoutMessage is the message of a request that ran out of time; the
	// GraphQL error presenter shows it too.
	TimeoutMessage = "the request took longer than the server allows and was stopped; try again later, or ask for less"
)

// JSON writes v as the JSON body of a response with the given status. A
// HEAD request gets the headers only.
func JSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		slog.ErrorContext(r.Context(), "encode response", "error", err, "method", r.Method, "path", r.URL.Path)
		status = http.StatusInternalServerError
		body, _ = json.Marshal(ErrorBody{ErrorDetail{Code: "internal_server_error", Message: internalMessage}})
	}
	write(w, r, status, body)
}

// RawJSON writes body, which must be valid JSON (a value another encoder
// wrote), as the body of a response with the given status, as it is. A
// HEAD request gets the headers only.
func RawJSON(w http.ResponseWriter, r *http.Request, status int, body []byte) {
	write(w, r, status, body)
}

// Error writes the error response for err, logging errors whose details the
// client does not see.
func Error(w http.ResponseWriter, r *http.Request, err error) {
	status, detail := Describe(err)
	switch {
	case status == http.StatusServiceUnavailable:
		slog.WarnContext(r.Context(), "request failed: dependency unavailable", "error", err, "method", r.Method, "path", r.URL.Path)
	case status == http.StatusGatewayTimeout:
		slog.WarnContext(r.Context(), "request failed: out of time", "error", err, "method", r.Method, "path", r.URL.Path)
	case status >= 500:
		slog.ErrorContext(r.Context(), "request failed", "error", err, "method", r.Method, "path", r.URL.Path)
	}
	body, _ := json.Marshal(ErrorBody{detail})
	write(w, r, status, body)
}

// Describe returns the HTTP status and the client-facing code and message of
// err, for Error and for the GraphQL error presenter.
func Describe(err error) (int, ErrorDetail) {
	status, code := derrors.Status(err)
	switch {
	case err == nil:
		return http.StatusInternalServerError, ErrorDetail{Code: "internal_server_error", Message: internalMessage}
	case status == http.StatusServiceUnavailable:
		return status, ErrorDetail{Code: code, Message: unavailableMessage}
	case status == http.StatusGatewayTimeout:
		return status, ErrorDetail{Code: code, Message: TimeoutMessage}
	case status >= 500:
		return status, ErrorDetail{Code: code, Message: internalMessage}
	}
	return status, ErrorDetail{Code: code, Message: message(err)}
}

// sentinels are the derrors sentinels a 4xx error wraps, in derrors.Status's
// order of precedence.
var sentinels = []error{
	derrors.BadRequest,
	derrors.Unauthorized,
	derrors.Forbidden,
	derrors.NotFound,
	derrors.MethodNotAllowed,
	derrors.InvalidArgument,
	derrors.RateLimited,
}

// message returns the text of the error that wraps err's sentinel directly.
func message(err error) string {
	for _, s := range sentinels {
		if !errors.Is(err, s) {
			continue
		}
		if err == s {
			return s.Error()
		}
		if w := directWrapper(err, s); w != nil {
			return w.Error()
		}
		return s.Error()
	}
	return err.Error()
}

// directWrapper returns the error in err's tree whose Unwrap returns target.
func directWrapper(err, target error) error {
	var children []error
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if c := u.Unwrap(); c != nil {
			children = []error{c}
		}
	case interface{ Unwrap() []error }:
		children = u.Unwrap()
	}
	for _, c := range children {
		if c == target {
			return err
		}
		if w := directWrapper(c, target); w != nil {
			return w
		}
	}
	return nil
}

func write(w http.ResponseWriter, r *http.Request, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	if status == http.StatusNoContent || status == http.StatusNotModified {
		w.WriteHeader(status)
		return
	}
	// The newline is written apart: appending it would copy a body
	// without spare capacity.
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	if _, err := w.Write(body); err == nil {
		_, _ = w.Write(newline)
	}
}

var newline = []byte{'\n'}
