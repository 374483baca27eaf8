package rest

import (
	"net/http"
	"strings"
	"testing"
)

// TestMessagesQuoteValuesAsSent checks that error messages naming a bad
// value show it as the client sent it, not normalised, and at most 100
// bytes of it.
func TestMessagesQuoteValuesAsSent(t *testing.T) {
	const upper = "0x00000000000000000000000000000000000000AA"
	exec := &fakeExecutor{answer: func(c call) (string, error) {
		if strings.Contains(c.Query, "operatorSet(") {
			return `{"result":null}`, nil
		}
		return `{"avs":null}`, nil
	}}
	long := strings.Repeat("x", 300)
	for _, tc := range []struct {
		method, target string
		status         int
		want           []string
	}{
		{"GET", "/avs/" + upper + "/operators", http.StatusNotFound, []string{upper}},
		{"GET", "/operator-sets/" + upper + "/007", http.StatusNotFound, []string{upper, "operator set 007"}},
		{"GET", "/avs/0xZZ/operators", http.StatusUnprocessableEntity, []string{`"address"`, `got "0xZZ"`}},
		{"GET", "/operator-sets/" + upper + "/+7", http.StatusUnprocessableEntity, []string{`"id"`, `got "+7"`}},
		{"GET", "/avs?take=0x10", http.StatusUnprocessableEntity, []string{`"take"`, `got "0x10"`}},
		{"GET", "/avs?take=%201", http.StatusUnprocessableEntity, []string{`got " 1"`}},
		{"GET", "/avs?withTvl=TRUE", http.StatusUnprocessableEntity, []string{`got "TRUE"`}},
		{"GET", "/avs?take=" + long, http.StatusUnprocessableEntity, []string{`got "` + long[:100] + `"… (300 bytes)`}},
		{"GET", "/nope%2Fthing", http.StatusNotFound, []string{`no route "/nope%2Fthing"`}},
		{"GET", "/" + long, http.StatusNotFound, []string{`(301 bytes)`}},
		{"get", "/avs", http.StatusMethodNotAllowed, []string{`method "get" is not supported`}},
	} {
		r := serveFake(t, exec, tc.method, tc.target, withKey)
		_, msg := errorBody(t, r)
		if r.Status != tc.status {
			t.Errorf("%s %.60s = %d %s; want %d", tc.method, tc.target, r.Status, r.Body, tc.status)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s %.60s: message %q lacks %q", tc.method, tc.target, msg, w)
			}
		}
		if strings.Contains(msg, long[:101]) {
			t.Errorf("%s %.60s: message quotes more than 100 bytes: %q", tc.method, tc.target, msg)
		}
	}
}
