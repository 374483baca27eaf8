package indexer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"
)

// ErrRangeTooLarge says the node refused an eth_getLogs range as too large
// (too many results, too wide a range, too big a response, or no answer in
// time); the caller should ask for a smaller range.
var ErrRangeTooLarge = errors.New("log range too large for the node")

// ErrResponseTooLarge says a JSON-RPC answer was larger than
// NodeOptions.MaxResponse; it was not read further. An eth_getLogs answer
// that is too large counts as ErrRangeTooLarge too, so that a smaller range
// is asked for.
var ErrResponseTooLarge = errors.New("JSON-RPC answer too large")

// DefaultMaxResponse is the default cap on the size of one JSON-RPC answer.
const DefaultMaxResponse = 64 << 20

// ErrReverted says a contract call reverted; retrying cannot help.
var ErrReverted = errors.New("call reverted")

// errPermanent marks node errors that retrying cannot fix (bad request,
// unknown method, authentication).
var errPermanent = errors.New("permanent node error")

// RetryPolicy says how often and how patiently a node call is retried.
type RetryPolicy struct {
	Attempts int           // total tries per call, at least 1
	Initial  time.Duration // first backoff
	Max      time.Duration // backoff cap
}

// DefaultRetry retries a call five times over about half a minute.
var DefaultRetry = RetryPolicy{Attempts: 5, Initial: 500 * time.Millisecond, Max: 15 * time.Second}

// backoff returns the wait before retry number n (counting from 1), with
// jitter so that many clients do not retry in step.
func (p RetryPolicy) backoff(n int) time.Duration {
	d := p.Initial
	for i := 1; i < n && d < p.Max; i++ {
		d *= 2
	}
	if d > p.Max {
		d = p.Max
	}
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

// NodeOptions tune a Node.
type NodeOptions struct {
	// CallTimeout bounds one attempt of one call (a stalled node).
	CallTimeout time.Duration
	Retry       RetryPolicy
	// HeaderConcurrency bounds the block headers fetched at once.
	HeaderConcurrency int
	// MaxResponse bounds the size in bytes of one JSON-RPC answer (of one
	// websocket message on ws and wss connections). Default
	// DefaultMaxResponse. It applies to nodes connected with Dial.
	MaxResponse int64
	Metrics     *Metrics
	Logger      *slog.Logger
}

func (o NodeOptions) withDefaults() NodeOptions {
	if o.CallTimeout <= 0 {
		o.CallTimeout = 30 * time.Second
	}
	if o.Retry.Attempts <= 0 {
		o.Retry = DefaultRetry
	}
	if o.HeaderConcurrency <= 0 {
		o.HeaderConcurrency = 8
	}
	if o.MaxResponse <= 0 {
		o.MaxResponse = DefaultMaxResponse
	}
	if o.Metrics == nil {
		o.Metrics = NewMetrics()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Node is a connection to an Ethereum JSON-RPC node. Every call is bounded
// by a timeout and retried with backoff on failures that may pass (timeouts,
// HTTP 429 and 5xx, malformed answers, a node that lags behind); none of them
// panics or is swallowed.
type Node struct {
	rpc  *rpc.Client
	eth  *ethclient.Client
	opts NodeOptions
}

// Dial connects to the node at url (http, https, ws or wss). Answers larger
// than opts.MaxResponse fail with ErrResponseTooLarge.
func Dial(ctx context.Context, url string, opts NodeOptions) (*Node, error) {
	opts = opts.withDefaults()
	c, err := rpc.DialOptions(ctx, url,
		rpc.WithHTTPClient(&http.Client{Transport: &cappedTransport{base: http.DefaultTransport, limit: opts.MaxResponse}}),
		rpc.WithWebsocketMessageSizeLimit(opts.MaxResponse))
	if err != nil {
		return nil, fmt.Errorf("connect to node: %w", err)
	}
	return NewNode(c, opts), nil
}

// NewNode wraps an RPC client.
func NewNode(c *rpc.Client, opts NodeOptions) *Node {
	return &Node{rpc: c, eth: ethclient.NewClient(c), opts: opts.withDefaults()}
}

// Close closes the connection.
func (n *Node) Close() { n.rpc.Close() }

// BlockRef identifies a block.
type BlockRef struct {
	Number     uint64
	Hash       common.Hash
	ParentHash common.Hash
	Time       time.Time
}

// do runs call with a per-attempt timeout, retrying retryable failures.
func (n *Node) do(ctx context.Context, method string, call func(ctx context.Context) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, n.opts.CallTimeout)
		err = call(actx)
		timedOut := actx.Err() != nil
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if timedOut && !errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: %v", context.DeadlineExceeded, err)
		}
		err = classify(method, err)
		n.opts.Metrics.RPCError(method)
		if errors.Is(err, errPermanent) || errors.Is(err, ErrReverted) || errors.Is(err, ErrRangeTooLarge) ||
			attempt >= n.opts.Retry.Attempts {
			return fmt.Errorf("%s: %w", method, err)
		}
		wait := n.opts.Retry.backoff(attempt)
		n.opts.Logger.Warn("node call failed; retrying", "method", method, "attempt", attempt, "wait", wait, "err", err)
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// classify sorts a node error into permanent, reverted, range-too-large or
// (by default) retryable.
func classify(method string, err error) error {
	if errors.Is(err, ErrResponseTooLarge) || strings.Contains(err.Error(), "websocket: read limit exceeded") {
		if !errors.Is(err, ErrResponseTooLarge) {
			err = fmt.Errorf("%w: %w", ErrResponseTooLarge, err)
		}
		// The same question would get the same answer; a narrower log
		// query may not.
		if method == "eth_getLogs" {
			return fmt.Errorf("%w: %w", ErrRangeTooLarge, err)
		}
		return fmt.Errorf("%w: %w", errPermanent, err)
	}
	var httpErr rpc.HTTPError
	if errors.As(err, &httpErr) {
		switch {
		case httpErr.StatusCode == http.StatusRequestEntityTooLarge && method == "eth_getLogs":
			return fmt.Errorf("%w: %v", ErrRangeTooLarge, err)
		case httpErr.StatusCode == http.StatusTooManyRequests, httpErr.StatusCode == http.StatusRequestTimeout,
			httpErr.StatusCode >= 500:
			return err
		case httpErr.StatusCode >= 400:
			return fmt.Errorf("%w: %v", errPermanent, err)
		}
		return err
	}
	msg := strings.ToLower(err.Error())
	if method == "eth_getLogs" {
		if errors.Is(err, context.DeadlineExceeded) || tooLargeMessage(msg) {
			return fmt.Errorf("%w: %v", ErrRangeTooLarge, err)
		}
	}
	if method == "eth_call" && stateUnavailable(err) {
		return fmt.Errorf("%w: %v", errPermanent, err)
	}
	var rpcErr rpc.Error
	if errors.As(err, &rpcErr) {
		switch {
		case rpcErr.ErrorCode() == 3 || strings.Contains(msg, "execution reverted") || strings.Contains(msg, "revert"):
			return fmt.Errorf("%w: %v", ErrReverted, err)
		case rpcErr.ErrorCode() == -32601, rpcErr.ErrorCode() == -32602, rpcErr.ErrorCode() == -32600:
			return fmt.Errorf("%w: %v", errPermanent, err)
		}
	}
	return err
}

// tooLargeMessage recognises the ways providers say a log query asks for too
// much: geth/erigon/reth, Alchemy, Infura, QuickNode, Ankr and others.
func tooLargeMessage(msg string) bool {
	for _, s := range []string{
		"more than", "too many", "too large", "limit exceeded", "exceeds", "exceeded", "range",
		"response size", "query timeout", "timed out", "timeout", "10000 results", "block range",
	} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// ChainID returns the chain id of the node.
func (n *Node) ChainID(ctx context.Context) (uint64, error) {
	var id *big.Int
	err := n.do(ctx, "eth_chainId", func(ctx context.Context) (err error) {
		id, err = n.eth.ChainID(ctx)
		return err
	})
	if err != nil {
		return 0, err
	}
	if !id.IsUint64() {
		return 0, fmt.Errorf("eth_chainId: %s out of range", id)
	}
	return id.Uint64(), nil
}

// BlockNumber returns the number of the node's latest block.
func (n *Node) BlockNumber(ctx context.Context) (uint64, error) {
	var num uint64
	err := n.do(ctx, "eth_blockNumber", func(ctx context.Context) (err error) {
		num, err = n.eth.BlockNumber(ctx)
		return err
	})
	return num, err
}

// rpcBlock is the part of eth_getBlockByNumber's answer the indexer needs.
// Decoding only these fields (instead of a full types.Header, whose hash is
// recomputed locally) keeps working across forks that add header fields.
type rpcBlock struct {
	Number     *hexutil.Big    `json:"number"`
	Hash       *common.Hash    `json:"hash"`
	ParentHash *common.Hash    `json:"parentHash"`
	Timestamp  *hexutil.Uint64 `json:"timestamp"`
}

// Block returns the node's block with the given number.
func (n *Node) Block(ctx context.Context, number uint64) (BlockRef, error) {
	var ref BlockRef
	err := n.do(ctx, "eth_getBlockByNumber", func(ctx context.Context) error {
		var raw json.RawMessage
		if err := n.rpc.CallContext(ctx, &raw, "eth_getBlockByNumber", hexutil.Uint64(number), false); err != nil {
			return err
		}
		if len(raw) == 0 || string(raw) == "null" {
			// The node does not have it (yet): a lagging or load-balanced node.
			return fmt.Errorf("block %d not found", number)
		}
		var b rpcBlock
		if err := json.Unmarshal(raw, &b); err != nil {
			return fmt.Errorf("malformed block %d: %w", number, err)
		}
		if b.Number == nil || b.Hash == nil || b.ParentHash == nil || b.Timestamp == nil {
			return fmt.Errorf("malformed block %d: missing fields", number)
		}
		if got := (*big.Int)(b.Number); !got.IsUint64() || got.Uint64() != number {
			return fmt.Errorf("asked for block %d, got %s", number, got)
		}
		ref = BlockRef{Number: number, Hash: *b.Hash, ParentHash: *b.ParentHash, Time: time.Unix(int64(*b.Timestamp), 0).UTC()}
		return nil
	})
	return ref, err
}

// Blocks returns the given blocks, fetching a few at a time.
func (n *Node) Blocks(ctx context.Context, numbers []uint64) (map[uint64]BlockRef, error) {
	out := make(map[uint64]BlockRef, len(numbers))
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		firstErr error
	)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, n.opts.HeaderConcurrency)
	for _, num := range numbers {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(num uint64) {
			defer func() { <-sem; wg.Done() }()
			ref, err := n.Block(ctx, num)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
					cancel()
				}
				return
			}
			out[num] = ref
		}(num)
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil && len(out) < len(numbers) {
		return nil, err
	}
	return out, nil
}

// Logs returns the logs of the given addresses and topics in [from, to];
// with no topics, every log of the addresses. It returns an error wrapping ErrRangeTooLarge, without retrying, when the
// node refuses the range as too large.
func (n *Node) Logs(ctx context.Context, from, to uint64, addrs []common.Address, topics []common.Hash) ([]types.Log, error) {
	q := ethereum.FilterQuery{
		FromBlock: new(big.Int).SetUint64(from),
		ToBlock:   new(big.Int).SetUint64(to),
		Addresses: addrs,
	}
	if len(topics) > 0 {
		q.Topics = [][]common.Hash{topics}
	}
	var logs []types.Log
	err := n.do(ctx, "eth_getLogs", func(ctx context.Context) (err error) {
		logs, err = n.eth.FilterLogs(ctx, q)
		if err != nil {
			return err
		}
		for i := range logs {
			lg := &logs[i]
			if lg.BlockNumber < from || lg.BlockNumber > to {
				return fmt.Errorf("malformed eth_getLogs answer: log of block %d outside [%d, %d]", lg.BlockNumber, from, to)
			}
			if lg.Removed {
				return fmt.Errorf("eth_getLogs returned a removed log at block %d", lg.BlockNumber)
			}
		}
		return nil
	})
	return logs, err
}

// Call runs a read-only contract call at the given block (nil: latest).
func (n *Node) Call(ctx context.Context, to common.Address, data []byte, block *big.Int) ([]byte, error) {
	var out []byte
	err := n.do(ctx, "eth_call", func(ctx context.Context) (err error) {
		out, err = n.eth.CallContract(ctx, ethereum.CallMsg{To: &to, Data: data}, block)
		return err
	})
	return out, err
}
