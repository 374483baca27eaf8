package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stakegraph/stakegraph/graph"
	"github.com/stakegraph/stakegraph/internal/derrors"
)

// The tests in this file check the HTTP layer alone: routing, parameter
// validation and the mapping of parameters to operation variables, with an
// executor that records what it is asked. The tests against PostgreSQL and
// the demo data are in routes_test.go.

// call is one operation run by fakeExecutor.
type call struct {
	Query string
	Vars  map[string]any
}

// fakeExecutor records operations and answers with answer(call), or {}.
type fakeExecutor struct {
	mu     sync.Mutex
	calls  []call
	answer func(c call) (string, error)
}

func (f *fakeExecutor) Execute(_ context.Context, query string, vs map[string]any) (json.RawMessage, error) {
	c := call{Query: query, Vars: vs}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	f.mu.Unlock()
	if f.answer == nil {
		return json.RawMessage(`{}`), nil
	}
	s, err := f.answer(c)
	return json.RawMessage(s), err
}

func (f *fakeExecutor) Calls() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

func passThrough(next http.Handler) http.Handler { return next }

// requireKey stands in for the API-key middleware: it refuses requests
// without the header.
func requireKey(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-API-Token") == "" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func serveFake(t *testing.T, exec *fakeExecutor, method, target string, header http.Header) *response {
	t.Helper()
	h := NewHandler(Config{Executor: exec, Authenticate: requireKey, Version: "v1.2.3"})
	r := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		r.Header[k] = v
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	res := w.Result()
	return readResponse(t, res)
}

var withKey = http.Header{"X-Api-Token": {"k"}}

// errorBody decodes an error response body.
func errorBody(t *testing.T, r *response) (code, message string) {
	t.Helper()
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatalf("error body %q: %v", r.Body, err)
	}
	return body.Error.Code, body.Error.Message
}

func TestSystemRoutesNeedNoKey(t *testing.T) {
	exec := &fakeExecutor{}
	for target, want := range map[string]string{
		"/health":  `{"status":"ok"}`,
		"/version": `{"version":"v1.2.3"}`,
	} {
		r := serveFake(t, exec, http.MethodGet, target, nil)
		if r.Status != http.StatusOK || strings.TrimSpace(string(r.Body)) != want {
			t.Errorf("GET %s = %d %s, want 200 %s", target, r.Status, r.Body, want)
		}
		validateResponse(t, target, r)
	}
	r := serveFake(t, exec, http.MethodGet, "/openapi.json", nil)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"openapi"`) {
		t.Errorf("GET /openapi.json = %d", r.Status)
	}
	if len(exec.Calls()) != 0 {
		t.Errorf("system routes ran operations")
	}
}

func TestDataRoutesNeedKey(t *testing.T) {
	exec := &fakeExecutor{}
	doc, _ := loadAPIDoc(t)
	for path := range doc.Paths.Map() {
		if path == "/health" || path == "/version" || path == "/openapi.json" {
			continue
		}
		target := strings.NewReplacer("{address}", "0x0000000000000000000000000000000000000001", "{strategy}", "0x0000000000000000000000000000000000000001").Replace(path)
		if r := serveFake(t, exec, http.MethodGet, target, nil); r.Status != http.StatusUnauthorized {
			t.Errorf("GET %s without a key = %d, want 401", target, r.Status)
		}
	}
}

func TestUnknownPathAndMethod(t *testing.T) {
	exec := &fakeExecutor{}
	r := serveFake(t, exec, http.MethodGet, "/nope", withKey)
	if code, msg := errorBody(t, r); r.Status != http.StatusNotFound || code != "not_found" || !strings.Contains(msg, "/nope") {
		t.Errorf("GET /nope = %d %s", r.Status, r.Body)
	}
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		for _, target := range []string{"/avs", "/health", "/metrics/tvl/restaking"} {
			r := serveFake(t, exec, m, target, withKey)
			code, _ := errorBody(t, r)
			if r.Status != http.StatusMethodNotAllowed || code != "method_not_allowed" {
				t.Errorf("%s %s = %d %s", m, target, r.Status, r.Body)
			}
			if got := r.Header.Get("Allow"); got != "GET, HEAD, OPTIONS" {
				t.Errorf("%s %s: Allow = %q", m, target, got)
			}
		}
	}
	if len(exec.Calls()) != 0 {
		t.Errorf("operations ran for rejected requests")
	}
}

func TestHead(t *testing.T) {
	r := serveFake(t, &fakeExecutor{}, http.MethodHead, "/health", nil)
	if r.Status != http.StatusOK || len(r.Body) != 0 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Errorf("HEAD /health = %d, %q, %q", r.Status, r.Body, r.Header.Get("Content-Type"))
	}
}

func TestCORS(t *testing.T) {
	// A preflight carries no key.
	r := serveFake(t, &fakeExecutor{}, http.MethodOptions, "/avs", http.Header{
		"Origin":                         {"https://example.org"},
		"Access-Control-Request-Method":  {"GET"},
		"Access-Control-Request-Headers": {"x-api-token"},
	})
	if r.Status != http.StatusNoContent {
		t.Errorf("preflight status %d", r.Status)
	}
	for k, want := range map[string]string{
		"Access-Control-Allow-Origin":   "*",
		"Access-Control-Allow-Methods":  "GET, HEAD, OPTIONS",
		"Access-Control-Allow-Headers":  "X-API-Token, Content-Type",
		"Access-Control-Expose-Headers": "Retry-After, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, ETag, X-Cache, X-Request-Id",
		"Allow":                         "GET, HEAD, OPTIONS",
	} {
		if got := r.Header.Get(k); got != want {
			t.Errorf("preflight %s = %q, want %q", k, got, want)
		}
	}
	// Ordinary and error responses are readable cross-origin too.
	for _, target := range []string{"/health", "/avs", "/nope"} {
		r := serveFake(t, &fakeExecutor{}, http.MethodGet, target, http.Header{"Origin": {"https://example.org"}})
		if got := r.Header.Get("Access-Control-Allow-Origin"); got != "*" {
			t.Errorf("GET %s: Access-Control-Allow-Origin = %q", target, got)
		}
	}
}

func TestGzip(t *testing.T) {
	h := NewHandler(Config{Executor: &fakeExecutor{}, Authenticate: passThrough, Version: "v"})
	r := httptest.NewRequest(http.MethodGet, "/openapi.json", nil)
	r.Header.Set("Accept-Encoding", "gzip")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	res := w.Result()
	if res.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("Content-Encoding = %q, want gzip", res.Header.Get("Content-Encoding"))
	}
	if cl := res.Header.Get("Content-Length"); cl != "" && cl != fmt.Sprint(w.Body.Len()) {
		t.Errorf("Content-Length %s for a compressed body of %d bytes", cl, w.Body.Len())
	}
	body := readResponse(t, res)
	if !json.Valid(body.Body) || len(body.Body) < 1000 {
		t.Errorf("gunzipped body is not the document: %.100s", body.Body)
	}

	r = httptest.NewRequest(http.MethodGet, "/openapi.json", nil)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Result().Header.Get("Content-Encoding") != "" {
		t.Errorf("compressed for a client that does not accept it")
	}
}

// TestParameterErrors checks that each malformed parameter of each route is
// answered with 422 naming it, before any operation runs.
func TestParameterErrors(t *testing.T) {
	const addr = "0x00000000000000000000000000000000000000aa"
	for _, tc := range []struct{ target, param string }{
		{"/avs?withTvl=yes", "withTvl"},
		{"/avs?withCuratedMetadata=1", "withCuratedMetadata"},
		{"/avs?searchMode=exact", "searchMode"},
		{"/avs?sortByApy=up", "sortByApy"},
		{"/avs?sortByTvl=ASC", "sortByTvl"},
		{"/avs?sortByTotalStakers=x", "sortByTotalStakers"},
		{"/avs?sortByTotalOperators=x", "sortByTotalOperators"},
		{"/avs?skip=-1", "skip"},
		{"/avs?take=1001", "take"},
		{"/avs?take=-5", "take"},
		{"/avs?take=abc", "take"},
		{"/avs/addresses?searchMode=x", "searchMode"},
		{"/avs/addresses?take=2000", "take"},
		{"/avs/0x123/operators", "address"},
		{"/avs/" + addr + "/operators?sortOperatorsByTvl=big", "sortOperatorsByTvl"},
		{"/avs/" + addr + "/operators?withTvl=on", "withTvl"},
		{"/avs/" + addr + "/operators?searchMode=any", "searchMode"},
		{"/avs/" + addr + "/operators?skip=x", "skip"},
		{"/avs/not-an-address/rewards", "address"},
		{"/operators?withTvl=nope", "withTvl"},
		{"/operators?sortByTotalAvs=x", "sortByTotalAvs"},
		{"/operators?sortByApy=x", "sortByApy"},
		{"/operators?sortByTvl=x", "sortByTvl"},
		{"/operators?sortByTotalStakers=x", "sortByTotalStakers"},
		{"/operators?take=1e3", "take"},
		{"/stakers/0xzz/events/delegation", "address"},
		{"/stakers/" + addr + "/events/delegation?txHash=0x12", "txHash"},
		{"/stakers/" + addr + "/events/delegation?type=DEPOSIT", "type"},
		{"/stakers/" + addr + "/events/delegation?strategyAddress=0x1", "strategyAddress"},
		{"/stakers/" + addr + "/events/delegation?operatorAddress=0x1", "operatorAddress"},
		{"/stakers/" + addr + "/events/delegation?startAt=yesterday", "startAt"},
		{"/stakers/" + addr + "/events/delegation?endAt=2024-02-30", "endAt"},
		{"/stakers/" + addr + "/events/delegation?withTokenData=yes", "withTokenData"},
		{"/stakers/" + addr + "/events/delegation?withEthValue=yes", "withEthValue"},
		{"/withdrawals?stakerAddress=bob", "stakerAddress"},
		{"/withdrawals?delegatedTo=0x", "delegatedTo"},
		{"/withdrawals?strategyAddress=0x1", "strategyAddress"},
		{"/withdrawals?status=pending", "status"},
		{"/withdrawals?take=1001", "take"},
		{"/metrics/tvl/restaking?withChange=yes", "withChange"},
		{"/metrics/tvl/restaking/0x1", "strategy"},
		{"/metrics/tvl/restaking/" + addr + "?withChange=2", "withChange"},
		{"/metrics/total-withdrawals?withChange=TRUE", "withChange"},
		{"/metrics/total-stakers?withChange=x", "withChange"},
		{"/metrics/deployment-ratio?withChange=x", "withChange"},
		{"/metrics/historical/count-stakers?frequency=1w", "frequency"},
		{"/metrics/historical/count-stakers?variant=sum", "variant"},
		{"/metrics/historical/count-stakers?startAt=soon", "startAt"},
		{"/metrics/historical/count-stakers?endAt=later", "endAt"},
		{"/avs/0x12/operator-sets", "address"},
		{"/avs/" + addr + "/operator-sets?withTvl=1", "withTvl"},
		{"/avs/" + addr + "/operator-sets?take=0", "take"},
		{"/avs/" + addr + "/operator-sets?skip=-2", "skip"},
		{"/operator-sets/0x12/1", "avs"},
		{"/operator-sets/" + addr + "/-1", "id"},
		{"/operator-sets/" + addr + "/4294967296", "id"},
		{"/operator-sets/" + addr + "/one", "id"},
		{"/operator-sets/" + addr + "/+1", "id"},
		{"/operator-sets/" + addr + "/1?withTvl=no", "withTvl"},
		{"/operator-sets/" + addr + "/1?take=1001", "take"},
		{"/operators/0x12/allocations", "address"},
		{"/operators/" + addr + "/allocations?take=x", "take"},
		{"/slashings?avsAddress=0x1", "avsAddress"},
		{"/slashings?operatorAddress=op", "operatorAddress"},
		{"/slashings?strategyAddress=0x", "strategyAddress"},
		{"/slashings?startAt=yesterday", "startAt"},
		{"/slashings?endAt=2024-13-01", "endAt"},
		{"/slashings?take=1001", "take"},
	} {
		exec := &fakeExecutor{}
		r := serveFake(t, exec, http.MethodGet, tc.target, withKey)
		code, msg := errorBody(t, r)
		if r.Status != http.StatusUnprocessableEntity || code != "unprocessable_entity" || !strings.Contains(msg, `"`+tc.param+`"`) || !strings.Contains(msg, "expected") {
			t.Errorf("GET %s = %d %s; want 422 naming %q", tc.target, r.Status, r.Body, tc.param)
		}
		if len(exec.Calls()) != 0 {
			t.Errorf("GET %s ran an operation", tc.target)
		}
		validateResponse(t, tc.target, r)
	}
}

// TestVariables checks how parameters become operation variables.
func TestVariables(t *testing.T) {
	const mixed = "0xAbCdEf0123456789aBcDeF0123456789AbCdEf01"
	lower := strings.ToLower(mixed)
	hash := "0x" + strings.Repeat("Ab", 32)
	for _, tc := range []struct {
		target string
		want   map[string]any
	}{
		{"/avs", map[string]any{"withTvl": false, "withCuratedMetadata": false, "searchMode": "contains", "skip": 0, "take": 12}},
		{"/avs?withTvl=true&withCuratedMetadata=true&searchMode=startsWith&searchByText=Eigen&sortByTvl=desc&skip=5&take=1000&unknown=1",
			map[string]any{"withTvl": true, "withCuratedMetadata": true, "searchMode": "startsWith", "searchByText": "Eigen", "sortByTvl": "desc", "skip": 5, "take": 1000}},
		{"/avs/addresses?searchByText=x", map[string]any{"searchMode": "contains", "searchByText": "x", "skip": 0, "take": 12}},
		{"/avs/" + mixed + "/operators?sortOperatorsByTvl=asc&withTvl=true",
			map[string]any{"address": lower, "searchMode": "contains", "sortByTvl": "asc", "withTvl": true, "skip": 0, "take": 12}},
		{"/operators?sortByTotalAvs=asc&searchByText=op", map[string]any{"withTvl": false, "sortByTotalAvs": "asc", "searchByText": "op", "skip": 0, "take": 12}},
		{"/stakers/" + mixed + "/events/delegation?txHash=" + hash + "&type=SHARES_INCREASED&strategyAddress=" + mixed + "&operatorAddress=" + mixed +
			"&startAt=2024-04-11T08:31:11.000&endAt=2024-04-12T10:00:00%2B02:00&withTokenData=true&withEthValue=true&skip=1&take=2",
			map[string]any{"address": lower, "txHash": strings.ToLower(hash), "type": "SHARES_INCREASED", "strategyAddress": lower, "operatorAddress": lower,
				"startAt": "2024-04-11T08:31:11Z", "endAt": "2024-04-12T08:00:00Z", "withTokenData": true, "withEthValue": true, "skip": 1, "take": 2}},
		{"/stakers/" + mixed + "/events/delegation?startAt=2024-04-11", map[string]any{"address": lower, "startAt": "2024-04-11T00:00:00Z",
			"withTokenData": false, "withEthValue": false, "skip": 0, "take": 12}},
		{"/withdrawals?status=queued_withdrawable&delegatedTo=" + mixed, map[string]any{"status": "queued_withdrawable", "delegatedTo": lower, "skip": 0, "take": 12}},
		{"/metrics", map[string]any{}},
		{"/metrics/tvl/restaking?withChange=true", map[string]any{"withChange": true}},
		{"/metrics/tvl/restaking/" + mixed, map[string]any{"strategy": lower, "withChange": false}},
		{"/metrics/total-withdrawals", map[string]any{"withChange": false}},
		{"/metrics/total-stakers?withChange=true", map[string]any{"withChange": true}},
		{"/metrics/deployment-ratio?withChange=false", map[string]any{"withChange": false}},
		{"/metrics/historical/count-stakers", map[string]any{"series": "stakers", "frequency": "1d", "variant": "cumulative"}},
		{"/metrics/historical/count-stakers?frequency=7d&variant=discrete&startAt=2024-01-01&endAt=2024-06-01T12:00:00Z",
			map[string]any{"series": "stakers", "frequency": "7d", "variant": "discrete", "startAt": "2024-01-01T00:00:00Z", "endAt": "2024-06-01T12:00:00Z"}},
		{"/metrics/historical/count-avs?variant=discrete", map[string]any{"series": "avs", "frequency": "1d", "variant": "discrete"}},
		{"/metrics/historical/tvl/beacon-chain?frequency=7d", map[string]any{"series": "beaconChain", "frequency": "7d", "variant": "cumulative"}},
		{"/metrics/total-avs?withChange=true", map[string]any{"series": "avs", "withChange": true}},
		{"/metrics/total-deposits", map[string]any{"series": "deposits", "withChange": false}},
		{"/metrics/historical/count-deposits?variant=discrete", map[string]any{"series": "deposits", "frequency": "1d", "variant": "discrete"}},
		{"/metrics/historical/withdrawals?frequency=7d", map[string]any{"series": "withdrawals", "frequency": "7d", "variant": "cumulative"}},
		{"/metrics/historical/operators/" + mixed + "?variant=discrete&frequency=7d",
			map[string]any{"address": lower, "frequency": "7d", "variant": "discrete"}},
		{"/metrics/historical/tvl/restaking/" + mixed + "?startAt=2025-01-01",
			map[string]any{"address": lower, "frequency": "1d", "variant": "cumulative", "startAt": "2025-01-01T00:00:00Z"}},
		{"/withdrawals/0x" + strings.Repeat("Ab", 32), map[string]any{"withdrawalRoot": "0x" + strings.Repeat("ab", 32)}},
		{"/stakers/" + mixed + "/withdrawals/queued_withdrawable?skip=1", map[string]any{"stakerAddress": lower, "status": "queued_withdrawable", "skip": 1, "take": 12}},
		{"/stakers/" + mixed + "/deposits", map[string]any{"stakerAddress": lower, "skip": 0, "take": 12}},
		{"/deposits?tokenAddress=" + mixed + "&strategyAddress=" + mixed + "&stakerAddress=" + mixed + "&skip=4",
			map[string]any{"tokenAddress": lower, "strategyAddress": lower, "stakerAddress": lower, "skip": 4, "take": 12}},
		{"/avs/" + mixed + "/stakers?withTvl=true&updatedSince=2025-01-01", map[string]any{"address": lower, "withTvl": true, "updatedSince": "2025-01-01T00:00:00Z", "skip": 0, "take": 12}},
		{"/rewards/strategies", map[string]any{}},
		{"/stakers/" + mixed + "?withTvl=true&withRewards=true", map[string]any{"address": lower, "withTvl": true}},
		{"/stakers?withTvl=true&updatedSince=2025-01-01&take=5", map[string]any{"withTvl": true, "updatedSince": "2025-01-01T00:00:00Z", "skip": 0, "take": 5}},
		{"/avs/" + mixed + "/operator-sets", map[string]any{"address": lower, "withTvl": false, "skip": 0, "take": 12}},
		{"/avs/" + mixed + "/operator-sets?withTvl=true&skip=3&take=4", map[string]any{"address": lower, "withTvl": true, "skip": 3, "take": 4}},
		{"/operator-sets/" + mixed + "/4294967295?withTvl=true&take=50", map[string]any{"avs": lower, "id": 4294967295, "withTvl": true, "skip": 0, "take": 50}},
		{"/operator-sets/" + mixed + "/0", map[string]any{"avs": lower, "id": 0, "withTvl": false, "skip": 0, "take": 12}},
		{"/operators/" + mixed + "/allocations?skip=2", map[string]any{"address": lower, "skip": 2, "take": 12}},
		{"/operators/" + mixed + "/rewards", map[string]any{"address": lower}},
		{"/slashings", map[string]any{"skip": 0, "take": 12}},
		{"/events/delegation?type=DELEGATION&strategyAddress=" + mixed + "&startAt=2025-01-01",
			map[string]any{"subject": zeroAddress, "checkOperator": false, "type": "DELEGATION", "strategyAddress": lower, "startAt": "2025-01-01T00:00:00Z", "withTokenData": false, "withEthValue": false, "skip": 0, "take": 12}},
		{"/operators/" + mixed + "/events/delegation?stakerAddress=" + mixed + "&withTokenData=true",
			map[string]any{"subject": lower, "checkOperator": true, "operatorAddress": lower, "stakerAddress": lower, "withTokenData": true, "withEthValue": false, "skip": 0, "take": 12}},
		{"/events/deposit?tokenAddress=" + mixed + "&strategyAddress=" + mixed + "&txHash=" + hash + "&withEthValue=true",
			map[string]any{"tokenAddress": lower, "strategyAddress": lower, "txHash": strings.ToLower(hash), "withTokenData": false, "withEthValue": true, "skip": 0, "take": 12}},
		{"/stakers/" + mixed + "/events/deposit?endAt=2025-02-01T10:00:00%2B02:00",
			map[string]any{"stakerAddress": lower, "endAt": "2025-02-01T08:00:00Z", "withTokenData": false, "withEthValue": false, "skip": 0, "take": 12}},
		{"/events/withdrawal?type=WITHDRAWAL_COMPLETED&withdrawalRoot=" + hash + "&delegatedTo=" + mixed + "&withdrawer=" + mixed,
			map[string]any{"type": "WITHDRAWAL_COMPLETED", "withdrawalRoot": strings.ToLower(hash), "delegatedTo": lower, "withdrawer": lower,
				"withTokenData": false, "withEthValue": false, "skip": 0, "take": 12}},
		{"/stakers/" + mixed + "/events/withdrawal?skip=3",
			map[string]any{"stakerAddress": lower, "withTokenData": false, "withEthValue": false, "skip": 3, "take": 12}},
		{"/events/rewards?rewardsSubmissionHash=" + hash + "&rewardsSubmissionToken=" + mixed + "&withIndividualAmount=true",
			map[string]any{"subject": zeroAddress, "checkAvs": false, "rewardsSubmissionHash": strings.ToLower(hash), "rewardsSubmissionToken": lower,
				"withIndividualAmount": true, "withEthValue": false, "withAmountEthValue": false, "skip": 0, "take": 12}},
		{"/avs/" + mixed + "/events/rewards?withIndividualAmount=true&withEthValue=true",
			map[string]any{"subject": lower, "checkAvs": true, "avsAddress": lower, "withIndividualAmount": true, "withEthValue": true, "withAmountEthValue": true, "skip": 0, "take": 12}},
		{"/events/registration-status?status=DEREGISTERED", map[string]any{"subject": zeroAddress, "checkAvs": false, "checkOperator": false, "status": "DEREGISTERED", "skip": 0, "take": 12}},
		{"/avs/" + mixed + "/events/registration-status?operatorAddress=" + mixed,
			map[string]any{"subject": lower, "checkAvs": true, "checkOperator": false, "avsAddress": lower, "operatorAddress": lower, "skip": 0, "take": 12}},
		{"/operators/" + mixed + "/events/registration-status?avsAddress=" + mixed + "&status=REGISTERED",
			map[string]any{"subject": lower, "checkAvs": false, "checkOperator": true, "operatorAddress": lower, "avsAddress": lower, "status": "REGISTERED", "skip": 0, "take": 12}},
		{"/slashings?avsAddress=" + mixed + "&operatorAddress=" + mixed + "&strategyAddress=" + mixed + "&startAt=2025-01-01&endAt=2025-02-01T10:00:00%2B02:00&take=5",
			map[string]any{"avsAddress": lower, "operatorAddress": lower, "strategyAddress": lower, "startAt": "2025-01-01T00:00:00Z",
				"endAt": "2025-02-01T08:00:00Z", "skip": 0, "take": 5}},
	} {
		exec := &fakeExecutor{}
		serveFake(t, exec, http.MethodGet, tc.target, withKey)
		calls := exec.Calls()
		if len(calls) != 1 {
			t.Errorf("GET %s ran %d operations, want 1", tc.target, len(calls))
			continue
		}
		if got, want := fmt.Sprint(calls[0].Vars), fmt.Sprint(tc.want); got != want {
			t.Errorf("GET %s variables\n got %s\nwant %s", tc.target, got, want)
		}
	}
}

func TestNullResultIsNotFound(t *testing.T) {
	const addr = "0x00000000000000000000000000000000000000aa"
	exec := &fakeExecutor{answer: func(c call) (string, error) {
		switch {
		case strings.Contains(c.Query, "metrics"):
			return `{"metrics":{"result":null}}`, nil
		case strings.Contains(c.Query, "operatorSet("):
			return `{"result":null}`, nil
		case strings.Contains(c.Query, "operator(address"):
			return `{"operator":null}`, nil
		}
		return `{"avs":null}`, nil
	}}
	for _, target := range []string{"/avs/" + addr + "/operators", "/avs/" + addr + "/rewards", "/metrics/tvl/restaking/" + addr,
		"/avs/" + addr + "/operator-sets", "/operator-sets/" + addr + "/7", "/operators/" + addr + "/allocations"} {
		r := serveFake(t, exec, http.MethodGet, target, withKey)
		code, msg := errorBody(t, r)
		if r.Status != http.StatusNotFound || code != "not_found" || !strings.Contains(msg, addr) {
			t.Errorf("GET %s = %d %s", target, r.Status, r.Body)
		}
		validateResponse(t, target, r)
	}
}

func TestOperationErrors(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{fmt.Errorf("%w: endAt is before startAt", derrors.InvalidArgument), http.StatusUnprocessableEntity, "unprocessable_entity"},
		{&graph.Error{Code: "unprocessable_entity", Message: "invalid argument: endAt is before startAt", Path: "staker.result"}, http.StatusUnprocessableEntity, "unprocessable_entity"},
		{&graph.Error{Code: "not_found", Message: "not found: gone", Path: "result"}, http.StatusNotFound, "not_found"},
		{fmt.Errorf("query: %w: connection refused", derrors.Unavailable), http.StatusServiceUnavailable, "internal_server_error"},
		{fmt.Errorf("query: boom"), http.StatusInternalServerError, "internal_server_error"},
	} {
		exec := &fakeExecutor{answer: func(call) (string, error) { return "", tc.err }}
		target := "/avs/0x00000000000000000000000000000000000000aa/operators"
		r := serveFake(t, exec, http.MethodGet, target, withKey)
		code, msg := errorBody(t, r)
		if r.Status != tc.status || code != tc.code {
			t.Errorf("%v: %d %s", tc.err, r.Status, r.Body)
		}
		if strings.Contains(msg, "result") {
			t.Errorf("%v: message %q shows the operation's path", tc.err, msg)
		}
		validateResponse(t, target, r)
	}
}

func TestRewardsFetchesEveryPage(t *testing.T) {
	const total = rewardsPageSize + 5
	exec := &fakeExecutor{answer: func(c call) (string, error) {
		skip, take := c.Vars["skip"].(int), c.Vars["take"].(int)
		var subs []string
		for i := skip; i < total && i < skip+take; i++ {
			subs = append(subs, fmt.Sprintf(`{"rewardsSubmissionHash":"0x%064x","startTimestamp":1,"duration":2,"totalAmount":"3","tokenAddress":"0x%040x","strategies":[],"operators":[]}`, i, 1))
		}
		return fmt.Sprintf(`{"avs":{"result":{"address":"0x%040x","submissions":[%s],"totalRewards":"1","totalSubmissions":%d,"rewardTokens":[],"rewardStrategies":[]}}}`,
			0xaa, strings.Join(subs, ","), total), nil
	}}
	target := "/avs/0x00000000000000000000000000000000000000aa/rewards"
	r := serveFake(t, exec, http.MethodGet, target, withKey)
	var body struct {
		Submissions []struct{ RewardsSubmissionHash string }
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Submissions) != total || body.Submissions[total-1].RewardsSubmissionHash != fmt.Sprintf("0x%064x", total-1) {
		t.Errorf("%d submissions, want %d in order", len(body.Submissions), total)
	}
	if n := len(exec.Calls()); n != 2 {
		t.Errorf("%d operations, want 2 pages", n)
	}
	validateResponse(t, target, r)
}

func TestReshaping(t *testing.T) {
	const addr = "0x00000000000000000000000000000000000000aa"
	exec := &fakeExecutor{answer: func(c call) (string, error) {
		if strings.Contains(c.Query, "avsAddresses") {
			return `{"result":{"data":[{"address":"` + addr + `","name":"A","logo":null},{"address":"` + addr + `","name":"B","logo":"https://x/l.png"}],"meta":{"total":2,"skip":0,"take":12}}}`, nil
		}
		return `{"staker":{"result":{"data":[
			{"tx":"0x` + strings.Repeat("1", 64) + `","blockNumber":5,"blockTime":"2024-04-11T08:31:11.000Z","type":"DELEGATION","args":{"operator":"` + addr + `","strategy":null,"shares":null},"underlyingToken":null,"underlyingValue":null,"ethValue":null},
			{"tx":"0x` + strings.Repeat("2", 64) + `","blockNumber":6,"blockTime":"2024-04-11T08:31:23.000Z","type":"SHARES_INCREASED","args":{"operator":"` + addr + `","strategy":"` + addr + `","shares":12345678901234567890},"underlyingToken":"` + addr + `","underlyingValue":12.5,"ethValue":13}
		],"meta":{"total":2,"skip":0,"take":12}}}}`, nil
	}}
	target := "/avs/addresses"
	r := serveFake(t, exec, http.MethodGet, target, withKey)
	if !strings.Contains(string(r.Body), `"logo":""`) || !strings.Contains(string(r.Body), `"logo":"https://x/l.png"`) {
		t.Errorf("addresses: %s", r.Body)
	}
	validateResponse(t, target, r)

	target = "/stakers/" + addr + "/events/delegation?withTokenData=true&withEthValue=true"
	r = serveFake(t, exec, http.MethodGet, target, withKey)
	var body struct{ Data []map[string]any }
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Data) != 2 {
		t.Fatalf("events: %s", r.Body)
	}
	if _, ok := body.Data[0]["underlyingToken"]; ok || fmt.Sprint(body.Data[0]["args"]) != "map[operator:"+addr+"]" {
		t.Errorf("DELEGATION event keeps null fields: %v", body.Data[0])
	}
	if _, ok := body.Data[1]["ethValue"]; !ok || !strings.Contains(string(r.Body), `"shares":12345678901234567890`) {
		t.Errorf("SHARES_INCREASED event lost fields or precision: %s", r.Body)
	}
	validateResponse(t, target, r)
}
