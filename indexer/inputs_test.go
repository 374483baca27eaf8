package indexer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/stakegraph/stakegraph/chain"
)

// lastAddress returns the highest address of p.
func lastAddress(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func TestPublicAddress(t *testing.T) {
	for _, c := range []struct {
		addr string
		want bool
	}{
		// Globally routable unicast.
		{"1.1.1.1", true},
		{"8.8.8.8", true},
		{"93.184.216.34", true},
		{"100.63.255.255", true},  // just below carrier-grade NAT
		{"100.128.0.0", true},     // just above it
		{"198.17.255.255", true},  // just below benchmarking
		{"198.20.0.0", true},      // just above it
		{"192.0.1.1", true},       // between 192.0.0/24 and 192.0.2/24
		{"223.255.255.255", true}, // just below multicast
		{"2606:4700:4700::1111", true},
		{"2a00:1450:4001:81b::200e", true},
		{"::ffff:8.8.8.8", true},   // IPv4-mapped public address
		{"64:ff9b::808:808", true}, // NAT64 of 8.8.8.8
		{"2001:200::1", true},      // just above 2001::/23
		{"2003::1", true},          // just above 6to4
		{"2001:db9::1", true},      // just above documentation
		{"2620:4f:8000::1", true},  // AS112 direct delegation: globally reachable
		{"2001:4860:4860::8888", true},
		// IPv4 special-purpose ranges.
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"10.0.0.1", false},
		{"100.64.0.1", false},
		{"100.100.100.200", false}, // a cloud metadata service in CGNAT space
		{"100.127.255.255", false},
		{"127.0.0.1", false},
		{"127.255.255.254", false},
		{"169.254.169.254", false},
		{"172.16.0.1", false},
		{"172.31.255.255", false},
		{"192.0.0.1", false},
		{"192.0.0.170", false},
		{"192.0.2.1", false},
		{"192.88.99.1", false},
		{"192.168.1.1", false},
		{"198.18.0.1", false},
		{"198.19.255.255", false},
		{"198.51.100.7", false},
		{"203.0.113.9", false},
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"240.0.0.1", false},
		{"255.255.255.254", false},
		{"255.255.255.255", false},
		// IPv6 special-purpose ranges and embedded IPv4.
		{"::", false},
		{"::1", false},
		{"::127.0.0.1", false}, // IPv4-compatible
		{"::8.8.8.8", false},   // IPv4-compatible, deprecated even when public
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.0.0.1", false},
		{"::ffff:100.100.100.200", false},
		{"::ffff:169.254.169.254", false},
		{"::ffff:0.0.0.0", false},
		{"64:ff9b::7f00:1", false},    // NAT64 of 127.0.0.1
		{"64:ff9b::a9fe:a9fe", false}, // NAT64 of 169.254.169.254
		{"64:ff9b::a00:1", false},     // NAT64 of 10.0.0.1
		{"64:ff9b:1::808:808", false}, // local-use NAT64
		{"100::1", false},
		{"100:0:0:1::1", false},
		{"2001::1", false},                // Teredo
		{"2001:0:4136:e378::1", false},    // Teredo
		{"2001:1::1", false},              // IETF protocol assignments
		{"2001:2::1", false},              // benchmarking
		{"2001:10::1", false},             // ORCHID
		{"2001:20::1", false},             // ORCHIDv2
		{"2001:db8::1", false},            // documentation
		{"2002:7f00:1::1", false},         // 6to4 of 127.0.0.1
		{"2002:a00:1::1", false},          // 6to4 of 10.0.0.1
		{"2002:808:808::1", false},        // 6to4, deprecated even when public
		{"3fff::1", false},                // documentation
		{"5f00::1", false},                // SRv6
		{"fc00::1", false},                // unique local
		{"fd00:ec2::254", false},          // a cloud metadata service
		{"fe80::1", false},                // link local
		{"fe80::1%eth0", false},           // scoped
		{"fec0::1", false},                // site local
		{"ff02::1", false},                // multicast
		{"ff05::1:3", false},              // multicast
		{"4000::1", false},                // outside 2000::/3
		{"2606:4700:4700::1111%1", false}, // zones are never global
	} {
		a := netip.MustParseAddr(c.addr)
		if got := publicAddress(a); got != c.want {
			t.Errorf("publicAddress(%s) = %v, want %v", c.addr, got, c.want)
		}
	}
	if publicAddress(netip.Addr{}) {
		t.Error("the zero address is public")
	}

	// Every listed range is refused at both ends, also in IPv4-mapped form.
	for _, list := range [][]specialPrefix{nonPublicIPv4, nonPublicIPv6} {
		for _, p := range list {
			for _, a := range []netip.Addr{p.prefix.Addr(), lastAddress(p.prefix)} {
				if publicAddress(a) {
					t.Errorf("%s in %s (%s) is public", a, p.prefix, p.name)
				}
				if a.Is4() {
					if m := netip.AddrFrom16(a.As16()); publicAddress(m) {
						t.Errorf("%s, mapped from %s (%s), is public", m, p.prefix, p.name)
					}
					if b := a.As4(); publicAddress(netip.AddrFrom16([16]byte{0: 0, 1: 0x64, 2: 0xff, 3: 0x9b, 12: b[0], 13: b[1], 14: b[2], 15: b[3]})) {
						t.Errorf("NAT64 of %s (%s) is public", a, p.name)
					}
				}
			}
		}
	}

	// The dial-time check parses the addresses the dialer hands it.
	guard := addressGuard(nil)
	for address, refused := range map[string]bool{
		"8.8.8.8:443": false, "[2606:4700:4700::1111]:443": false,
		"127.0.0.1:80": true, "[::1]:80": true, "[::127.0.0.1]:80": true, "[fe80::1%eth0]:80": true,
		"[::ffff:127.0.0.1]:80": true, "[64:ff9b::7f00:1]:80": true, "100.100.100.200:80": true, "not an address": true,
	} {
		if err := guard("tcp", address, nil); (err != nil) != refused || (refused && !errors.Is(err, errPrivateAddress)) {
			t.Errorf("guard(%q) = %v, want refused %v", address, err, refused)
		}
	}
}

// ipv6Loopback reports whether this machine can listen on ::1.
func ipv6Loopback() bool {
	l, err := net.Listen("tcp6", "[::1]:0")
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func TestMetadataFetcherConnectsOnlyToPublicAddresses(t *testing.T) {
	// internal is a service on the indexer's own network: the fetcher must
	// never reach it.
	var internalHits atomic.Int32
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		internalHits.Add(1)
		fmt.Fprint(w, `{"name":"internal secret"}`)
	}))
	defer internal.Close()
	_, internalPort, _ := net.SplitHostPort(internal.Listener.Addr().String())

	// public stands for a public server: the test admits its address.
	var redirects atomic.Int32
	public := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if to := r.URL.Query().Get("to"); r.URL.Path == "/redirect" {
			redirects.Add(1)
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		fmt.Fprint(w, `{"name":"public"}`)
	}))
	defer public.Close()
	publicAddr := netip.MustParseAddrPort(public.Listener.Addr().String())

	f := quietFetcher(MetadataOptions{
		Timeout: 2 * time.Second, Attempts: 3, Backoff: time.Millisecond,
		allowAddress: func(ap netip.AddrPort) bool { return ap == publicAddr },
		lookupHost: func(host string) (string, bool) {
			switch host {
			case "metadata.test":
				return "127.0.0.1", true
			case "imds.test":
				return "169.254.169.254", true
			}
			return "", false
		},
	})
	if tr, ok := f.client.Transport.(*http.Transport); !ok || tr.Proxy != nil {
		t.Error("the fetcher's transport uses a proxy; it must connect itself, after checking the address")
	}
	ctx := context.Background()
	update := func(uri string) chain.MetadataURIUpdated {
		return chain.MetadataURIUpdated{Subject: chain.SubjectOperator, Address: "0x1111111111111111111111111111111111111111", URI: uri}
	}

	// The admitted server and redirects within it work.
	if doc, err := f.Fetch(ctx, update(public.URL+"/doc.json")); err != nil || doc.Name != "public" {
		t.Fatalf("admitted server: %+v, %v", doc, err)
	}
	if doc, err := f.Fetch(ctx, update(public.URL+"/redirect?to=/doc.json")); err != nil || doc.Name != "public" {
		t.Fatalf("redirect within the admitted server: %+v, %v", doc, err)
	}

	redirect := func(to string) string { return public.URL + "/redirect?to=" + to }
	refused := []string{
		// Names resolving to loopback or link local.
		"http://metadata.test:" + internalPort + "/doc.json",
		"http://localhost:" + internalPort + "/doc.json",
		"http://imds.test/latest/meta-data/",
		// Literal addresses of special ranges.
		internal.URL + "/doc.json",
		"http://0.0.0.0:" + internalPort + "/doc.json", // 0.0.0.0 reaches the local host
		"http://100.100.100.200/latest/meta-data/",
		"http://169.254.169.254/latest/meta-data/",
		"http://198.18.0.1/",
		"http://192.0.0.1/",
		"http://240.0.0.1/",
		"http://[::ffff:127.0.0.1]:" + internalPort + "/doc.json",
		// Redirects from the admitted server to private addresses.
		redirect(internal.URL + "/doc.json"),
		redirect("http://metadata.test:" + internalPort + "/doc.json"),
		redirect("http://localhost:" + internalPort + "/doc.json"),
		redirect("http://100.100.100.200/latest/meta-data/"),
		redirect("http://10.0.0.1/"),
		redirect("http://imds.test/"),
	}
	if ipv6Loopback() {
		refused = append(refused,
			"http://[::1]:"+internalPort+"/doc.json",
			"http://[::127.0.0.1]:"+internalPort+"/doc.json",
			"http://[64:ff9b::7f00:1]/",
			"http://[2002:7f00:1::1]/",
			"http://[fd00:ec2::254]/",
			redirect("http://[::1]:"+internalPort+"/doc.json"),
		)
	}
	redirects.Store(0)
	wantRedirects := int32(0)
	for _, uri := range refused {
		if strings.HasPrefix(uri, public.URL+"/redirect") {
			wantRedirects++
		}
		if doc, err := f.Fetch(ctx, update(uri)); !errors.Is(err, errPrivateAddress) || !errors.Is(err, errNotRetryable) {
			t.Errorf("%s: %+v, %v; want a refusal that is not retried", uri, doc, err)
		}
	}
	if n := internalHits.Load(); n != 0 {
		t.Errorf("the internal server was reached %d times", n)
	}
	if n := redirects.Load(); n != wantRedirects {
		t.Errorf("the redirecting server was asked %d times for %d refused redirects; want one each (no retry)", n, wantRedirects)
	}

	// Allowing private addresses (for tests and private deployments) still
	// ignores proxy settings.
	open := quietFetcher(MetadataOptions{AllowPrivateAddresses: true})
	if tr, ok := open.client.Transport.(*http.Transport); !ok || tr.Proxy != nil {
		t.Error("a fetcher allowing private addresses uses a proxy")
	}
	if doc, err := open.Fetch(ctx, update(internal.URL+"/doc.json")); err != nil || doc.Name != "internal secret" {
		t.Errorf("with AllowPrivateAddresses: %+v, %v", doc, err)
	}
}

func TestCappedBody(t *testing.T) {
	read := func(body string, limit int64) (string, error) {
		b := &cappedBody{body: io.NopCloser(strings.NewReader(body)), left: limit, limit: limit}
		got, err := io.ReadAll(b)
		if err != nil {
			if _, again := b.Read(make([]byte, 8)); !errors.Is(again, ErrResponseTooLarge) {
				t.Errorf("read after the limit error: %v", again)
			}
		}
		return string(got), err
	}
	if got, err := read("0123456789", 10); err != nil || got != "0123456789" {
		t.Errorf("a body of exactly the limit: %q, %v", got, err)
	}
	if got, err := read("0123456789", 100); err != nil || got != "0123456789" {
		t.Errorf("a body under the limit: %q, %v", got, err)
	}
	if _, err := read("0123456789a", 10); !errors.Is(err, ErrResponseTooLarge) || !strings.Contains(err.Error(), "10 bytes") {
		t.Errorf("a body one byte over the limit: %v, want ErrResponseTooLarge naming the limit", err)
	}
}

// rpcRequest is a JSON-RPC request as a test node sees it.
type rpcRequest struct {
	ID     json.RawMessage   `json:"id"`
	Method string            `json:"method"`
	Params []json.RawMessage `json:"params"`
}

// streamResult answers a JSON-RPC request with a string result of about
// total bytes, written in flushed chunks without a declared length, and
// returns how much it wrote and the write error that stopped it (nil when
// it wrote everything: the client read it all).
func streamResult(w http.ResponseWriter, id json.RawMessage, total int64) (int64, error) {
	w.Header().Set("Content-Type", "application/json")
	rc := http.NewResponseController(w)
	n, err := fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":"0x`, id)
	written := int64(n)
	chunk := bytes.Repeat([]byte("0"), 64<<10)
	for err == nil && written < total {
		n, err = w.Write(chunk)
		written += int64(n)
		if err == nil {
			err = rc.Flush()
		}
	}
	if err == nil {
		_, err = io.WriteString(w, `"}`)
	}
	return written, err
}

func quietNode(t *testing.T, url string, maxResponse int64) *Node {
	t.Helper()
	n, err := Dial(context.Background(), url, NodeOptions{
		CallTimeout: 10 * time.Second,
		Retry:       RetryPolicy{Attempts: 3, Initial: time.Millisecond, Max: time.Millisecond},
		MaxResponse: maxResponse,
		Logger:      slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Close)
	return n
}

func TestNodeRefusesOversizedAnswers(t *testing.T) {
	const limit = 1 << 20
	const huge = 256 << 20
	type outcome struct {
		written int64
		err     error
	}
	streamed := make(chan outcome, 10)
	var calls atomic.Int32
	var mode atomic.Value
	mode.Store("small")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req rpcRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		calls.Add(1)
		switch mode.Load() {
		case "small":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":"0x10"}`, req.ID)
		case "stream":
			written, err := streamResult(w, req.ID, huge)
			streamed <- outcome{written, err}
		case "declared":
			// A length over the limit, announced before any of the body.
			w.Header().Set("Content-Length", fmt.Sprint(huge))
			w.WriteHeader(http.StatusOK)
			http.NewResponseController(w).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(20 * time.Second):
			}
		}
	}))
	defer srv.Close()
	n := quietNode(t, srv.URL, limit)
	ctx := context.Background()

	if num, err := n.BlockNumber(ctx); err != nil || num != 16 {
		t.Fatalf("small answer: %d, %v", num, err)
	}

	// An answer streamed far past the limit: the call fails with the size
	// error, is not retried, and the client stops reading (the server's
	// writes fail long before it has written the whole answer).
	mode.Store("stream")
	calls.Store(0)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := n.BlockNumber(ctx)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrResponseTooLarge) || !strings.Contains(err.Error(), fmt.Sprint(limit)) {
		t.Errorf("oversized eth_blockNumber: %v, want ErrResponseTooLarge naming the limit", err)
	}
	if calls.Load() != 1 {
		t.Errorf("oversized answer asked %d times, want once (not retried)", calls.Load())
	}
	select {
	case o := <-streamed:
		t.Logf("oversized eth_blockNumber: %v; the server wrote %d bytes, then: %v", err, o.written, o.err)
		if o.err == nil || o.written > 32<<20 {
			t.Errorf("the server wrote %d bytes (write error %v); want the client to stop reading near the %d byte limit", o.written, o.err, limit)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server is still writing the oversized answer: the client did not stop reading")
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("reading an oversized answer allocated %d MiB; want it bounded by the limit", alloc>>20)
	}

	// A declared length over the limit fails before the body is read.
	mode.Store("declared")
	if _, err := n.BlockNumber(ctx); !errors.Is(err, ErrResponseTooLarge) {
		t.Errorf("answer declared oversized: %v, want ErrResponseTooLarge", err)
	}

	// The node is still usable afterwards.
	mode.Store("small")
	if num, err := n.BlockNumber(ctx); err != nil || num != 16 {
		t.Errorf("small answer after oversized ones: %d, %v", num, err)
	}
}

// bigEth is an "eth" JSON-RPC service whose block number is far too long.
type bigEth struct{ size int }

func (s bigEth) BlockNumber() hexutil.Bytes { return make(hexutil.Bytes, s.size) }

func TestNodeRefusesOversizedWebsocketMessages(t *testing.T) {
	server := rpc.NewServer()
	if err := server.RegisterName("eth", bigEth{size: 256 << 10}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(server.WebsocketHandler([]string{"*"}))
	defer srv.Close()
	defer server.Stop()
	n := quietNode(t, "ws://"+strings.TrimPrefix(srv.URL, "http://"), 64<<10)
	_, err := n.BlockNumber(context.Background())
	if !errors.Is(err, ErrResponseTooLarge) {
		t.Errorf("oversized websocket answer: %v, want ErrResponseTooLarge", err)
	}
	t.Logf("oversized websocket answer: %v", err)
}

func TestOversizedLogAnswerShrinksTheRange(t *testing.T) {
	const limit = 64 << 10
	var (
		mu     sync.Mutex
		widths []uint64
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req rpcRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Method != "eth_getLogs" || len(req.Params) != 1 {
			http.Error(w, "want eth_getLogs", http.StatusBadRequest)
			return
		}
		var q struct {
			FromBlock hexutil.Uint64 `json:"fromBlock"`
			ToBlock   hexutil.Uint64 `json:"toBlock"`
		}
		if err := json.Unmarshal(req.Params[0], &q); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		width := uint64(q.ToBlock - q.FromBlock + 1)
		mu.Lock()
		widths = append(widths, width)
		mu.Unlock()
		if width > 8 {
			// Too many logs: an answer past the client's limit.
			streamResult(w, req.ID, 4<<20)
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":[]}`, req.ID)
	}))
	defer srv.Close()
	ix := &Indexer{node: quietNode(t, srv.URL, limit), dec: &Decoder{}, log: slog.New(slog.NewTextHandler(io.Discard, nil)), rangeSize: 100}

	logs, to, err := ix.fetchLogs(context.Background(), 1000, 1099)
	if err != nil || len(logs) != 0 {
		t.Fatalf("fetchLogs through oversized answers: %d logs, %v", len(logs), err)
	}
	mu.Lock()
	asked := fmt.Sprint(widths)
	mu.Unlock()
	if want := fmt.Sprint([]uint64{100, 50, 25, 13, 7}); asked != want {
		t.Errorf("requested ranges %v, want %v (halved after each oversized answer, none retried)", asked, want)
	}
	if to != 1006 || ix.rangeSize != 7 {
		t.Errorf("fetched up to %d with range %d, want 1006 and 7", to, ix.rangeSize)
	}

	// The error of an oversized log answer is both a range that is too
	// large and an answer that is too large (for the operator to raise the
	// limit when even one block's logs do not fit).
	_, err = ix.node.Logs(context.Background(), 1000, 1099, nil, nil)
	if !errors.Is(err, ErrRangeTooLarge) || !errors.Is(err, ErrResponseTooLarge) {
		t.Errorf("oversized eth_getLogs: %v, want ErrRangeTooLarge and ErrResponseTooLarge", err)
	}
	t.Logf("oversized eth_getLogs: %v", err)
}
