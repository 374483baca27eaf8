package indexer

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
)

// Metrics are the indexer's counters and gauges. They are written in the
// Prometheus text exposition format by WritePrometheus (and Handler), which
// the server mounts on its admin metrics endpoint. All methods are safe for
// concurrent use.
type Metrics struct {
	blocks      atomic.Uint64 // blocks indexed
	logs        atomic.Uint64 // logs decoded and applied
	batches     atomic.Uint64 // batches committed
	errors      atomic.Uint64 // failed indexing steps (each retried)
	reorgs      atomic.Uint64 // rollbacks to a common ancestor
	rolledBack  atomic.Uint64 // blocks undone by rollbacks
	metaFetched atomic.Uint64 // metadata documents applied
	metaFailed  atomic.Uint64 // metadata documents that could not be fetched or parsed
	nodeHead    atomic.Uint64 // the node's latest block
	indexedHead atomic.Uint64 // the sync cursor
	targetHead  atomic.Uint64 // the node's latest block minus confirmations

	mu        sync.Mutex
	rpcErrors map[string]uint64 // by JSON-RPC method
}

// NewMetrics returns zeroed metrics.
func NewMetrics() *Metrics { return &Metrics{rpcErrors: make(map[string]uint64)} }

// RPCError counts one failed node call attempt.
func (m *Metrics) RPCError(method string) {
	m.mu.Lock()
	m.rpcErrors[method]++
	m.mu.Unlock()
}

// Snapshot is a consistent-enough copy of the metrics for display.
type Snapshot struct {
	Blocks, Logs, Batches, Errors, Reorgs, RolledBack uint64
	MetadataFetched, MetadataFailed                   uint64
	NodeHead, IndexedHead, TargetHead                 uint64
	RPCErrors                                         map[string]uint64
}

// Lag is how many blocks the index is behind the node's head.
func (s Snapshot) Lag() uint64 {
	if s.NodeHead > s.IndexedHead {
		return s.NodeHead - s.IndexedHead
	}
	return 0
}

// Snapshot copies the current values.
func (m *Metrics) Snapshot() Snapshot {
	s := Snapshot{
		Blocks: m.blocks.Load(), Logs: m.logs.Load(), Batches: m.batches.Load(), Errors: m.errors.Load(),
		Reorgs: m.reorgs.Load(), RolledBack: m.rolledBack.Load(),
		MetadataFetched: m.metaFetched.Load(), MetadataFailed: m.metaFailed.Load(),
		NodeHead: m.nodeHead.Load(), IndexedHead: m.indexedHead.Load(), TargetHead: m.targetHead.Load(),
		RPCErrors: make(map[string]uint64),
	}
	m.mu.Lock()
	for k, v := range m.rpcErrors {
		s.RPCErrors[k] = v
	}
	m.mu.Unlock()
	return s
}

// WritePrometheus writes the metrics in the Prometheus text format.
func (m *Metrics) WritePrometheus(w io.Writer) error {
	s := m.Snapshot()
	type metric struct {
		name, typ, help string
		value           uint64
	}
	for _, x := range []metric{
		{"stakegraph_indexer_blocks_total", "counter", "Blocks indexed by this process.", s.Blocks},
		{"stakegraph_indexer_logs_total", "counter", "Logs decoded and applied by this process.", s.Logs},
		{"stakegraph_indexer_batches_total", "counter", "Batches of blocks committed by this process.", s.Batches},
		{"stakegraph_indexer_errors_total", "counter", "Indexing steps that failed and were retried.", s.Errors},
		{"stakegraph_indexer_reorgs_total", "counter", "Chain reorganisations rolled back.", s.Reorgs},
		{"stakegraph_indexer_rolled_back_blocks_total", "counter", "Blocks undone by rollbacks.", s.RolledBack},
		{"stakegraph_indexer_metadata_fetched_total", "counter", "Metadata documents fetched and applied.", s.MetadataFetched},
		{"stakegraph_indexer_metadata_errors_total", "counter", "Metadata documents that could not be fetched or parsed.", s.MetadataFailed},
		{"stakegraph_indexer_node_head_block", "gauge", "Latest block of the Ethereum node.", s.NodeHead},
		{"stakegraph_indexer_indexed_block", "gauge", "Last block whose events are applied (the sync cursor).", s.IndexedHead},
		{"stakegraph_indexer_lag_blocks", "gauge", "Blocks between the node's head and the sync cursor.", s.Lag()},
	} {
		if _, err := fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %d\n", x.name, x.help, x.name, x.typ, x.name, x.value); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprint(w, "# HELP stakegraph_indexer_rpc_errors_total Failed JSON-RPC call attempts by method.\n"+
		"# TYPE stakegraph_indexer_rpc_errors_total counter\n"); err != nil {
		return err
	}
	methods := make([]string, 0, len(s.RPCErrors))
	for k := range s.RPCErrors {
		methods = append(methods, k)
	}
	sort.Strings(methods)
	for _, k := range methods {
		if _, err := fmt.Fprintf(w, "stakegraph_indexer_rpc_errors_total{method=%q} %d\n", k, s.RPCErrors[k]); err != nil {
			return err
		}
	}
	return nil
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_ = m.WritePrometheus(w)
	})
}
