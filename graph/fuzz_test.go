package graph_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/demo"
	"github.com/stakegraph/stakegraph/graph"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// The fuzz targets of this file check GraphQL argument handling: whatever
// the arguments or the request body, the answer is a GraphQL response whose
// errors carry one of the contract's client codes, never a 5xx status or
// internal_server_error. Their seed corpora (testdata/fuzz) run as
// ordinary tests; run one for longer with, for example,
//
//	go test ./graph -run '^$' -fuzz '^FuzzGraphQLArguments$' -fuzztime 2m

// fuzzNow is the end of the fuzz data and the handler's clock.
var fuzzNow = time.Date(2025, 3, 15, 12, 0, 0, 0, time.UTC)

// fuzzHandler returns the GraphQL handler over a small generated world, and
// an address of each kind that exists in it.
func fuzzHandler(t testing.TB) (http.Handler, map[string]string) {
	t.Helper()
	db := storetest.Template(t, "graph_fuzz", func(ctx context.Context, db *store.DB) error {
		sc := demo.BenchScale
		sc.Days, sc.AVS, sc.Operators, sc.Stakers, sc.RewardsSubmissions = 40, 4, 15, 300, 30
		opts := demo.BenchOptions{Options: demo.Options{Now: fuzzNow, Seed: 5, Network: chain.Networks["mainnet"]}, Scale: sc}
		return demo.SeedBench(ctx, db, opts, nil)
	})
	ctx := context.Background()
	known := map[string]string{"strategy": chain.BeaconStrategy}
	avs, err := db.ListAVS(ctx, store.AVSFilter{}, store.Sort{}, store.Page{Take: 1})
	if err != nil || len(avs) == 0 {
		t.Fatalf("no AVS in the fuzz data: %v", err)
	}
	known["avs"] = avs[0].Address
	ws, err := db.ListWithdrawals(ctx, store.WithdrawalFilter{}, store.Page{Take: 1})
	if err != nil || len(ws) == 0 {
		t.Fatalf("no withdrawal in the fuzz data: %v", err)
	}
	known["staker"], known["operator"], known["withdrawal"] = ws[0].StakerAddress, ws[0].DelegatedTo, ws[0].WithdrawalRoot
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	return graph.NewHandler(db, graph.Options{Now: func() time.Time { return fuzzNow }, Logger: logger}), known
}

// clientCodes are the error codes a GraphQL response may carry for a
// request a client got wrong.
var clientCodes = map[string]bool{"bad_request": true, "unprocessable_entity": true, "not_found": true}

// checkGraphQLResponse fails t when the response to body is a 5xx, not a
// GraphQL response, or carries an error code other than a client one.
func checkGraphQLResponse(t *testing.T, h http.Handler, body []byte) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code >= 500 {
		t.Fatalf("status %d for %.500s: %.500s", rec.Code, body, rec.Body.Bytes())
	}
	var resp struct {
		Data   json.RawMessage
		Errors []struct {
			Message    string
			Extensions struct{ Code string }
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		t.Fatalf("status %d, body is not JSON (%v) for %.500s: %.500s", rec.Code, err, body, rec.Body.Bytes())
	}
	for _, e := range resp.Errors {
		if !clientCodes[e.Extensions.Code] {
			t.Fatalf("error %q with code %q for %.500s", e.Message, e.Extensions.Code, body)
		}
	}
	if rec.Code != http.StatusOK && len(resp.Errors) == 0 {
		t.Fatalf("status %d without errors for %.500s", rec.Code, body)
	}
}

// argumentQueries use every argument of the schema's lists and lookups,
// each through a variable. $text, $skip, $take, $startAt, $endAt and $addr
// come from the fuzzer; the others are set from its flags.
var argumentQueries = []string{
	`query($text: String, $mode: SearchMode, $order: SortOrder, $skip: Int, $take: Int, $inv: Boolean) {
	  avsList(searchByText: $text, searchMode: $mode, sortByTvl: $order, includeInvisible: $inv, skip: $skip, take: $take) {
	    data { address tvl { tvl } } meta { total } }
	  avsAddresses(searchByText: $text, searchMode: $mode, skip: $skip, take: $take) { data { address } meta { total } }
	}`,
	`query($text: String, $mode: SearchMode, $order: SortOrder, $skip: Int, $take: Int) {
	  a: avsList(sortByApy: $order, skip: $skip, take: $take) { meta { total } }
	  b: avsList(sortByTotalStakers: $order, sortByTotalOperators: $order, skip: $skip, take: $take) { meta { total } }
	  operators(searchByText: $text, searchMode: $mode, sortByTotalAvs: $order, skip: $skip, take: $take) {
	    data { address avsRegistrations { isActive } } meta { total } }
	}`,
	`query($addr: Address!, $text: String, $mode: SearchMode, $order: SortOrder, $skip: Int, $take: Int, $active: Boolean) {
	  avs(address: $addr) {
	    operators(searchByText: $text, searchMode: $mode, isActive: $active, sortByTvl: $order, skip: $skip, take: $take) {
	      data { address tvl { tvl } } meta { total } }
	    stakers(skip: $skip, take: $take) { data { address } meta { total } }
	    rewards { submissions(skip: $skip, take: $take) { rewardsSubmissionHash } totalRewards }
	  }
	}`,
	`query($addr: Address!, $text: String, $type: DelegationEventType, $other: Address, $startAt: String, $endAt: String, $skip: Int, $take: Int, $status: WithdrawalStatus) {
	  staker(address: $addr) {
	    delegationEvents(txHash: $text, type: $type, strategyAddress: $other, operatorAddress: $other, startAt: $startAt, endAt: $endAt, skip: $skip, take: $take) {
	      data { tx ethValue } meta { total } }
	    withdrawals(status: $status, skip: $skip, take: $take) { data { withdrawalRoot } meta { total } }
	    deposits(skip: $skip, take: $take) { data { tx } meta { total } }
	  }
	}`,
	`query($addr: Address!, $text: String, $type: DelegationEventType, $other: Address, $startAt: String, $endAt: String, $skip: Int, $take: Int) {
	  operator(address: $addr) {
	    delegationEvents(txHash: $text, type: $type, strategyAddress: $other, stakerAddress: $other, startAt: $startAt, endAt: $endAt, skip: $skip, take: $take) {
	      data { tx } meta { total } }
	    stakers(skip: $skip, take: $take) { data { address } meta { total } }
	  }
	}`,
	`query($addr: Address, $other: Address, $status: WithdrawalStatus, $skip: Int, $take: Int) {
	  withdrawals(stakerAddress: $addr, delegatedTo: $other, strategyAddress: $other, status: $status, skip: $skip, take: $take) {
	    data { withdrawalRoot shares { shares } } meta { total } }
	}`,
	`query($addr: Address!, $freq: String, $variant: CountVariant, $startAt: String, $endAt: String) {
	  metrics {
	    strategyTvl(strategyAddress: $addr) { tvl change24h { value } }
	    stakerCountHistory(frequency: $freq, variant: $variant, startAt: $startAt, endAt: $endAt) { data { value } }
	  }
	}`,
	`query($text: String!) {
	  withdrawal(withdrawalRoot: $text) { withdrawalRoot }
	  rewardsSubmission(rewardsSubmissionHash: $text) { rewardsSubmissionHash }
	}`,
	`query($addr: Address!, $id: Int!, $skip: Int, $take: Int, $active: Boolean) {
	  operatorSet(avs: $addr, id: $id) { id allocatedStake { shares } }
	  operatorSets(avs: $addr, skip: $skip, take: $take) { data { id } meta { total } }
	  avs(address: $addr) {
	    operatorSets(skip: $skip, take: $take) {
	      data {
	        operators(isActive: $active, skip: $skip, take: $take) { data { allocations { allocatedShares } } meta { total } }
	        slashings(skip: $skip, take: $take) { data { description } meta { total } }
	        rewardsSubmissions(skip: $skip, take: $take) { data { operators { amount } } meta { total } }
	      }
	      meta { total }
	    }
	  }
	}`,
	`query($addr: Address!, $skip: Int, $take: Int, $active: Boolean) {
	  operator(address: $addr) {
	    maxMagnitudes { maxMagnitude }
	    allocations(skip: $skip, take: $take) { data { allocatedShares } meta { total } }
	    operatorSets(isActive: $active, skip: $skip, take: $take) { data { operatorSetId } meta { total } }
	    slashings(skip: $skip, take: $take) { data { description } meta { total } }
	  }
	}`,
	`query($addr: Address, $other: Address, $startAt: String, $endAt: String, $skip: Int, $take: Int) {
	  slashings(avs: $addr, operator: $other, strategy: $other, startAt: $startAt, endAt: $endAt, skip: $skip, take: $take) {
	    data { strategies { sharesSlashed } } meta { total } }
	  withdrawals(stakerAddress: $addr, skip: $skip, take: $take) {
	    data { payoutShares { shares } scaledShares { scaledShares } } meta { total } }
	}`,
}

// FuzzGraphQLArguments runs each argument query with fuzzed variables. An
// empty addr stands for an address of the right kind that exists.
func FuzzGraphQLArguments(f *testing.F) {
	h, known := fuzzHandler(f)
	kinds := []string{"", "", "avs", "staker", "operator", "staker", "strategy", "", "avs", "operator", ""}
	f.Fuzz(func(t *testing.T, query uint8, flags uint8, text string, skip, take int64, startAt, endAt, addr string) {
		i := int(query) % len(argumentQueries)
		if addr == "" {
			addr = known[kinds[i]]
		}
		vars := map[string]any{
			"text": text, "skip": skip, "take": take, "startAt": startAt, "endAt": endAt, "addr": addr, "id": skip,
			"mode":    []string{"contains", "startsWith"}[flags&1],
			"order":   []string{"asc", "desc"}[flags>>1&1],
			"inv":     flags&4 != 0,
			"active":  flags&8 != 0,
			"type":    []string{"DELEGATION", "UNDELEGATION", "SHARES_INCREASED", "SHARES_DECREASED"}[flags>>4&3],
			"status":  []string{"queued", "queued_withdrawable", "completed", "pending"}[flags>>6&3],
			"other":   addr,
			"freq":    text,
			"variant": []string{"discrete", "cumulative"}[flags>>2&1],
		}
		if flags&0x80 != 0 { // leave the optional ones out
			for _, name := range []string{"text", "skip", "take", "startAt", "endAt", "other"} {
				delete(vars, name)
			}
		}
		body, err := json.Marshal(map[string]any{"query": argumentQueries[i], "variables": vars})
		if err != nil {
			t.Fatal(err)
		}
		checkGraphQLResponse(t, h, body)
	})
}

// FuzzGraphQLRequest posts arbitrary request bodies: malformed JSON and
// documents, unknown fields, deep or costly operations, wrong variables.
func FuzzGraphQLRequest(f *testing.F) {
	h, _ := fuzzHandler(f)
	f.Fuzz(func(t *testing.T, body string) {
		checkGraphQLResponse(t, h, []byte(body))
	})
}
