package testchain

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/rpc"
)

// Fault is what the proxy does to one JSON-RPC call instead of (or before)
// answering it. The zero Fault answers normally.
type Fault struct {
	// Status, when non-zero, answers with this HTTP status and no JSON-RPC
	// body (429 and 5xx are what overloaded providers send).
	Status int
	// Stall delays the answer; a stall longer than the client's timeout is
	// a hung node.
	Stall time.Duration
	// Malformed answers 200 with a body that is not JSON.
	Malformed bool
	// RPCError, when non-empty, answers with a JSON-RPC error of code
	// RPCErrorCode and this message (for example a provider's "query
	// returned more than 10000 results").
	RPCError     string
	RPCErrorCode int
}

// FaultFunc decides the fault for the n-th call (counting from 1) of a
// method with the given JSON parameters; it is called once per call.
type FaultFunc func(method string, n int, params []json.RawMessage) Fault

// Proxy serves a chain's JSON-RPC over HTTP and injects faults.
type Proxy struct {
	URL string

	upstream *rpc.Client
	mu       sync.Mutex
	fault    FaultFunc
	calls    map[string]int
	onCall   func(method string, n int)
}

// NewProxy serves upstream over HTTP until the test ends.
func NewProxy(t testing.TB, upstream *rpc.Client) *Proxy {
	p := &Proxy{upstream: upstream, calls: make(map[string]int)}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// SetFault installs f (nil removes it).
func (p *Proxy) SetFault(f FaultFunc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fault = f
}

// OnCall installs a hook that sees every call before it is answered.
func (p *Proxy) OnCall(f func(method string, n int)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.onCall = f
}

// Calls reports how many calls of method the proxy has received.
func (p *Proxy) Calls(method string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[method]
}

type jsonrpcRequest struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      json.RawMessage   `json:"id"`
	Method  string            `json:"method"`
	Params  []json.RawMessage `json:"params"`
}

type jsonrpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type jsonrpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *jsonrpcError   `json:"error,omitempty"`
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var reqs []jsonrpcRequest
	batch := len(body) > 0 && body[0] == '['
	if batch {
		err = json.Unmarshal(body, &reqs)
	} else {
		reqs = make([]jsonrpcRequest, 1)
		err = json.Unmarshal(body, &reqs[0])
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	resps := make([]jsonrpcResponse, 0, len(reqs))
	for _, req := range reqs {
		f := p.record(req.Method, req.Params)
		if f.Stall > 0 {
			select {
			case <-time.After(f.Stall):
			case <-r.Context().Done():
				return
			}
		}
		switch {
		case f.Status != 0:
			http.Error(w, http.StatusText(f.Status), f.Status)
			return
		case f.Malformed:
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"trunc`)
			return
		case f.RPCError != "":
			code := f.RPCErrorCode
			if code == 0 {
				code = -32005
			}
			resps = append(resps, jsonrpcResponse{JSONRPC: "2.0", ID: req.ID, Error: &jsonrpcError{code, f.RPCError}})
			continue
		}
		resps = append(resps, p.forward(r.Context(), req))
	}
	w.Header().Set("Content-Type", "application/json")
	if batch {
		_ = json.NewEncoder(w).Encode(resps)
	} else {
		_ = json.NewEncoder(w).Encode(resps[0])
	}
}

func (p *Proxy) record(method string, params []json.RawMessage) Fault {
	p.mu.Lock()
	p.calls[method]++
	n := p.calls[method]
	fault, onCall := p.fault, p.onCall
	p.mu.Unlock()
	if onCall != nil {
		onCall(method, n)
	}
	if fault == nil {
		return Fault{}
	}
	return fault(method, n, params)
}

func (p *Proxy) forward(ctx context.Context, req jsonrpcRequest) jsonrpcResponse {
	args := make([]any, len(req.Params))
	for i, a := range req.Params {
		args[i] = a
	}
	var result json.RawMessage
	resp := jsonrpcResponse{JSONRPC: "2.0", ID: req.ID}
	if err := p.upstream.CallContext(ctx, &result, req.Method, args...); err != nil {
		code := -32000
		var rpcErr rpc.Error
		if errors.As(err, &rpcErr) {
			code = rpcErr.ErrorCode()
		}
		resp.Error = &jsonrpcError{code, err.Error()}
		return resp
	}
	if result == nil {
		result = json.RawMessage("null")
	}
	resp.Result = result
	return resp
}
