package indexer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/store"
)

// Config configures an Indexer. Zero values take the defaults documented
// on each field.
type Config struct {
	// Network names the deployment: contracts, start block, strategies and
	// chain id (0 skips the chain id check).
	Network chain.Network
	// FromBlock, when non-zero, is where indexing of an empty database
	// starts instead of Network.StartBlock. A database with a sync cursor
	// always resumes from it.
	FromBlock uint64
	// Confirmations is how far behind the node's head indexing stays.
	Confirmations uint64
	// PollInterval is the wait for new blocks once caught up. Default 12s.
	PollInterval time.Duration
	// InitialRange and MaxRange bound the blocks of one eth_getLogs query
	// and batch. Defaults 2000 and 50000.
	InitialRange, MaxRange uint64
	// TargetLogs: the range grows while batches bring fewer logs than this
	// and shrinks when they bring more than four times as many. Default 2000.
	TargetLogs int
	// ReorgWindow: within this many blocks of the node's head every block's
	// hash is recorded and the chain's linkage checked. Default 256.
	ReorgWindow uint64
	// KeepHashes: block hashes older than this many blocks below the cursor
	// are forgotten. Default 20000.
	KeepHashes uint64
	// RefreshInterval spaces aggregate refreshes while backfilling (once
	// caught up every batch refreshes). Default 1m.
	RefreshInterval time.Duration
	// ReferenceInterval spaces re-reads of strategy rates, token prices and
	// the withdrawal delay. Default 10m.
	ReferenceInterval time.Duration
	// Prices is the token price source; nil keeps stored prices.
	Prices PriceSource
	// ETHSupply is the ETH supply source; nil keeps the recorded supply.
	ETHSupply SupplySource
	// Metadata fetches metadata documents; nil disables fetching.
	Metadata *MetadataFetcher
	// MetadataRetry is the first wait before a failed document is tried
	// again (doubling up to an hour). Default 1m.
	MetadataRetry time.Duration
	Metrics       *Metrics
	Logger        *slog.Logger
	// Now is the clock of refreshes (daily snapshots, APY windows).
	// Default time.Now.
	Now func() time.Time

	// beforeCommit, when set, runs inside each batch transaction just
	// before it commits (tests use it to kill the indexer mid-batch).
	beforeCommit func(ctx context.Context, to uint64) error
}

func (c Config) withDefaults() Config {
	if c.PollInterval <= 0 {
		c.PollInterval = 12 * time.Second
	}
	if c.InitialRange == 0 {
		c.InitialRange = 2000
	}
	if c.MaxRange == 0 {
		c.MaxRange = 50000
	}
	if c.InitialRange > c.MaxRange {
		c.InitialRange = c.MaxRange
	}
	if c.TargetLogs <= 0 {
		c.TargetLogs = 2000
	}
	if c.ReorgWindow == 0 {
		c.ReorgWindow = 256
	}
	if c.KeepHashes == 0 {
		c.KeepHashes = 20000
	}
	if c.RefreshInterval <= 0 {
		c.RefreshInterval = time.Minute
	}
	if c.ReferenceInterval <= 0 {
		c.ReferenceInterval = 10 * time.Minute
	}
	if c.MetadataRetry <= 0 {
		c.MetadataRetry = time.Minute
	}
	if c.Metrics == nil {
		c.Metrics = NewMetrics()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// ErrFatal marks errors that retrying cannot fix (the node serves another
// chain, the database holds data of another origin); Run returns them.
var ErrFatal = errors.New("indexer cannot continue")

// errChainMoved says the node's chain changed while a batch was read.
var errChainMoved = errors.New("the chain changed while the batch was read")

// avsStateWindow is how many blocks below the head an AVS's state is read
// at: well inside the 128 recent blocks whose state every full node keeps.
const avsStateWindow = 64

// avsObservationLogIndex is the log index given to observations of an
// AVS's restakeable strategies made at a block: after every real log of it.
const avsObservationLogIndex = math.MaxInt32

// Indexer fills a store from a node.
type Indexer struct {
	db   *store.DB
	node *Node
	dec  *Decoder
	cfg  Config
	log  *slog.Logger
	m    *Metrics

	rangeSize     uint64
	lastRefresh   time.Time
	needRefresh   bool
	lastReference time.Time
	polledAllAVS  bool

	metaMu    sync.Mutex
	metaRetry map[metadataKey]metadataAttempt
}

type metadataKey struct {
	subject chain.Subject
	address string
	uri     string
}

type metadataAttempt struct {
	next time.Time
	wait time.Duration
}

// New returns an indexer of cfg.Network that reads node and writes db.
func New(db *store.DB, node *Node, cfg Config) (*Indexer, error) {
	cfg = cfg.withDefaults()
	dec, err := NewDecoder(cfg.Network.Contracts)
	if err != nil {
		return nil, err
	}
	dec.SetReporting(cfg.Logger, cfg.Metrics)
	return &Indexer{
		db: db, node: node, dec: dec, cfg: cfg, log: cfg.Logger, m: cfg.Metrics,
		rangeSize: cfg.InitialRange,
		metaRetry: make(map[metadataKey]metadataAttempt),
	}, nil
}

// Metrics returns the indexer's metrics.
func (ix *Indexer) Metrics() *Metrics { return ix.m }

// Run indexes until ctx ends, then returns nil. Node and database failures
// are logged, counted and retried with backoff; only an ErrFatal error
// (wrong chain, foreign data) is returned.
func (ix *Indexer) Run(ctx context.Context) error {
	wait := time.Second
	sleep := func(d time.Duration) bool {
		select {
		case <-time.After(d):
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		err := ix.Setup(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrFatal) {
			return err
		}
		ix.m.errors.Add(1)
		ix.log.Error("indexer setup failed; retrying", "err", err, "wait", wait)
		if !sleep(wait) {
			return nil
		}
		wait = min(wait*2, time.Minute)
	}
	if ix.cfg.Metadata != nil {
		go ix.metadataLoop(ctx)
	}
	wait = time.Second
	lastLog, logged := time.Now(), ix.m.Snapshot()
	for {
		if time.Since(lastLog) >= time.Minute {
			// For logs that are not a terminal: the progress line's facts.
			cur := ix.m.Snapshot()
			ix.log.Info("indexing progress", "progress", ProgressLine(logged, cur, time.Since(lastLog)),
				"indexed_block", cur.IndexedHead, "lag_blocks", cur.Lag())
			lastLog, logged = time.Now(), cur
		}
		advanced, err := ix.Step(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			if errors.Is(err, ErrFatal) {
				return err
			}
			ix.m.errors.Add(1)
			ix.log.Error("indexing step failed; retrying", "err", err, "wait", wait)
			if !sleep(wait) {
				return nil
			}
			wait = min(wait*2, time.Minute)
			continue
		}
		wait = time.Second
		if advanced {
			continue
		}
		if err := ix.maintain(ctx); err != nil && ctx.Err() == nil {
			ix.m.errors.Add(1)
			ix.log.Error("indexer maintenance failed", "err", err)
		}
		if !sleep(ix.cfg.PollInterval) {
			return nil
		}
	}
}

// Setup checks the node and the database, loads reference data and
// refreshes the aggregates (completing whatever a crash interrupted).
func (ix *Indexer) Setup(ctx context.Context) error {
	if want := ix.cfg.Network.ChainID; want != 0 {
		got, err := ix.node.ChainID(ctx)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("%w: the node serves chain %d, network %s is chain %d", ErrFatal, got, ix.cfg.Network.Name, want)
		}
	}
	if err := ix.db.EnsureNetwork(ctx, ix.cfg.Network.Name); err != nil {
		return fmt.Errorf("%w: %v", ErrFatal, err)
	}
	if _, ok, err := ix.db.Cursor(ctx); err != nil {
		return err
	} else if !ok {
		has, err := ix.db.HasEvents(ctx)
		if err != nil {
			return err
		}
		if has {
			return fmt.Errorf("%w: the database holds events but no sync cursor (demo data?); index into an empty database", ErrFatal)
		}
	}
	if err := ix.UpdateReference(ctx); err != nil {
		return err
	}
	return ix.refresh(ctx)
}

// CatchUp runs steps until the index reaches the node's head less the
// confirmations. It does not fetch metadata (see FetchMetadata).
func (ix *Indexer) CatchUp(ctx context.Context) error {
	for {
		advanced, err := ix.Step(ctx)
		if err != nil {
			return err
		}
		if !advanced {
			return ix.maintain(ctx)
		}
	}
}

// maintain runs the work due once the index is caught up.
func (ix *Indexer) maintain(ctx context.Context) error {
	if !ix.polledAllAVS {
		if err := ix.pollAllAVSStrategies(ctx); err != nil {
			return err
		}
		ix.polledAllAVS = true
	}
	if ix.cfg.Now().Sub(ix.lastReference) >= ix.cfg.ReferenceInterval {
		if err := ix.UpdateReference(ctx); err != nil {
			return err
		}
		ix.needRefresh = true
	}
	if ix.needRefresh {
		return ix.refresh(ctx)
	}
	return nil
}

func (ix *Indexer) refresh(ctx context.Context) error {
	if err := ix.db.InTx(ctx, func(tx *store.Tx) error { return tx.Refresh(ctx, ix.cfg.Now()) }); err != nil {
		return fmt.Errorf("refresh: %w", err)
	}
	ix.needRefresh = false
	ix.lastRefresh = time.Now()
	return nil
}

// Step indexes the next batch of blocks, or rolls back a reorganisation. It
// reports whether it made progress; false means the index is caught up.
func (ix *Indexer) Step(ctx context.Context) (bool, error) {
	head, err := ix.node.BlockNumber(ctx)
	if err != nil {
		return false, err
	}
	ix.m.nodeHead.Store(head)
	if head < ix.cfg.Confirmations {
		return false, nil
	}
	safe := head - ix.cfg.Confirmations
	ix.m.targetHead.Store(safe)

	cur, resumed, err := ix.db.Cursor(ctx)
	if err != nil {
		return false, err
	}
	from := ix.cfg.Network.StartBlock
	if ix.cfg.FromBlock != 0 {
		from = ix.cfg.FromBlock
	}
	if resumed {
		ix.m.indexedHead.Store(cur.Block)
		if cur.Block > head {
			// The node is behind what was indexed (a lagging node, or a
			// reorg to a shorter chain): wait for it.
			return false, nil
		}
		ref, err := ix.node.Block(ctx, cur.Block)
		if err != nil {
			return false, err
		}
		if ref.Hash != common.HexToHash(cur.Hash) {
			return true, ix.rollback(ctx, cur)
		}
		from = cur.Block + 1
	}
	if from > safe {
		return false, nil
	}
	to := min(safe, from+ix.rangeSize-1)

	logs, to, err := ix.fetchLogs(ctx, from, to)
	if err != nil {
		return false, err
	}
	nearHead := to+ix.cfg.ReorgWindow >= head

	// The blocks whose headers are needed: the batch's last (the cursor),
	// those of logs that came without a timestamp, and near the head every
	// block, so that a reorg of any of them is noticed.
	need := map[uint64]bool{to: true}
	for i := range logs {
		if logs[i].BlockTimestamp == 0 {
			need[logs[i].BlockNumber] = true
		}
	}
	if nearHead {
		for n := from; n <= to; n++ {
			need[n] = true
		}
	}
	nums := make([]uint64, 0, len(need))
	for n := range need {
		nums = append(nums, n)
	}
	sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
	refs, err := ix.node.Blocks(ctx, nums)
	if err != nil {
		return false, err
	}
	if err := checkConsistency(logs, refs, from, to, nearHead, resumed, cur); err != nil {
		return false, err
	}

	batch, obs, err := ix.decode(logs, refs)
	if err != nil {
		return false, err
	}
	last := refs[to]
	batch.Head = chain.Position{BlockNumber: to, BlockHash: hexLower(last.Hash[:]), BlockTime: last.Time}

	// An AVS's restakeable strategies are read from its service manager
	// at each block that named it (so the observation does not depend on
	// how blocks were batched). Full nodes keep the state of recent blocks
	// only, so the reads are made within avsStateWindow blocks of the head;
	// an AVS seen further back is read once the index is caught up.
	if len(obs.TouchedAVS) > 0 {
		recent := make(map[AVSBlock]chain.Position, len(obs.TouchedAVS))
		for k, pos := range obs.TouchedAVS {
			if k.Block+avsStateWindow >= head {
				recent[k] = pos
			}
		}
		batch.AVSStrategies, err = ix.readAVSStrategies(ctx, recent)
		if err != nil {
			return false, err
		}
	}
	if len(obs.WhitelistedStrategies) > 0 {
		// A new strategy gets a placeholder row from the first event that
		// names it; the next reference update (made due now) describes and
		// prices it.
		ix.lastReference = time.Time{}
	}

	var blocks []store.IndexedBlock
	for _, n := range nums {
		r := refs[n]
		blocks = append(blocks, store.IndexedBlock{Number: n, Hash: hexLower(r.Hash[:])})
	}
	for i := range logs {
		if n := logs[i].BlockNumber; !need[n] {
			need[n] = true
			blocks = append(blocks, store.IndexedBlock{Number: n, Hash: hexLower(logs[i].BlockHash[:])})
		}
	}
	caughtUp := to == safe
	err = ix.db.InTx(ctx, func(tx *store.Tx) error {
		// Lock the cursor and check nobody moved it meanwhile (a second
		// indexer on the same database).
		now, ok, err := tx.Cursor(ctx)
		if err != nil {
			return err
		}
		if ok != resumed || now != cur {
			return fmt.Errorf("the sync cursor moved under this indexer (is another indexer running?)")
		}
		if err := tx.ApplyBatch(ctx, &batch); err != nil {
			return err
		}
		if err := tx.SetCursor(ctx, store.Cursor{Block: to, Hash: batch.Head.BlockHash}, blocks); err != nil {
			return err
		}
		if to > ix.cfg.KeepHashes {
			if err := tx.PruneIndexedBlocks(ctx, to-ix.cfg.KeepHashes); err != nil {
				return err
			}
		}
		if caughtUp {
			if err := tx.Refresh(ctx, ix.cfg.Now()); err != nil {
				return err
			}
		}
		if ix.cfg.beforeCommit != nil {
			return ix.cfg.beforeCommit(ctx, to)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("apply blocks %d-%d: %w", from, to, err)
	}
	ix.m.blocks.Add(to - from + 1)
	ix.m.logs.Add(uint64(len(logs)))
	ix.m.batches.Add(1)
	ix.m.indexedHead.Store(to)
	ix.adaptRange(len(logs))
	if caughtUp {
		ix.needRefresh = false
		ix.lastRefresh = time.Now()
	} else {
		ix.needRefresh = true
		if time.Since(ix.lastRefresh) >= ix.cfg.RefreshInterval {
			if err := ix.refresh(ctx); err != nil {
				return true, err
			}
		}
	}
	ix.log.Debug("indexed batch", "from", from, "to", to, "logs", len(logs), "events", batch.Len())
	return true, nil
}

// fetchLogs reads the logs of [from, to], halving the range while the node
// refuses it as too large. It returns the logs and the range's actual end.
func (ix *Indexer) fetchLogs(ctx context.Context, from, to uint64) ([]types.Log, uint64, error) {
	for {
		// Every log of the core contracts, not only the known events':
		// the decoder reports the unknown ones.
		logs, err := ix.node.Logs(ctx, from, to, ix.dec.Addresses(), nil)
		if err == nil {
			return logs, to, nil
		}
		if !errors.Is(err, ErrRangeTooLarge) || to == from {
			return nil, 0, err
		}
		to = from + (to-from)/2
		ix.rangeSize = to - from + 1
		ix.log.Info("node refused the log range; shrinking it", "from", from, "blocks", ix.rangeSize, "err", err)
	}
}

// adaptRange grows the block range after a batch with few logs and shrinks
// it after one with many.
func (ix *Indexer) adaptRange(logs int) {
	switch {
	case logs < ix.cfg.TargetLogs/2:
		ix.rangeSize = min(ix.rangeSize*2, ix.cfg.MaxRange)
	case logs > ix.cfg.TargetLogs*4 && ix.rangeSize > 1:
		ix.rangeSize /= 2
	}
}

// checkConsistency verifies that the logs and headers of a batch come from
// one chain: every log's block hash matches the header read for its block,
// and near the head the headers link to each other and to the cursor.
func checkConsistency(logs []types.Log, refs map[uint64]BlockRef, from, to uint64, nearHead, resumed bool, cur store.Cursor) error {
	for i := range logs {
		if r, ok := refs[logs[i].BlockNumber]; ok && r.Hash != logs[i].BlockHash {
			return fmt.Errorf("%w: log of block %d has hash %s, header %s", errChainMoved,
				logs[i].BlockNumber, logs[i].BlockHash.Hex(), r.Hash.Hex())
		}
	}
	if !nearHead {
		return nil
	}
	if resumed && refs[from].ParentHash != common.HexToHash(cur.Hash) {
		return fmt.Errorf("%w: block %d does not follow the indexed block %d", errChainMoved, from, cur.Block)
	}
	for n := from + 1; n <= to; n++ {
		if refs[n].ParentHash != refs[n-1].Hash {
			return fmt.Errorf("%w: block %d does not follow block %d", errChainMoved, n, n-1)
		}
	}
	return nil
}

// decode turns the logs of a batch into events, in chain order.
func (ix *Indexer) decode(logs []types.Log, refs map[uint64]BlockRef) (chain.Batch, Observations, error) {
	sort.Slice(logs, func(i, j int) bool {
		if logs[i].BlockNumber != logs[j].BlockNumber {
			return logs[i].BlockNumber < logs[j].BlockNumber
		}
		return logs[i].Index < logs[j].Index
	})
	var b chain.Batch
	var obs Observations
	for i := range logs {
		lg := &logs[i]
		t := time.Unix(int64(lg.BlockTimestamp), 0).UTC()
		if lg.BlockTimestamp == 0 {
			t = refs[lg.BlockNumber].Time
		}
		if err := ix.dec.Decode(lg, t, &b, &obs); err != nil {
			return chain.Batch{}, Observations{}, err
		}
	}
	return b, obs, nil
}

// rollback finds the newest indexed block that is still on the node's
// chain and undoes everything above it.
func (ix *Indexer) rollback(ctx context.Context, cur store.Cursor) error {
	var ancestor *BlockRef
	below := cur.Block
	for ancestor == nil {
		var candidates []store.IndexedBlock
		if err := ix.db.InTx(ctx, func(tx *store.Tx) (err error) {
			candidates, err = tx.IndexedBlocks(ctx, below, 64)
			return err
		}); err != nil {
			return err
		}
		if len(candidates) == 0 {
			return fmt.Errorf("%w: the node's chain shares no recorded block with the index below block %d; "+
				"re-index into an empty database", ErrFatal, cur.Block)
		}
		for _, c := range candidates {
			ref, err := ix.node.Block(ctx, c.Number)
			if err != nil {
				return err
			}
			if ref.Hash == common.HexToHash(c.Hash) {
				ancestor = &ref
				break
			}
		}
		last := candidates[len(candidates)-1].Number
		if last == 0 {
			break
		}
		below = last - 1
	}
	if ancestor == nil {
		return fmt.Errorf("%w: no common ancestor with the node's chain; re-index into an empty database", ErrFatal)
	}
	err := ix.db.InTx(ctx, func(tx *store.Tx) error {
		now, ok, err := tx.Cursor(ctx)
		if err != nil {
			return err
		}
		if !ok || now != cur {
			return errors.New("the sync cursor moved during the rollback")
		}
		if err := tx.RollbackAfter(ctx, ancestor.Number); err != nil {
			return err
		}
		keep := make([]string, len(ix.cfg.Network.Strategies))
		for i, s := range ix.cfg.Network.Strategies {
			keep[i] = s.Address
		}
		if err := tx.DeleteUnusedStrategies(ctx, keep); err != nil {
			return err
		}
		pos := chain.Position{BlockNumber: ancestor.Number, BlockHash: hexLower(ancestor.Hash[:]), BlockTime: ancestor.Time}
		if err := tx.SetHead(ctx, pos); err != nil {
			return err
		}
		if err := tx.SetCursor(ctx, store.Cursor{Block: ancestor.Number, Hash: pos.BlockHash}, nil); err != nil {
			return err
		}
		return tx.Refresh(ctx, ix.cfg.Now())
	})
	if err != nil {
		return fmt.Errorf("roll back to block %d: %w", ancestor.Number, err)
	}
	ix.m.reorgs.Add(1)
	ix.m.rolledBack.Add(cur.Block - ancestor.Number)
	ix.m.indexedHead.Store(ancestor.Number)
	ix.log.Warn("chain reorganisation: rolled back to the common ancestor",
		"from_block", cur.Block, "to_block", ancestor.Number)
	return nil
}
