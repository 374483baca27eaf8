package indexer

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/store"
)

// oneShare is 1e18 shares, the argument of sharesToUnderlyingView whose
// answer the store keeps as the strategy's rate.
var oneShare = new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)

// errNoAnswer says a view call gave no usable answer (no contract there, a
// revert, or output of the wrong shape).
var errNoAnswer = errors.New("no usable answer")

// callView calls a view function of the embedded ABI on addr at block (nil:
// latest) and returns its outputs.
func (ix *Indexer) callView(ctx context.Context, addr string, block *big.Int, method string, args ...any) ([]any, error) {
	data, err := EigenLayerABI.Pack(method, args...)
	if err != nil {
		return nil, fmt.Errorf("pack %s: %w", method, err)
	}
	out, err := ix.node.Call(ctx, common.HexToAddress(addr), data, block)
	if errors.Is(err, ErrReverted) || (err != nil && block != nil && stateUnavailable(err)) {
		return nil, fmt.Errorf("%w: %s on %s: %v", errNoAnswer, method, addr, err)
	}
	if err != nil {
		return nil, err
	}
	vals, err := EigenLayerABI.Unpack(method, out)
	if err != nil || len(vals) == 0 {
		return nil, fmt.Errorf("%w: %s on %s returned %d bytes", errNoAnswer, method, addr, len(out))
	}
	return vals, nil
}

// stateUnavailable recognises a node's answer that it no longer keeps the
// state of the block a call asked for (a pruned, non-archive node).
func stateUnavailable(err error) bool {
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"missing trie node", "state not available", "historical state", "pruned",
		"state is not available", "required historical state"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// UpdateReference reads every known strategy's exchange rate and underlying
// token, the tokens' ETH prices from the price source and the minimum
// withdrawal delay, and stores them. A view that gives no answer keeps the
// stored value; a price source that fails keeps the stored prices (the whole
// update waits for the next round); node failures are returned.
func (ix *Indexer) UpdateReference(ctx context.Context) error {
	var prices map[string]string
	if ix.cfg.Prices != nil {
		p, err := ix.cfg.Prices.ETHPrices(ctx)
		if err != nil {
			ix.log.Warn("price source failed; keeping stored prices and rates until the next round", "err", err)
			ix.lastReference = ix.cfg.Now()
			return nil
		}
		prices = p
	}
	var supply string
	if ix.cfg.ETHSupply != nil {
		v, err := ix.cfg.ETHSupply.ETHSupply(ctx)
		if err != nil {
			ix.log.Warn("ETH supply source failed; keeping the recorded supply", "err", err)
		} else {
			supply = v
		}
	}
	addrs := map[string]bool{}
	for _, s := range ix.cfg.Network.Strategies {
		addrs[s.Address] = true
	}
	stored, err := ix.db.StrategyAddresses(ctx)
	if err != nil {
		return err
	}
	for _, a := range stored {
		addrs[a] = true
	}
	list := make([]string, 0, len(addrs))
	for a := range addrs {
		list = append(list, a)
	}
	sort.Strings(list)
	strategies, tokens, err := ix.describeStrategiesPriced(ctx, list, prices)
	if err != nil {
		return err
	}
	// Tokens priced by the source that no strategy holds (reward tokens).
	known := map[string]bool{}
	for _, t := range tokens {
		known[t.Address] = true
	}
	extra := make([]string, 0)
	for a := range prices {
		if !known[a] {
			extra = append(extra, a)
		}
	}
	sort.Strings(extra)
	for _, a := range extra {
		t, err := ix.describeToken(ctx, a, "", 0)
		if err != nil {
			return err
		}
		t.ETHPrice = prices[a]
		tokens = append(tokens, t)
	}

	var delay *uint64
	if dm := ix.cfg.Network.Contracts.DelegationManager; dm != "" {
		vals, err := ix.callView(ctx, dm, nil, "minWithdrawalDelayBlocks")
		switch {
		case errors.Is(err, errNoAnswer):
			ix.log.Warn("cannot read the minimum withdrawal delay; keeping the stored one", "err", err)
		case err != nil:
			return err
		default:
			if v, ok := vals[0].(*big.Int); ok && v.IsUint64() {
				d := v.Uint64()
				delay = &d
			}
		}
	}
	if err := ix.db.InTx(ctx, func(tx *store.Tx) error {
		if err := tx.UpsertTokens(ctx, tokens); err != nil {
			return err
		}
		if err := tx.UpsertStrategies(ctx, strategies); err != nil {
			return err
		}
		if supply != "" {
			if err := tx.RecordETHSupply(ctx, ix.cfg.Now(), supply); err != nil {
				return err
			}
		}
		if delay != nil {
			return tx.SetMinWithdrawalDelay(ctx, *delay)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("store reference data: %w", err)
	}
	ix.lastReference = ix.cfg.Now()
	return nil
}

// describeStrategiesPriced reads each strategy's rate and underlying token
// and prices them from prices (by token address).
func (ix *Indexer) describeStrategiesPriced(ctx context.Context, addrs []string, prices map[string]string) ([]store.Strategy, []store.Token, error) {
	var strategies []store.Strategy
	var tokens []store.Token
	seenToken := map[string]store.Token{}
	for _, addr := range addrs {
		addr = strings.ToLower(addr)
		if addr == chain.BeaconStrategy {
			s, ok := ix.cfg.Network.Strategy(addr)
			if !ok {
				s = chain.Strategy{Symbol: "Beacon ETH", Address: addr, Decimals: 18, Kind: chain.KindBeacon}
			}
			strategies = append(strategies, store.Strategy{Strategy: s, SharesToUnderlying: new(big.Int).Set(oneShare), ETHPrice: "1"})
			continue
		}
		s, known := ix.cfg.Network.Strategy(addr)
		if !known {
			s = chain.Strategy{Address: addr, Decimals: 18, Kind: chain.KindLiquid}
		}
		if s.UnderlyingToken == "" {
			vals, err := ix.callView(ctx, addr, nil, "underlyingToken")
			switch {
			case errors.Is(err, errNoAnswer):
				ix.log.Debug("strategy has no underlyingToken view", "strategy", addr, "err", err)
			case err != nil:
				return nil, nil, err
			default:
				if a, ok := vals[0].(common.Address); ok && a != (common.Address{}) {
					s.UnderlyingToken = addrLower(a)
				}
			}
		}
		var rate *big.Int
		vals, err := ix.callView(ctx, addr, nil, "sharesToUnderlyingView", oneShare)
		switch {
		case errors.Is(err, errNoAnswer):
			ix.log.Warn("cannot read a strategy's exchange rate; keeping the stored one", "strategy", addr, "err", err)
		case err != nil:
			return nil, nil, err
		default:
			if v, ok := vals[0].(*big.Int); ok {
				rate = new(big.Int).Set(v)
			}
		}
		price := "0"
		if s.UnderlyingToken != "" {
			if p, ok := prices[s.UnderlyingToken]; ok {
				price = p
			}
			t, seen := seenToken[s.UnderlyingToken]
			if !seen {
				var err error
				symbol, decimals := s.Symbol, s.Decimals
				if !known {
					symbol, decimals = "", 0 // read them from the token
				}
				t, err = ix.describeToken(ctx, s.UnderlyingToken, symbol, decimals)
				if err != nil {
					return nil, nil, err
				}
				t.ETHPrice = price
				seenToken[s.UnderlyingToken] = t
				tokens = append(tokens, t)
			}
			if !known {
				s.Symbol, s.Decimals = t.Symbol, t.Decimals
			}
		}
		if s.Symbol == "" {
			s.Symbol = addr
		}
		strategies = append(strategies, store.Strategy{Strategy: s, SharesToUnderlying: rate, ETHPrice: price})
	}
	return strategies, tokens, nil
}

// describeToken returns a token's symbol and decimals: the given ones when
// set, else read from the token.
func (ix *Indexer) describeToken(ctx context.Context, addr, symbol string, decimals int) (store.Token, error) {
	t := store.Token{Address: addr, Symbol: symbol, Decimals: decimals, ETHPrice: "0"}
	if t.Symbol == "" {
		vals, err := ix.callView(ctx, addr, nil, "symbol")
		switch {
		case errors.Is(err, errNoAnswer):
			t.Symbol = addr
		case err != nil:
			return t, err
		default:
			t.Symbol, _ = vals[0].(string)
			if t.Symbol == "" {
				t.Symbol = addr
			}
		}
	}
	if t.Decimals == 0 {
		t.Decimals = 18
		vals, err := ix.callView(ctx, addr, nil, "decimals")
		switch {
		case errors.Is(err, errNoAnswer):
		case err != nil:
			return t, err
		default:
			if d, ok := vals[0].(uint8); ok && d <= 77 {
				t.Decimals = int(d)
			}
		}
	}
	return t, nil
}

// readAVSStrategies reads the restakeable strategies of each AVS from its
// service manager at each block it was named in; the observation is placed
// after every log of that block, so that it does not depend on how blocks
// were batched. An AVS that does not answer (not a service manager, or one
// without the view) is left out, keeping what is stored; node failures are
// returned.
func (ix *Indexer) readAVSStrategies(ctx context.Context, at map[AVSBlock]chain.Position) ([]chain.AVSStrategies, error) {
	keys := make([]AVSBlock, 0, len(at))
	for k := range at {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Block != keys[j].Block {
			return keys[i].Block < keys[j].Block
		}
		return keys[i].AVS < keys[j].AVS
	})
	var out []chain.AVSStrategies
	for _, k := range keys {
		pos := at[k]
		pos.LogIndex = avsObservationLogIndex
		pos.TxHash = ""
		vals, err := ix.callView(ctx, k.AVS, new(big.Int).SetUint64(k.Block), "getRestakeableStrategies")
		if errors.Is(err, errNoAnswer) {
			ix.log.Debug("cannot read an AVS's restakeable strategies", "avs", k.AVS, "block", k.Block, "err", err)
			continue
		}
		if err != nil {
			return nil, err
		}
		addrs, ok := vals[0].([]common.Address)
		if !ok {
			continue
		}
		out = append(out, chain.AVSStrategies{Position: pos, AVS: k.AVS, Strategies: addrsLower(addrs)})
	}
	return out, nil
}

// pollAllAVSStrategies reads, at the cursor's block, the restakeable
// strategies of every AVS that has none observed yet: the AVS seen during a
// backfill far behind the head, where the node kept no state to read. It
// runs once the index is caught up.
func (ix *Indexer) pollAllAVSStrategies(ctx context.Context) error {
	avs, err := ix.db.AVSWithoutStrategies(ctx)
	if err != nil || len(avs) == 0 {
		return err
	}
	cur, ok, err := ix.db.Cursor(ctx)
	if err != nil || !ok {
		return err
	}
	ref, err := ix.node.Block(ctx, cur.Block)
	if err != nil {
		return err
	}
	if ref.Hash != common.HexToHash(cur.Hash) {
		return nil // a reorg: the next step rolls back, and this runs again later
	}
	at := make(map[AVSBlock]chain.Position, len(avs))
	for _, a := range avs {
		at[AVSBlock{a, cur.Block}] = chain.Position{BlockNumber: cur.Block, BlockHash: cur.Hash, BlockTime: ref.Time}
	}
	obs, err := ix.readAVSStrategies(ctx, at)
	if err != nil || len(obs) == 0 {
		return err
	}
	return ix.db.InTx(ctx, func(tx *store.Tx) error {
		now, ok, err := tx.Cursor(ctx)
		if err != nil {
			return err
		}
		if !ok || now != cur {
			return nil // the index moved on; this runs again when caught up
		}
		b := chain.Batch{AVSStrategies: obs}
		if err := tx.ApplyBatch(ctx, &b); err != nil {
			return err
		}
		return tx.Refresh(ctx, ix.cfg.Now())
	})
}

// metadataLoop fetches pending metadata documents until ctx ends.
func (ix *Indexer) metadataLoop(ctx context.Context) {
	interval := min(ix.cfg.PollInterval, 30*time.Second)
	for {
		if err := ix.FetchMetadata(ctx); err != nil && ctx.Err() == nil {
			ix.log.Error("metadata round failed", "err", err)
		}
		select {
		case <-time.After(interval):
		case <-ctx.Done():
			return
		}
	}
}

// FetchMetadata fetches the document of every AVS and operator whose
// latest metadata URI has none applied yet, and applies the ones that
// parse. A document that cannot be fetched or parsed leaves the stored
// metadata in place; it is logged, counted and tried again later (after a
// wait that doubles up to an hour). Only database failures are returned.
func (ix *Indexer) FetchMetadata(ctx context.Context) error {
	if ix.cfg.Metadata == nil {
		return nil
	}
	pending, err := ix.db.PendingMetadata(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	due := pending[:0]
	for _, u := range pending {
		ix.metaMu.Lock()
		attempt := ix.metaRetry[metadataKey{u.Subject, u.Address, u.URI}]
		ix.metaMu.Unlock()
		if !now.Before(attempt.next) {
			due = append(due, u)
		}
	}
	// Documents live on many hosts: fetch a few at a time.
	work := make(chan chain.MetadataURIUpdated)
	errs := make(chan error, metadataWorkers)
	var wg sync.WaitGroup
	for range metadataWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range work {
				if err := ix.fetchOneMetadata(ctx, u, now); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var firstErr error
feed:
	for _, u := range due {
		select {
		case work <- u:
		case firstErr = <-errs:
			break feed
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	go func() { wg.Wait(); close(errs) }()
	for err := range errs {
		if firstErr == nil {
			firstErr = err
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return firstErr
}

// metadataWorkers is how many metadata documents are fetched at once.
const metadataWorkers = 4

// fetchOneMetadata fetches and applies the document of one URI update. A
// fetch failure is recorded for a later retry and not returned; database
// failures are.
func (ix *Indexer) fetchOneMetadata(ctx context.Context, u chain.MetadataURIUpdated, now time.Time) error {
	key := metadataKey{u.Subject, u.Address, u.URI}
	doc, err := ix.cfg.Metadata.Fetch(ctx, u)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		ix.metaMu.Lock()
		wait := ix.metaRetry[key].wait * 2
		if wait == 0 {
			wait = ix.cfg.MetadataRetry
		}
		wait = min(wait, time.Hour)
		ix.metaRetry[key] = metadataAttempt{next: now.Add(wait), wait: wait}
		ix.metaMu.Unlock()
		ix.m.metaFailed.Add(1)
		ix.log.Warn("metadata document unavailable; keeping the previous metadata",
			"subject", u.Subject, "address", u.Address, "uri", u.URI, "retry_in", wait, "err", err)
		return nil
	}
	err = ix.db.InTx(ctx, func(tx *store.Tx) error {
		ok, err := tx.MetadataURIExists(ctx, u)
		if err != nil || !ok {
			return err // rolled back meanwhile: drop the document
		}
		b := chain.Batch{MetadataDocuments: []chain.MetadataDocument{doc}}
		if err := tx.ApplyBatch(ctx, &b); err != nil {
			return err
		}
		return tx.BumpDataVersion(ctx)
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("apply metadata of %s %s: %w", u.Subject, u.Address, err)
	}
	ix.metaMu.Lock()
	delete(ix.metaRetry, key)
	ix.metaMu.Unlock()
	ix.m.metaFetched.Add(1)
	return nil
}
