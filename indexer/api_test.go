package indexer

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stakegraph/stakegraph/graph"
	"github.com/stakegraph/stakegraph/rest"
	"github.com/stakegraph/stakegraph/store/storetest"
)

// TestIndexedChainThroughRESTAndGraphQL indexes the scripted history and
// reads it back the way clients do: through the GraphQL endpoint and the
// REST routes.
func TestIndexedChainThroughRESTAndGraphQL(t *testing.T) {
	w := newWorld(t)
	w.script()
	now := time.Now().Add(time.Hour).Truncate(time.Second)
	db := storetest.New(t)
	w.index(db, w.config(now))

	opts := graph.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return now }}
	gql := httptest.NewServer(graph.NewHandler(db, opts))
	defer gql.Close()
	api := httptest.NewServer(rest.NewHandler(rest.Config{
		Executor:     graph.NewExecutor(db, opts),
		Authenticate: func(h http.Handler) http.Handler { return h },
		Version:      "test",
	}))
	defer api.Close()

	// GraphQL.
	body, _ := json.Marshal(map[string]any{
		"query": `query($avs: Address!, $op: Address!) {
			avs(address: $avs) { metadataName metadataWebsite totalOperators restakeableStrategies }
			operator(address: $op) { metadataName totalStakers totalAvs }
		}`,
		"variables": map[string]any{"avs": lowerHex(w.avs1.Address), "op": lowerHex(w.op1)},
	})
	resp, err := http.Post(gql.URL, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Data struct {
			AVS struct {
				MetadataName          string   `json:"metadataName"`
				MetadataWebsite       string   `json:"metadataWebsite"`
				TotalOperators        int      `json:"totalOperators"`
				RestakeableStrategies []string `json:"restakeableStrategies"`
			} `json:"avs"`
			Operator struct {
				MetadataName string `json:"metadataName"`
				TotalStakers int    `json:"totalStakers"`
				TotalAvs     int    `json:"totalAvs"`
			} `json:"operator"`
		} `json:"data"`
		Errors []json.RawMessage `json:"errors"`
	}
	decodeBody(t, resp, &out)
	if len(out.Errors) > 0 {
		t.Fatalf("GraphQL errors: %s", out.Errors)
	}
	a, op := out.Data.AVS, out.Data.Operator
	if a.MetadataName != "AVS One" || a.MetadataWebsite != "https://avs1.example" || a.TotalOperators != 1 ||
		len(a.RestakeableStrategies) != 2 {
		t.Errorf("GraphQL avs = %+v", a)
	}
	if op.MetadataName != "Operator One" || op.TotalStakers != 1 || op.TotalAvs != 1 {
		t.Errorf("GraphQL operator = %+v", op)
	}

	// REST.
	var metrics struct {
		TotalAVS       int     `json:"totalAVS"`
		TotalOperators int     `json:"totalOperators"`
		TotalStakers   int     `json:"totalStakers"`
		TVLBeaconChain float64 `json:"tvlBeaconChain"`
	}
	get(t, api.URL+"/metrics", &metrics)
	if metrics.TotalAVS != 2 || metrics.TotalOperators != 2 || metrics.TotalStakers != 3 || metrics.TVLBeaconChain != 32 {
		t.Errorf("GET /metrics = %+v", metrics)
	}
	var events struct {
		Data []struct {
			Type string `json:"type"`
			Tx   string `json:"tx"`
		} `json:"data"`
	}
	get(t, api.URL+"/stakers/"+lowerHex(w.staker1)+"/events/delegation", &events)
	types := map[string]int{}
	for _, e := range events.Data {
		types[e.Type]++
		if !strings.HasPrefix(e.Tx, "0x") || len(e.Tx) != 66 {
			t.Errorf("event tx %q", e.Tx)
		}
	}
	if types["DELEGATION"] != 1 || types["SHARES_INCREASED"] != 2 || types["SHARES_DECREASED"] != 1 || len(events.Data) != 4 {
		t.Errorf("GET /stakers/{staker1}/events/delegation types = %v", types)
	}
	var withdrawals struct {
		Data []struct {
			WithdrawalRoot string `json:"withdrawalRoot"`
			IsCompleted    bool   `json:"isCompleted"`
		} `json:"data"`
	}
	get(t, api.URL+"/withdrawals", &withdrawals)
	completed := 0
	for _, wd := range withdrawals.Data {
		if wd.IsCompleted {
			completed++
		}
	}
	if len(withdrawals.Data) != 2 || completed != 1 {
		t.Errorf("GET /withdrawals = %+v", withdrawals.Data)
	}
}

func get(t *testing.T, url string, dest any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	decodeBody(t, resp, dest)
}

func decodeBody(t *testing.T, resp *http.Response, dest any) {
	t.Helper()
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s: %s", resp.Request.URL, resp.Status, raw)
	}
	if err := json.Unmarshal(raw, dest); err != nil {
		t.Fatalf("%s: %v: %s", resp.Request.URL, err, raw)
	}
}
