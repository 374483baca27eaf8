package indexer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/store"
	"github.com/stakegraph/stakegraph/store/storetest"
)

func quietFetcher(opts MetadataOptions) *MetadataFetcher {
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return NewMetadataFetcher(opts)
}

func TestMetadataFetcher(t *testing.T) {
	var flaky atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ipfs/QmDoc/meta.json":
			fmt.Fprint(w, `{"name":"From IPFS","twitter":"https://x.com/ipfs"}`)
		case "/flaky.json":
			if flaky.Add(1) < 3 {
				http.Error(w, "try later", http.StatusTooManyRequests)
				return
			}
			fmt.Fprint(w, `{"name":"Third time"}`)
		case "/missing.json":
			flaky.Add(100)
			http.NotFound(w, r)
		case "/huge.json":
			fmt.Fprintf(w, `{"name":"%s"}`, strings.Repeat("x", 4096))
		case "/slow.json":
			time.Sleep(500 * time.Millisecond)
			fmt.Fprint(w, `{"name":"slow"}`)
		case "/array.json":
			fmt.Fprint(w, `["not", "an", "object"]`)
		case "/typed.json":
			fmt.Fprint(w, `{"name":"Typed","website":7,"logo":null,"description":"  padded  "}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	f := quietFetcher(MetadataOptions{
		IPFSGateway: srv.URL + "/ipfs", AllowPrivateAddresses: true, Timeout: 200 * time.Millisecond,
		MaxBytes: 1024, Attempts: 3, Backoff: time.Millisecond,
	})
	pos := chain.Position{BlockNumber: 5, LogIndex: 2}
	update := func(uri string) chain.MetadataURIUpdated {
		return chain.MetadataURIUpdated{Position: pos, Subject: chain.SubjectAVS, Address: "0xABCDEFabcdefABCDEFabcdefABCDEFabcdefABCD", URI: uri}
	}
	ctx := context.Background()

	doc, err := f.Fetch(ctx, update("ipfs://QmDoc/meta.json"))
	if err != nil || doc.Name != "From IPFS" || doc.Twitter == nil || *doc.Twitter != "https://x.com/ipfs" ||
		doc.Position != pos || doc.Address != "0xabcdefabcdefabcdefabcdefabcdefabcdefabcd" || doc.Subject != chain.SubjectAVS {
		t.Errorf("ipfs document = %+v, %v", doc, err)
	}
	if doc, err := f.Fetch(ctx, update(srv.URL+"/flaky.json")); err != nil || doc.Name != "Third time" {
		t.Errorf("a document behind two 429s = %+v, %v (want retried)", doc, err)
	}
	flaky.Store(0)
	if _, err := f.Fetch(ctx, update(srv.URL+"/missing.json")); err == nil || flaky.Load() != 100 {
		t.Errorf("404: err %v after %d tries; want an error after one try", err, flaky.Load()/100)
	}
	if _, err := f.Fetch(ctx, update(srv.URL+"/huge.json")); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("oversized document: err %v, want the size limit", err)
	}
	if _, err := f.Fetch(ctx, update(srv.URL+"/slow.json")); err == nil {
		t.Error("a document slower than the timeout was accepted")
	}
	if _, err := f.Fetch(ctx, update(srv.URL+"/array.json")); err == nil {
		t.Error("a JSON array was accepted as a document")
	}
	doc, err = f.Fetch(ctx, update(srv.URL+"/typed.json"))
	if err != nil || doc.Name != "Typed" || doc.Website != nil || doc.Logo != nil || doc.Description == nil || *doc.Description != "padded" {
		t.Errorf("typed document = %+v, %v (non-strings dropped, strings trimmed)", doc, err)
	}
	for _, bad := range []string{"", "ftp://example.org/x.json", "ipfs://", "https://", "javascript:alert(1)"} {
		if _, err := f.Fetch(ctx, update(bad)); err == nil {
			t.Errorf("URI %q accepted", bad)
		}
	}

	// By default the fetcher refuses to reach private and loopback
	// addresses: a metadata URI is chosen by anyone on chain.
	strict := quietFetcher(MetadataOptions{Timeout: time.Second, Attempts: 3, Backoff: time.Millisecond})
	if _, err := strict.Fetch(ctx, update(srv.URL+"/typed.json")); !errors.Is(err, errPrivateAddress) {
		t.Errorf("loopback URI with the default fetcher: err %v, want refusal", err)
	}
}

func TestResolveURI(t *testing.T) {
	f := quietFetcher(MetadataOptions{IPFSGateway: "https://gw.example/ipfs"})
	for in, want := range map[string]string{
		"ipfs://QmX":                      "https://gw.example/ipfs/QmX",
		"ipfs://ipfs/QmX/a.json":          "https://gw.example/ipfs/QmX/a.json",
		" https://example.org/meta.json ": "https://example.org/meta.json",
		"http://example.org/m.json?x=1":   "http://example.org/m.json?x=1",
	} {
		got, err := f.ResolveURI(in)
		if err != nil || got != want {
			t.Errorf("ResolveURI(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestPriceFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "prices.json")
	if err := os.WriteFile(path, []byte(`{"0xAE7ab96520DE3A18E5e111B5EaAb095312D7fE84": "0.9995", "0xae78736cd615f374d3085123a210448e74fc6393": 1.12}`), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := PriceFile{Path: path}.ETHPrices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got["0xae7ab96520de3a18e5e111b5eaab095312d7fe84"] != "0.9995" || got["0xae78736cd615f374d3085123a210448e74fc6393"] != "1.12" || len(got) != 2 {
		t.Errorf("prices = %v", got)
	}
	for _, bad := range []string{`[]`, `{"stETH": "1"}`, `{"0xae7ab96520de3a18e5e111b5eaab095312d7fe84": "-1"}`,
		`{"0xae7ab96520de3a18e5e111b5eaab095312d7fe84": "cheap"}`, `{`} {
		if _, err := ParsePrices([]byte(bad)); err == nil {
			t.Errorf("price document %s accepted", bad)
		}
	}
	if _, err := (PriceFile{Path: filepath.Join(dir, "none.json")}).ETHPrices(context.Background()); err == nil {
		t.Error("a missing price file gave no error")
	}
}

func TestSupplyFile(t *testing.T) {
	dir := t.TempDir()
	for doc, want := range map[string]string{`{"ethSupply": "120712345.68"}`: "120712345.68", `{"ethSupply": 120712345}`: "120712345"} {
		path := filepath.Join(dir, "supply.json")
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := SupplyFile{Path: path}.ETHSupply(context.Background())
		if err != nil || got != want {
			t.Errorf("supply of %s = %q, %v; want %q", doc, got, err, want)
		}
	}
	for _, bad := range []string{`{}`, `[]`, `{"ethSupply": "0"}`, `{"ethSupply": "-5"}`, `{"ethSupply": "lots"}`, `{`, `{"supply": "1"}`} {
		if _, err := ParseSupply([]byte(bad)); err == nil {
			t.Errorf("supply document %s accepted", bad)
		}
	}
	if _, err := (SupplyFile{Path: filepath.Join(dir, "none.json")}).ETHSupply(context.Background()); err == nil {
		t.Error("a missing supply file gave no error")
	}
}

func TestNetworkFile(t *testing.T) {
	base := chain.Networks["holesky"]
	n, err := ApplyNetworkFile([]byte(`{
		"chainId": 31337, "startBlock": 5,
		"contracts": {"delegationManager": "0x1111111111111111111111111111111111111111"},
		"strategies": [{"symbol": "X", "address": "0x2222222222222222222222222222222222222222", "kind": "eigen"},
		               {"symbol": "Beacon", "address": "0xbeaC0eeEeeeeEEeEeEEEEeeEEeEeeeEeeEEBEaC0", "kind": "beacon", "decimals": 18}]
	}`), base)
	if err != nil {
		t.Fatal(err)
	}
	if n.ChainID != 31337 || n.StartBlock != 5 || n.Contracts.DelegationManager != "0x1111111111111111111111111111111111111111" ||
		n.Contracts.AVSDirectory != base.Contracts.AVSDirectory || len(n.Strategies) != 2 ||
		n.Strategies[0].Kind != chain.KindEigen || n.Strategies[0].Decimals != 18 || n.Strategies[1].Address != chain.BeaconStrategy {
		t.Errorf("network = %+v", n)
	}
	if n.Name != "holesky" {
		t.Errorf("the override renamed the network to %q", n.Name)
	}
	for _, bad := range []string{
		`{"contracts": {"delegationManager": "0x12"}}`,
		`{"strategies": [{"symbol": "X"}]}`,
		`{"strategies": [{"address": "0x2222222222222222222222222222222222222222", "kind": "gold"}]}`,
		`{"chainIdentifier": 1}`,
	} {
		if _, err := ApplyNetworkFile([]byte(bad), base); err == nil {
			t.Errorf("network file %s accepted", bad)
		}
	}
}

type codedError struct {
	code int
	msg  string
}

func (e codedError) Error() string  { return e.msg }
func (e codedError) ErrorCode() int { return e.code }

func TestClassifyNodeErrors(t *testing.T) {
	for _, c := range []struct {
		method string
		err    error
		want   error // nil: retryable
	}{
		{"eth_getLogs", codedError{-32005, "query returned more than 10000 results"}, ErrRangeTooLarge},
		{"eth_getLogs", codedError{-32602, "eth_getLogs is limited to a 10,000 block range"}, ErrRangeTooLarge},
		{"eth_getLogs", rpc.HTTPError{StatusCode: 413, Status: "413 Request Entity Too Large"}, ErrRangeTooLarge},
		{"eth_getLogs", fmt.Errorf("%w: i/o timeout", context.DeadlineExceeded), ErrRangeTooLarge},
		{"eth_getLogs", rpc.HTTPError{StatusCode: 429, Status: "429 Too Many Requests"}, nil},
		{"eth_getLogs", rpc.HTTPError{StatusCode: 503, Status: "503 Service Unavailable"}, nil},
		{"eth_getBlockByNumber", rpc.HTTPError{StatusCode: 401, Status: "401 Unauthorized"}, errPermanent},
		{"eth_getBlockByNumber", errors.New("invalid character '<' looking for beginning of value"), nil},
		{"eth_getBlockByNumber", codedError{-32000, "header not found"}, nil},
		{"eth_call", codedError{3, "execution reverted"}, ErrReverted},
		{"eth_call", codedError{-32601, "the method eth_call does not exist"}, errPermanent},
		{"eth_call", fmt.Errorf("%w: timeout", context.DeadlineExceeded), nil},
		{"eth_call", codedError{-32000, "missing trie node 1234abcd (path ) state 0x1234 is not available"}, errPermanent},
		{"eth_getLogs", responseTooLarge(1 << 20), ErrRangeTooLarge},
		{"eth_getLogs", errors.New("websocket: read limit exceeded"), ErrRangeTooLarge},
		{"eth_blockNumber", responseTooLarge(1 << 20), errPermanent},
		{"eth_getBlockByNumber", fmt.Errorf("post: %w", responseTooLarge(1<<20)), errPermanent},
		{"eth_call", errors.New("websocket: read limit exceeded"), errPermanent},
	} {
		got := classify(c.method, c.err)
		for _, sentinel := range []error{ErrRangeTooLarge, ErrReverted, errPermanent} {
			if errors.Is(got, sentinel) != (sentinel == c.want) {
				t.Errorf("classify(%s, %v) = %v; want class %v", c.method, c.err, got, c.want)
			}
		}
	}
}

func TestProgressLine(t *testing.T) {
	prev := Snapshot{Blocks: 1000, Logs: 500, IndexedHead: 17_001_000, TargetHead: 17_101_000}
	cur := Snapshot{Blocks: 3000, Logs: 2500, IndexedHead: 17_003_000, TargetHead: 17_101_000, Errors: 2}
	line := ProgressLine(prev, cur, 10*time.Second)
	for _, want := range []string{"block 17003000", "98000 to go", "200 logs/s", "200 blocks/s", "ETA 8m10s", "errors 2"} {
		if !strings.Contains(line, want) {
			t.Errorf("progress line %q lacks %q", line, want)
		}
	}
	cur.IndexedHead = cur.TargetHead
	if line := ProgressLine(prev, cur, time.Second); !strings.Contains(line, "caught up") {
		t.Errorf("progress line at the head = %q", line)
	}
}

func TestSetupRefusesTheWrongChainAndForeignData(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()

	cfg := w.config(time.Now())
	cfg.Network.ChainID = 1 // the simulated chain is 1337
	ix, err := New(storetest.New(t), w.node(NewMetrics()), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Setup(ctx); !errors.Is(err, ErrFatal) || !strings.Contains(err.Error(), "chain 1337") {
		t.Errorf("setup against another chain: %v, want ErrFatal naming the chain", err)
	}
	if err := ix.Run(ctx); !errors.Is(err, ErrFatal) {
		t.Errorf("Run against another chain returned %v, want ErrFatal", err)
	}

	// A database filled by something else (the demo generator) has events
	// but no cursor.
	db := storetest.New(t)
	if err := db.EnsureNetwork(ctx, w.network.Name); err != nil {
		t.Fatal(err)
	}
	foreign := chain.Batch{OperatorsRegistered: []chain.OperatorRegistered{{
		Position: chain.Position{BlockNumber: 3, BlockTime: time.Unix(1_700_000_000, 0), TxHash: "0x" + strings.Repeat("ab", 32)},
		Operator: "0x1111111111111111111111111111111111111111",
	}}}
	if err := db.InTx(ctx, func(tx *store.Tx) error { return tx.ApplyBatch(ctx, &foreign) }); err != nil {
		t.Fatal(err)
	}
	ix, err = New(db, w.node(NewMetrics()), w.config(time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Setup(ctx); !errors.Is(err, ErrFatal) {
		t.Errorf("setup on a database with foreign events: %v, want ErrFatal", err)
	}
}

func TestCheckConsistency(t *testing.T) {
	h := func(b byte) common.Hash { return common.Hash{b} }
	refs := map[uint64]BlockRef{
		10: {Number: 10, Hash: h(10), ParentHash: h(9)},
		11: {Number: 11, Hash: h(11), ParentHash: h(10)},
		12: {Number: 12, Hash: h(12), ParentHash: h(11)},
	}
	cur := store.Cursor{Block: 9, Hash: h(9).Hex()}
	logs := []types.Log{{BlockNumber: 11, BlockHash: h(11)}}
	if err := checkConsistency(logs, refs, 10, 12, true, true, cur); err != nil {
		t.Errorf("a consistent batch: %v", err)
	}
	stale := []types.Log{{BlockNumber: 11, BlockHash: h(99)}}
	if err := checkConsistency(stale, refs, 10, 12, false, true, cur); !errors.Is(err, errChainMoved) {
		t.Errorf("a log from another fork of its block: %v, want errChainMoved", err)
	}
	if err := checkConsistency(logs, refs, 10, 12, true, true, store.Cursor{Block: 9, Hash: h(8).Hex()}); !errors.Is(err, errChainMoved) {
		t.Errorf("a batch that does not follow the cursor: %v, want errChainMoved", err)
	}
	broken := map[uint64]BlockRef{10: refs[10], 11: {Number: 11, Hash: h(11), ParentHash: h(77)}, 12: refs[12]}
	if err := checkConsistency(logs, broken, 10, 12, true, true, cur); !errors.Is(err, errChainMoved) {
		t.Errorf("headers that do not link: %v, want errChainMoved", err)
	}
	if err := checkConsistency(logs, broken, 10, 12, false, true, cur); err != nil {
		t.Errorf("far from the head linkage is not checked: %v", err)
	}
}
