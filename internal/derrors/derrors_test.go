package derrors

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
)

func TestStatus(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{nil, http.StatusOK, ""},
		{fmt.Errorf("%w: no such route", NotFound), http.StatusNotFound, "not_found"},
		{fmt.Errorf("read avs: %w", fmt.Errorf("%w: pq: canceling statement due to statement timeout", Timeout)), http.StatusGatewayTimeout, "gateway_timeout"},
		{fmt.Errorf("execute: %w", context.DeadlineExceeded), http.StatusGatewayTimeout, "gateway_timeout"},
		{fmt.Errorf("%w: connection refused", Unavailable), http.StatusServiceUnavailable, "internal_server_error"},
		{errors.New("boom"), http.StatusInternalServerError, "internal_server_error"},
	} {
		if status, code := Status(tc.err); status != tc.status || code != tc.code {
			t.Errorf("Status(%v) = %d %s; want %d %s", tc.err, status, code, tc.status, tc.code)
		}
	}
}
