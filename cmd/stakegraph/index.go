package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stakegraph/stakegraph/election"
	"github.com/stakegraph/stakegraph/indexer"
	"github.com/stakegraph/stakegraph/store"
)

var indexCommand = command{
	name:    "index",
	summary: "fill the database from an Ethereum JSON-RPC node and follow the chain head until interrupted",
	flags: func(fs *flag.FlagSet, c *cli) func(context.Context, []string) error {
		f := registerIndexFlags(fs, c, true)
		metricsAddr := fs.String("metrics-addr", c.getenv("STAKEGRAPH_INDEX_METRICS_ADDR"),
			"`address` to serve the indexer's Prometheus /metrics on; empty disables it (env STAKEGRAPH_INDEX_METRICS_ADDR)")
		return func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected arguments %q", args)
			}
			if err := f.check(); err != nil {
				return err
			}
			db, err := c.openDatabase(ctx)
			if err != nil {
				return err
			}
			defer db.Close()
			ix, err := f.build(ctx, c, db.DB)
			if err != nil {
				return err
			}
			elector := f.elector(c, db.DB)
			if *metricsAddr != "" {
				registry := prometheus.NewRegistry()
				registry.MustRegister(append(elector.Collectors(), ix.Metrics())...)
				ln, err := net.Listen("tcp", *metricsAddr)
				if err != nil {
					return fmt.Errorf("metrics listener: %w", err)
				}
				mux := http.NewServeMux()
				mux.Handle("/metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
				srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
				go func() { _ = srv.Serve(ln) }()
				defer srv.Close()
				c.logger.Info("serving indexer metrics", "addr", ln.Addr().String())
			}
			if isTerminal(c.stderr) {
				pctx, stop := context.WithCancel(ctx)
				defer stop()
				go indexer.ReportProgress(pctx, c.stderr, ix.Metrics(), time.Second)
			}
			c.logger.Info("indexing", "network", c.network.Name, "confirmations", f.confirmations)
			return elector.Run(ctx, ix.Run)
		}
	},
}

// indexFlags are the indexer's settings, shared by `index` and `serve --index`.
type indexFlags struct {
	enabled       bool // serve --index
	rpcURL        string
	fromBlock     uint64
	confirmations uint64
	contracts     string
	prices        string
	ethSupply     string
	ipfsGateway   string
	noMetadata    bool
	callTimeout   time.Duration
	pollInterval  time.Duration
	maxRange      uint64
	maxResponse   uint64
	leaderRetry   time.Duration
}

// registerIndexFlags adds the indexer's flags to fs. standalone is false for
// serve, which also gets --index to turn the indexer on.
func registerIndexFlags(fs *flag.FlagSet, c *cli, standalone bool) *indexFlags {
	f := &indexFlags{}
	if !standalone {
		fs.BoolVar(&f.enabled, "index", false, "also run the chain indexer in this process (needs --rpc-url)")
	}
	env := func(name string, fallback uint64) uint64 {
		if v, err := strconv.ParseUint(c.getenv(name), 10, 64); err == nil {
			return v
		}
		return fallback
	}
	fs.StringVar(&f.rpcURL, "rpc-url", c.getenv("STAKEGRAPH_RPC_URL"), "Ethereum JSON-RPC `URL` (http, https, ws or wss) (env STAKEGRAPH_RPC_URL)")
	fs.Uint64Var(&f.fromBlock, "from-block", env("STAKEGRAPH_FROM_BLOCK", 0), "first `block` to index into an empty database; 0 means the network's start block (env STAKEGRAPH_FROM_BLOCK)")
	fs.Uint64Var(&f.confirmations, "confirmations", env("STAKEGRAPH_CONFIRMATIONS", 12), "stay this many `blocks` behind the node's head (env STAKEGRAPH_CONFIRMATIONS)")
	fs.StringVar(&f.contracts, "contracts", c.getenv("STAKEGRAPH_CONTRACTS"), "JSON `file` overriding the network's contracts, start block and strategies (env STAKEGRAPH_CONTRACTS)")
	fs.StringVar(&f.prices, "prices", envOr(c.getenv, "STAKEGRAPH_PRICES", "prices.json"), "JSON `file` of token ETH prices by token address; a missing file leaves prices unset (env STAKEGRAPH_PRICES)")
	fs.StringVar(&f.ethSupply, "eth-supply", envOr(c.getenv, "STAKEGRAPH_ETH_SUPPLY", "eth-supply.json"),
		"JSON `file` with the ETH supply, {\"ethSupply\": \"<ETH>\"}, for the restaking ratio; a missing file leaves it unknown (env STAKEGRAPH_ETH_SUPPLY)")
	fs.StringVar(&f.ipfsGateway, "ipfs-gateway", envOr(c.getenv, "STAKEGRAPH_IPFS_GATEWAY", "https://ipfs.io/ipfs/"), "HTTP gateway `URL` prefix for ipfs:// metadata URIs (env STAKEGRAPH_IPFS_GATEWAY)")
	fs.BoolVar(&f.noMetadata, "no-metadata", false, "do not fetch AVS and operator metadata documents")
	fs.DurationVar(&f.callTimeout, "rpc-timeout", 30*time.Second, "`duration` one JSON-RPC call may take before it is retried")
	fs.DurationVar(&f.pollInterval, "poll-interval", 12*time.Second, "`wait` for new blocks once caught up")
	fs.Uint64Var(&f.maxRange, "max-range", 50000, "most `blocks` asked of eth_getLogs at once (the range adapts below it)")
	fs.Uint64Var(&f.maxResponse, "rpc-max-response", env("STAKEGRAPH_RPC_MAX_RESPONSE", indexer.DefaultMaxResponse),
		"largest JSON-RPC answer in `bytes` read from the node; a larger eth_getLogs answer is asked again for fewer blocks (env STAKEGRAPH_RPC_MAX_RESPONSE)")
	fs.DurationVar(&f.leaderRetry, "leader-retry", election.DefaultRetryInterval,
		"how often a process that waits while another indexes the database tries to take over (`duration`); one process indexes at a time")
	return f
}

// elector returns the election of the one process that indexes the
// database of db: the others wait, and one of them takes over within
// --leader-retry when the indexing process stops, dies or loses its
// connection.
func (f *indexFlags) elector(c *cli, db *store.DB) *election.Elector {
	return election.New(election.Config{
		DB: db, Key: store.IndexerLockKey, Role: "indexer", RetryInterval: f.leaderRetry, Logger: c.logger,
	})
}

// check validates the flags of an indexer that is to run.
func (f *indexFlags) check() error {
	if f.rpcURL == "" {
		return usagef("--rpc-url is required")
	}
	if f.maxRange == 0 {
		return usagef("--max-range must be positive")
	}
	if f.leaderRetry <= 0 {
		return usagef("--leader-retry must be positive")
	}
	if f.maxResponse == 0 || f.maxResponse > math.MaxInt64 {
		return usagef("--rpc-max-response must be a positive number of bytes below 2^63")
	}
	return nil
}

// build connects to the node and assembles the indexer.
func (f *indexFlags) build(ctx context.Context, c *cli, db *store.DB) (*indexer.Indexer, error) {
	network := c.network
	if f.contracts != "" {
		n, err := indexer.LoadNetworkFile(f.contracts, network)
		if err != nil {
			return nil, err
		}
		network = n
	}
	metrics := indexer.NewMetrics()
	node, err := indexer.Dial(ctx, f.rpcURL, indexer.NodeOptions{
		CallTimeout: f.callTimeout, MaxResponse: int64(f.maxResponse), Metrics: metrics, Logger: c.logger,
	})
	if err != nil {
		return nil, err
	}
	cfg := indexer.Config{
		Network:       network,
		FromBlock:     f.fromBlock,
		Confirmations: f.confirmations,
		MaxRange:      f.maxRange,
		PollInterval:  f.pollInterval,
		Metrics:       metrics,
		Logger:        c.logger,
	}
	if _, err := os.Stat(f.prices); err == nil {
		cfg.Prices = indexer.PriceFile{Path: f.prices}
	} else if errors.Is(err, os.ErrNotExist) {
		c.logger.Warn("no price file; token ETH prices stay as stored (0 for new tokens), so ETH values of liquid tokens are 0",
			"prices", f.prices)
	} else {
		return nil, fmt.Errorf("price file: %w", err)
	}
	if _, err := os.Stat(f.ethSupply); err == nil {
		cfg.ETHSupply = indexer.SupplyFile{Path: f.ethSupply}
	} else if errors.Is(err, os.ErrNotExist) {
		c.logger.Info("no ETH supply file; the restaking ratio stays unknown until one is recorded", "eth_supply", f.ethSupply)
	} else {
		return nil, fmt.Errorf("ETH supply file: %w", err)
	}
	if !f.noMetadata {
		cfg.Metadata = indexer.NewMetadataFetcher(indexer.MetadataOptions{IPFSGateway: f.ipfsGateway, Logger: c.logger})
	}
	return indexer.New(db, node, cfg)
}

// startIndexer runs the indexer of `serve --index` beside the server,
// reporting its metrics and its leadership through registry: every
// instance may run with --index, and one of them at a time indexes (see
// indexFlags.elector). The returned function stops it and waits for it.
// Without --index it does nothing. A fatal indexer error (the node serves
// another chain) is logged; the API keeps serving what is stored.
func startIndexer(ctx context.Context, c *cli, f *indexFlags, db *store.DB, registry *prometheus.Registry) (stop func(), err error) {
	if !f.enabled {
		return func() {}, nil
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	ix, err := f.build(ctx, c, db)
	if err != nil {
		return nil, err
	}
	elector := f.elector(c, db)
	for _, m := range append(elector.Collectors(), ix.Metrics()) {
		if err := registry.Register(m); err != nil {
			return nil, fmt.Errorf("register indexer metrics: %w", err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := elector.Run(ctx, ix.Run); err != nil {
			c.logger.Error("the indexer stopped; the API keeps serving the stored data", "err", err)
		}
	}()
	return func() { cancel(); <-done }, nil
}
