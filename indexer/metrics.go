package indexer

import (
	"sort"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the indexer's counters and gauges. Metrics is a
// prometheus.Collector: registered with the server's registry they are
// served on the admin /metrics endpoint. All methods are safe for
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

	mu            sync.Mutex
	rpcErrors     map[string]uint64       // by JSON-RPC method
	unknownEvents map[UnknownEvent]uint64 // by contract and topic 0
}

// UnknownEvent names an event signature a core contract emitted that the
// decoder does not know: the contract's address and the log's topic 0,
// both lowercase 0x-prefixed hex.
type UnknownEvent struct {
	Contract, Topic string
}

// NewMetrics returns zeroed metrics.
func NewMetrics() *Metrics {
	return &Metrics{rpcErrors: make(map[string]uint64), unknownEvents: make(map[UnknownEvent]uint64)}
}

// RPCError counts one failed node call attempt.
func (m *Metrics) RPCError(method string) {
	m.mu.Lock()
	m.rpcErrors[method]++
	m.mu.Unlock()
}

// UnknownEvent counts one log of a core contract whose event signature
// the decoder does not know.
func (m *Metrics) UnknownEvent(contract, topic string) {
	m.mu.Lock()
	m.unknownEvents[UnknownEvent{contract, topic}]++
	m.mu.Unlock()
}

// Snapshot is a consistent-enough copy of the metrics for display.
type Snapshot struct {
	Blocks, Logs, Batches, Errors, Reorgs, RolledBack uint64
	MetadataFetched, MetadataFailed                   uint64
	NodeHead, IndexedHead, TargetHead                 uint64
	RPCErrors                                         map[string]uint64
	UnknownEvents                                     map[UnknownEvent]uint64
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
		RPCErrors:     make(map[string]uint64),
		UnknownEvents: make(map[UnknownEvent]uint64),
	}
	m.mu.Lock()
	for k, v := range m.rpcErrors {
		s.RPCErrors[k] = v
	}
	for k, v := range m.unknownEvents {
		s.UnknownEvents[k] = v
	}
	m.mu.Unlock()
	return s
}

// metricDescs describe the indexer's metrics in Prometheus terms.
var metricDescs = struct {
	blocks, logs, batches, errors, reorgs, rolledBack, metaFetched, metaFailed *prometheus.Desc
	nodeHead, indexed, lag, rpcErrors, unknownEvents                           *prometheus.Desc
}{
	blocks:      prometheus.NewDesc("stakegraph_indexer_blocks_total", "Blocks indexed by this process.", nil, nil),
	logs:        prometheus.NewDesc("stakegraph_indexer_logs_total", "Logs decoded and applied by this process.", nil, nil),
	batches:     prometheus.NewDesc("stakegraph_indexer_batches_total", "Batches of blocks committed by this process.", nil, nil),
	errors:      prometheus.NewDesc("stakegraph_indexer_errors_total", "Indexing steps that failed and were retried.", nil, nil),
	reorgs:      prometheus.NewDesc("stakegraph_indexer_reorgs_total", "Chain reorganisations rolled back.", nil, nil),
	rolledBack:  prometheus.NewDesc("stakegraph_indexer_rolled_back_blocks_total", "Blocks undone by rollbacks.", nil, nil),
	metaFetched: prometheus.NewDesc("stakegraph_indexer_metadata_fetched_total", "Metadata documents fetched and applied.", nil, nil),
	metaFailed:  prometheus.NewDesc("stakegraph_indexer_metadata_errors_total", "Metadata documents that could not be fetched or parsed.", nil, nil),
	nodeHead:    prometheus.NewDesc("stakegraph_indexer_node_head_block", "Latest block of the Ethereum node.", nil, nil),
	indexed:     prometheus.NewDesc("stakegraph_indexer_indexed_block", "Last block whose events are applied (the sync cursor).", nil, nil),
	lag:         prometheus.NewDesc("stakegraph_indexer_lag_blocks", "Blocks between the node's head and the sync cursor.", nil, nil),
	rpcErrors:   prometheus.NewDesc("stakegraph_indexer_rpc_errors_total", "Failed JSON-RPC call attempts by method.", []string{"method"}, nil),
	unknownEvents: prometheus.NewDesc("stakegraph_indexer_unknown_events_total",
		"Logs of the core contracts whose event signature (topic 0) the decoder does not know, by contract and topic.",
		[]string{"contract", "topic"}, nil),
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	d := metricDescs
	for _, x := range []*prometheus.Desc{d.blocks, d.logs, d.batches, d.errors, d.reorgs, d.rolledBack,
		d.metaFetched, d.metaFailed, d.nodeHead, d.indexed, d.lag, d.rpcErrors, d.unknownEvents} {
		ch <- x
	}
}

// Collect implements prometheus.Collector: register the metrics with the
// server's registry to serve them on the admin /metrics endpoint.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	s := m.Snapshot()
	d := metricDescs
	counter := func(desc *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(desc *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(v))
	}
	counter(d.blocks, s.Blocks)
	counter(d.logs, s.Logs)
	counter(d.batches, s.Batches)
	counter(d.errors, s.Errors)
	counter(d.reorgs, s.Reorgs)
	counter(d.rolledBack, s.RolledBack)
	counter(d.metaFetched, s.MetadataFetched)
	counter(d.metaFailed, s.MetadataFailed)
	gauge(d.nodeHead, s.NodeHead)
	gauge(d.indexed, s.IndexedHead)
	gauge(d.lag, s.Lag())
	methods := make([]string, 0, len(s.RPCErrors))
	for k := range s.RPCErrors {
		methods = append(methods, k)
	}
	sort.Strings(methods)
	for _, k := range methods {
		counter(d.rpcErrors, s.RPCErrors[k], k)
	}
	unknown := make([]UnknownEvent, 0, len(s.UnknownEvents))
	for k := range s.UnknownEvents {
		unknown = append(unknown, k)
	}
	sort.Slice(unknown, func(i, j int) bool {
		if unknown[i].Contract != unknown[j].Contract {
			return unknown[i].Contract < unknown[j].Contract
		}
		return unknown[i].Topic < unknown[j].Topic
	})
	for _, k := range unknown {
		counter(d.unknownEvents, s.UnknownEvents[k], k.Contract, k.Topic)
	}
}
