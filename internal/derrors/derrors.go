// Package derrors defines the sentinel errors of stakegraph and maps each to
// the HTTP status and the error code of the API's error bodies, in one
// place. Code anywhere wraps a sentinel (fmt.Errorf("...: %w", derrors.NotFound));
// the REST layer and the GraphQL error presenter translate it.
package derrors

import (
	"context"
	"errors"
	"net/http"
)

var (
	// BadRequest: malformed request syntax or framing (400, bad_request).
	BadRequest = errors.New("bad request")
	// Unauthorized: no valid API key (401, unauthorized).
	Unauthorized = errors.New("unauthorized")
	// Forbidden: access to the resource is forbidden (403, forbidden).
	Forbidden = errors.New("forbidden")
	// NotFound: the requested resource does not exist (404, not_found).
	NotFound = errors.New("not found")
	// MethodNotAllowed: the route exists but not for this method (405).
	MethodNotAllowed = errors.New("method not allowed")
	// InvalidArgument: a well-formed request whose parameters cannot be
	// processed (422, unprocessable_entity).
	InvalidArgument = errors.New("invalid argument")
	// RateLimited: the client exceeded its rate limit (429, rate_limit_exceeded).
	RateLimited = errors.New("rate limit exceeded")
	// Timeout: the request ran out of time, because it passed its deadline
	// or one of its database statements passed the statement timeout, and
	// its work was stopped (504, gateway_timeout). A bare
	// context.DeadlineExceeded is answered the same way.
	Timeout = errors.New("timeout")
	// Unavailable: a dependency (the database) is down (503). The body keeps
	// the internal_server_error code, as the API's list of error codes has
	// no other for it; the status and message tell the two apart.
	Unavailable = errors.New("service unavailable")
)

// Status returns the HTTP status and the API's error code for err.
// Errors that wrap none of the sentinels are internal errors (500).
func Status(err error) (int, string) {
	switch {
	case err == nil:
		return http.StatusOK, ""
	case errors.Is(err, BadRequest):
		return http.StatusBadRequest, "bad_request"
	case errors.Is(err, Unauthorized):
		return http.StatusUnauthorized, "unauthorized"
	case errors.Is(err, Forbidden):
		return http.StatusForbidden, "forbidden"
	case errors.Is(err, NotFound):
		return http.StatusNotFound, "not_found"
	case errors.Is(err, MethodNotAllowed):
		return http.StatusMethodNotAllowed, "method_not_allowed"
	case errors.Is(err, InvalidArgument):
		return http.StatusUnprocessableEntity, "unprocessable_entity"
	case errors.Is(err, RateLimited):
		return http.StatusTooManyRequests, "rate_limit_exceeded"
	case errors.Is(err, Unavailable):
		return http.StatusServiceUnavailable, "internal_server_error"
	case errors.Is(err, Timeout), errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout, "gateway_timeout"
	default:
		return http.StatusInternalServerError, "internal_server_error"
	}
}
