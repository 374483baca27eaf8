package store

import (
	"context"
	"fmt"
	"time"

	"github.com/lib/pq"
)

// AVS is an actively validated service as stored, with the counts and values
// the refresh step derives. MaxAPY and TVLETH are decimal text.
type AVS struct {
	Address               string         `db:"address"`
	MetadataURI           *string        `db:"metadata_uri"`
	MetadataName          string         `db:"metadata_name"`
	MetadataDescription   *string        `db:"metadata_description"`
	MetadataDiscord       *string        `db:"metadata_discord"`
	MetadataLogo          *string        `db:"metadata_logo"`
	MetadataTelegram      *string        `db:"metadata_telegram"`
	MetadataWebsite       *string        `db:"metadata_website"`
	MetadataX             *string        `db:"metadata_x"`
	RestakeableStrategies pq.StringArray `db:"restakeable_strategies"`
	TotalStakers          int            `db:"total_stakers"`
	TotalOperators        int            `db:"total_operators"`
	MaxAPY                string         `db:"max_apy"`
	TVLETH                string         `db:"tvl_eth"`
	CreatedAtBlock        int64          `db:"created_at_block"`
	UpdatedAtBlock        int64          `db:"updated_at_block"`
	CreatedAt             time.Time      `db:"created_at"`
	UpdatedAt             time.Time      `db:"updated_at"`
}

const avsColumns = `
	a.address, a.metadata_uri, a.metadata_name, a.metadata_description, a.metadata_discord, a.metadata_logo,
	a.metadata_telegram, a.metadata_website, a.metadata_x, a.restakeable_strategies,
	a.total_stakers, a.total_operators, a.max_apy::text AS max_apy, a.tvl_eth::text AS tvl_eth,
	a.created_at_block, a.updated_at_block, a.created_at, a.updated_at`

// AVSFilter selects AVS in a list. Invisible AVS (curated metadata with
// is_visible = false) are left out unless IncludeInvisible is set.
type AVSFilter struct {
	Search           TextSearch
	IncludeInvisible bool
}

// avsSortColumns are the orders an AVS list accepts; each has an index.
var avsSortColumns = map[SortKey]string{
	SortDefault:          "a.created_at",
	SortByAPY:            "a.max_apy",
	SortByTVL:            "a.tvl_eth",
	SortByTotalStakers:   "a.total_stakers",
	SortByTotalOperators: "a.total_operators",
}

// conditions returns the WHERE conditions of f over avs a.
func (f AVSFilter) conditions(q *queryArgs) ([]string, error) {
	search, err := f.Search.condition(q, "a.metadata_name", "a.address")
	if err != nil {
		return nil, err
	}
	visible := ""
	if !f.IncludeInvisible {
		visible = `NOT EXISTS (
			SELECT 1 FROM curated_avs_metadata c
			WHERE c.avs_address = a.address AND NOT c.is_visible)`
	}
	return []string{search, visible}, nil
}

// ListAVS returns one page of the AVS matching f, in the order s.
func (db *DB) ListAVS(ctx context.Context, f AVSFilter, s Sort, p Page) ([]AVS, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	orderBy, err := s.orderBy(avsSortColumns, "a.address")
	if err != nil {
		return nil, err
	}
	var q queryArgs
	conds, err := f.conditions(&q)
	if err != nil {
		return nil, err
	}
	out := make([]AVS, 0, rowsFor(p.Take))
	if err := db.selectContext(ctx, &out, `
		SELECT `+avsColumns+`
		FROM avs a
		`+where(conds...)+`
		ORDER BY `+orderBy+`
		LIMIT `+q.add(p.Take)+` OFFSET `+q.add(p.Skip), q.args...); err != nil {
		return nil, fmt.Errorf("list avs: %w", Classify(err))
	}
	return out, nil
}

// CountAVS returns the number of AVS matching f.
func (db *DB) CountAVS(ctx context.Context, f AVSFilter) (int, error) {
	var q queryArgs
	conds, err := f.conditions(&q)
	if err != nil {
		return 0, err
	}
	var n int
	if err := db.getContext(ctx, &n, `
		SELECT count(*)
		FROM avs a
		`+where(conds...), q.args...); err != nil {
		return 0, fmt.Errorf("count avs: %w", Classify(err))
	}
	return n, nil
}

// AVSByAddresses returns the AVS with the given addresses, visible or not,
// in no particular order; unknown addresses are left out.
func (db *DB) AVSByAddresses(ctx context.Context, addresses []string) ([]AVS, error) {
	var out []AVS
	if err := db.selectPrepared(ctx, &out, `
		SELECT `+avsColumns+`
		FROM avs a
		WHERE a.address = ANY($1)`, pq.Array(addresses)); err != nil {
		return nil, fmt.Errorf("avs by address: %w", Classify(err))
	}
	return out, nil
}

// CuratedMetadataByAVS returns the curated metadata of the given AVS, in no
// particular order; AVS without curated metadata are left out.
func (db *DB) CuratedMetadataByAVS(ctx context.Context, avs []string) ([]CuratedMetadata, error) {
	release, err := hold(ctx)
	if err != nil {
		return nil, fmt.Errorf("curated metadata: %w", err)
	}
	defer release()
	rows, err := db.sql.QueryContext(ctx, `
		SELECT avs_address, metadata_name, metadata_description, metadata_discord, metadata_logo,
		       metadata_telegram, metadata_website, metadata_x, metadata_github,
		       metadata_token_address, tags, is_visible, is_verified
		FROM curated_avs_metadata
		WHERE avs_address = ANY($1)`, pq.Array(avs))
	if err != nil {
		return nil, fmt.Errorf("curated metadata: %w", Classify(err))
	}
	defer rows.Close()
	var out []CuratedMetadata
	for rows.Next() {
		var m CuratedMetadata
		if err := rows.Scan(&m.AVSAddress, &m.Name, &m.Description, &m.Discord, &m.Logo,
			&m.Telegram, &m.Website, &m.X, &m.Github, &m.TokenAddress, (*pq.StringArray)(&m.Tags),
			&m.IsVisible, &m.IsVerified); err != nil {
			return nil, fmt.Errorf("curated metadata: %w", Classify(err))
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("curated metadata: %w", Classify(err))
	}
	return out, nil
}

// StrategyAPY is the APY (in percent, decimal text) an AVS pays on one
// strategy.
type StrategyAPY struct {
	AVSAddress      string `db:"avs_address"`
	StrategyAddress string `db:"strategy_address"`
	APY             string `db:"apy"`
}

// StrategyAPYsByAVS returns the per-strategy APYs of the given AVS, ordered
// by AVS and strategy.
func (db *DB) StrategyAPYsByAVS(ctx context.Context, avs []string) ([]StrategyAPY, error) {
	var out []StrategyAPY
	if err := db.selectPrepared(ctx, &out, `
		SELECT avs_address, strategy_address, apy::text AS apy
		FROM avs_strategy_apy
		WHERE avs_address = ANY($1)
		ORDER BY avs_address, strategy_address`, pq.Array(avs)); err != nil {
		return nil, fmt.Errorf("avs strategy apys: %w", Classify(err))
	}
	return out, nil
}
