package store

import (
	"context"
	"fmt"
	"math/big"
	"time"

	"github.com/lib/pq"

	"github.com/stakegraph/stakegraph/chain"
)

// Token is an ERC-20 token known to the service: a strategy's underlying
// token or a rewards token. ETHPrice is the price of one whole token in ETH,
// as decimal text.
type Token struct {
	Address  string
	Symbol   string
	Decimals int
	ETHPrice string
}

// Strategy is a strategy with its current exchange rate and price.
// SharesToUnderlying is sharesToUnderlyingView(1e18); ETHPrice is the price
// of one whole underlying token in ETH as decimal text ("1" for beacon ETH).
type Strategy struct {
	chain.Strategy
	SharesToUnderlying *big.Int
	ETHPrice           string
}

// UpsertTokens inserts or updates tokens by address.
func (tx *Tx) UpsertTokens(ctx context.Context, tokens []Token) error {
	for _, t := range tokens {
		if _, err := tx.execContext(ctx, `
			INSERT INTO tokens (address, symbol, decimals, eth_price)
			VALUES ($1, $2, $3, $4)
			ON CONFLICT (address) DO UPDATE
			SET symbol = EXCLUDED.symbol, decimals = EXCLUDED.decimals, eth_price = EXCLUDED.eth_price`,
			t.Address, t.Symbol, t.Decimals, t.ETHPrice); err != nil {
			return fmt.Errorf("upsert token %s: %w", t.Address, Classify(err))
		}
	}
	return nil
}

// RecordETHSupply records the ETH supply (decimal text, in ETH) observed
// at at, unless it equals the last one recorded: the table holds one row
// per change. The restaking ratio divides the TVL by it.
func (tx *Tx) RecordETHSupply(ctx context.Context, at time.Time, supply string) error {
	if _, err := tx.execContext(ctx, `
		INSERT INTO eth_supply_observations (observed_at, supply)
		SELECT $1, $2::numeric
		WHERE $2::numeric IS DISTINCT FROM (
		    SELECT supply FROM eth_supply_observations ORDER BY observed_at DESC LIMIT 1)
		ON CONFLICT (observed_at) DO UPDATE SET supply = EXCLUDED.supply`, at.UTC(), supply); err != nil {
		return fmt.Errorf("record ETH supply: %w", Classify(err))
	}
	return nil
}

// UpsertStrategies inserts or updates strategies by address. A nil
// SharesToUnderlying keeps the stored rate (1:1 for a new strategy).
func (tx *Tx) UpsertStrategies(ctx context.Context, strategies []Strategy) error {
	for _, s := range strategies {
		var rate any
		if s.SharesToUnderlying != nil {
			rate = s.SharesToUnderlying.String()
		}
		var underlying any
		if s.UnderlyingToken != "" {
			underlying = s.UnderlyingToken
		}
		price := s.ETHPrice
		if price == "" {
			price = "0"
		}
		if _, err := tx.execContext(ctx, `
			INSERT INTO strategies (address, symbol, kind, underlying_token, decimals, shares_to_underlying, eth_price)
			VALUES ($1, $2, $3, $4, $5, COALESCE($6::numeric, 1000000000000000000), $7)
			ON CONFLICT (address) DO UPDATE
			SET symbol = EXCLUDED.symbol, kind = EXCLUDED.kind, underlying_token = EXCLUDED.underlying_token,
			    decimals = EXCLUDED.decimals,
			    shares_to_underlying = COALESCE($6::numeric, strategies.shares_to_underlying),
			    eth_price = EXCLUDED.eth_price`,
			s.Address, s.Symbol, string(s.Kind), underlying, s.Decimals, rate, price); err != nil {
			return fmt.Errorf("upsert strategy %s: %w", s.Address, Classify(err))
		}
	}
	return nil
}

// CuratedMetadata is the service operators' own description of an AVS,
// overriding what the AVS publishes.
type CuratedMetadata struct {
	AVSAddress   string
	Name         string
	Description  *string
	Discord      *string
	Logo         *string
	Telegram     *string
	Website      *string
	X            *string
	Github       *string
	TokenAddress *string
	Tags         []string
	IsVisible    bool
	IsVerified   bool
}

// UpsertCuratedMetadata inserts or replaces curated metadata by AVS address.
// The AVS must exist.
func (tx *Tx) UpsertCuratedMetadata(ctx context.Context, items []CuratedMetadata) error {
	for _, m := range items {
		tags := m.Tags
		if tags == nil {
			tags = []string{}
		}
		if _, err := tx.execContext(ctx, `
			INSERT INTO curated_avs_metadata (avs_address, metadata_name, metadata_description, metadata_discord,
			    metadata_logo, metadata_telegram, metadata_website, metadata_x, metadata_github,
			    metadata_token_address, tags, is_visible, is_verified)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
			ON CONFLICT (avs_address) DO UPDATE
			SET metadata_name = EXCLUDED.metadata_name, metadata_description = EXCLUDED.metadata_description,
			    metadata_discord = EXCLUDED.metadata_discord, metadata_logo = EXCLUDED.metadata_logo,
			    metadata_telegram = EXCLUDED.metadata_telegram, metadata_website = EXCLUDED.metadata_website,
			    metadata_x = EXCLUDED.metadata_x, metadata_github = EXCLUDED.metadata_github,
			    metadata_token_address = EXCLUDED.metadata_token_address, tags = EXCLUDED.tags,
			    is_visible = EXCLUDED.is_visible, is_verified = EXCLUDED.is_verified`,
			m.AVSAddress, m.Name, m.Description, m.Discord, m.Logo, m.Telegram, m.Website, m.X, m.Github,
			m.TokenAddress, pq.Array(tags), m.IsVisible, m.IsVerified); err != nil {
			return fmt.Errorf("upsert curated metadata %s: %w", m.AVSAddress, Classify(err))
		}
		// Visibility changes the AVS counts of every day since the AVS
		// appeared: have the next Refresh recompute those snapshots.
		if _, err := tx.execContext(ctx, `
			UPDATE service_state s SET dirty_since = LEAST(COALESCE(s.dirty_since, a.created_at), a.created_at)
			FROM avs a WHERE s.id AND a.address = $1`, m.AVSAddress); err != nil {
			return fmt.Errorf("mark snapshots of %s: %w", m.AVSAddress, Classify(err))
		}
	}
	return nil
}

// SetMinWithdrawalDelay stores the protocol's minimum withdrawal delay in
// blocks, which decides when a queued withdrawal becomes withdrawable.
func (tx *Tx) SetMinWithdrawalDelay(ctx context.Context, blocks uint64) error {
	if _, err := tx.execContext(ctx, `UPDATE service_state SET min_withdrawal_delay_blocks = $1 WHERE id`, int64(blocks)); err != nil {
		return fmt.Errorf("set withdrawal delay: %w", Classify(err))
	}
	return nil
}

// SetHead records the highest block whose events have been applied. It
// never moves the head backwards; RollbackAfter does that.
func (tx *Tx) SetHead(ctx context.Context, head chain.Position) error {
	if _, err := tx.execContext(ctx, `
		UPDATE service_state
		SET head_block = GREATEST(head_block, $1),
		    head_time = CASE WHEN $1 >= head_block THEN $2 ELSE head_time END
		WHERE id`,
		int64(head.BlockNumber), head.BlockTime.UTC()); err != nil {
		return fmt.Errorf("set head: %w", Classify(err))
	}
	return nil
}
