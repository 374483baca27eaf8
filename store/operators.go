package store

import (
	"context"
	"fmt"
	"time"

	"github.com/lib/pq"
)

// Operator is an operator as stored, with the counts and values the refresh
// step derives. MaxAPY and TVLETH are decimal text.
type Operator struct {
	Address             string    `db:"address"`
	MetadataName        string    `db:"metadata_name"`
	MetadataDescription *string   `db:"metadata_description"`
	MetadataDiscord     *string   `db:"metadata_discord"`
	MetadataLogo        *string   `db:"metadata_logo"`
	MetadataTelegram    *string   `db:"metadata_telegram"`
	MetadataWebsite     *string   `db:"metadata_website"`
	MetadataX           *string   `db:"metadata_x"`
	TotalStakers        int       `db:"total_stakers"`
	TotalAVS            int       `db:"total_avs"`
	MaxAPY              string    `db:"max_apy"`
	TVLETH              string    `db:"tvl_eth"`
	CreatedAtBlock      int64     `db:"created_at_block"`
	UpdatedAtBlock      int64     `db:"updated_at_block"`
	CreatedAt           time.Time `db:"created_at"`
	UpdatedAt           time.Time `db:"updated_at"`
}

const operatorColumns = `
	o.address, o.metadata_name, o.metadata_description, o.metadata_discord, o.metadata_logo,
	o.metadata_telegram, o.metadata_website, o.metadata_x,
	o.total_stakers, o.total_avs, o.max_apy::text AS max_apy, o.tvl_eth::text AS tvl_eth,
	o.created_at_block, o.updated_at_block, o.created_at, o.updated_at`

// OperatorFilter selects operators in a list.
type OperatorFilter struct {
	Search TextSearch
}

// operatorSortColumns are the orders an operator list accepts; each has an
// index.
var operatorSortColumns = map[SortKey]string{
	SortDefault:        "o.created_at",
	SortByAPY:          "o.max_apy",
	SortByTVL:          "o.tvl_eth",
	SortByTotalStakers: "o.total_stakers",
	SortByTotalAVS:     "o.total_avs",
}

// ListOperatorAddresses returns the addresses of one page of the operators
// matching f, in the order s. Only the keys: each order has an index on
// (column, address), so a page, however deep, is an index-only scan instead
// of a sort of every operator's row; the records come from
// OperatorsByAddresses (through the entity cache).
func (db *DB) ListOperatorAddresses(ctx context.Context, f OperatorFilter, s Sort, p Page) ([]string, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	orderBy, err := s.orderBy(operatorSortColumns, "o.address")
	if err != nil {
		return nil, err
	}
	var q queryArgs
	search, err := f.Search.condition(&q, "o.metadata_name", "o.address")
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, rowsFor(p.Take))
	if err := db.selectContext(ctx, &out, `
		SELECT o.address
		FROM operators o
		`+where(search)+`
		ORDER BY `+orderBy+`
		LIMIT `+q.add(p.Take)+` OFFSET `+q.add(p.Skip), q.args...); err != nil {
		return nil, fmt.Errorf("list operators: %w", Classify(err))
	}
	return out, nil
}

// CountOperators returns the number of operators matching f.
func (db *DB) CountOperators(ctx context.Context, f OperatorFilter) (int, error) {
	var q queryArgs
	search, err := f.Search.condition(&q, "o.metadata_name", "o.address")
	if err != nil {
		return 0, err
	}
	var n int
	if err := db.getContext(ctx, &n, `
		SELECT count(*)
		FROM operators o
		`+where(search), q.args...); err != nil {
		return 0, fmt.Errorf("count operators: %w", Classify(err))
	}
	return n, nil
}

// OperatorsByAddresses returns the operators with the given addresses, in
// no particular order; unknown addresses are left out.
func (db *DB) OperatorsByAddresses(ctx context.Context, addresses []string) ([]Operator, error) {
	var out []Operator
	if err := db.selectPrepared(ctx, &out, `
		SELECT `+operatorColumns+`
		FROM operators o
		WHERE o.address = ANY($1)`, pq.Array(addresses)); err != nil {
		return nil, fmt.Errorf("operators by address: %w", Classify(err))
	}
	return out, nil
}

// Registration is the registration of an operator to an AVS.
type Registration struct {
	AVSAddress         string         `db:"avs_address"`
	OperatorAddress    string         `db:"operator_address"`
	IsActive           bool           `db:"is_active"`
	RestakedStrategies pq.StringArray `db:"restaked_strategies"`
	CreatedAtBlock     int64          `db:"created_at_block"`
	UpdatedAtBlock     int64          `db:"updated_at_block"`
	CreatedAt          time.Time      `db:"created_at"`
	UpdatedAt          time.Time      `db:"updated_at"`
}

// RegistrationsByOperators returns the AVS registrations, active and
// inactive, of the given operators, ordered by operator and AVS. An
// operator registers to a few dozen AVS at most.
func (db *DB) RegistrationsByOperators(ctx context.Context, operators []string) ([]Registration, error) {
	var out []Registration
	if err := db.selectPrepared(ctx, &out, `
		SELECT avs_address, operator_address, is_active, restaked_strategies,
		       created_at_block, updated_at_block, created_at, updated_at
		FROM avs_operators
		WHERE operator_address = ANY($1)
		ORDER BY operator_address, avs_address`, pq.Array(operators)); err != nil {
		return nil, fmt.Errorf("registrations by operator: %w", Classify(err))
	}
	return out, nil
}

// AVSOperator is an operator as seen from one AVS: the operator record with
// its registration to that AVS.
type AVSOperator struct {
	Operator
	AVSAddress         string         `db:"avs_address"`
	IsActive           bool           `db:"is_active"`
	RestakedStrategies pq.StringArray `db:"restaked_strategies"`
}

// AVSOperatorFilter selects the operators of an AVS.
type AVSOperatorFilter struct {
	Search TextSearch
	Status RegistrationStatus
}

// RegistrationStatus selects registrations by whether they are active.
type RegistrationStatus int8

// The registration filters; the zero value keeps every registration.
const (
	AnyRegistration RegistrationStatus = iota
	ActiveRegistration
	InactiveRegistration
)

// avsOperatorSortColumns are the orders an AVS's operator list accepts. The
// default walks the registration primary key; TVL order walks
// avs_operators_tvl_idx over the registration's TVL that Tx.Refresh keeps
// (tvl_eth: the operator's shares in the strategies it restakes for the
// AVS, EIGEN excluded, valued with the store's value functions, so that it
// agrees with every displayed TVL).
var avsOperatorSortColumns = map[SortKey]string{
	SortDefault: "ao.operator_address",
	SortByTVL:   "ao.tvl_eth",
}

// conditions returns f's conditions on the registrations ao and their
// operators, whose table is named operators in the statement.
func (f AVSOperatorFilter) conditions(q *queryArgs, operators string) ([]string, error) {
	search, err := f.Search.condition(q, operators+".metadata_name", operators+".address")
	if err != nil {
		return nil, err
	}
	active := ""
	switch f.Status {
	case ActiveRegistration:
		active = "ao.is_active"
	case InactiveRegistration:
		active = "NOT ao.is_active"
	}
	return []string{search, active}, nil
}

// ListAVSOperators returns, for each of the given AVS, one page of its
// operators matching f in the order s, all in one statement. Rows are
// grouped by AVS in the order of avs.
func (db *DB) ListAVSOperators(ctx context.Context, avs []string, f AVSOperatorFilter, s Sort, p Page) ([]AVSOperator, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	orderBy, err := s.orderBy(avsOperatorSortColumns, "ao.operator_address")
	if err != nil {
		return nil, err
	}
	var q queryArgs
	keys := q.add(pq.Array(avs))
	conds, err := f.conditions(&q, "so")
	if err != nil {
		return nil, err
	}
	// The page is cut from the registrations alone, in the order of an
	// index on them, and only its operators' rows are read and joined:
	// joining every registration's operator row before sorting made a
	// page of an AVS with 324 operators three times as dear (2.1 against
	// 0.7 ms). The operators are joined inside only to search them.
	// The statement of each order and filter is kept prepared: an AVS's
	// registrations are read in the order of an index on the AVS and the
	// sort column whatever the page, and planning took 60% of the time
	// PostgreSQL spent on a page.
	searched := ""
	if f.Search.Text != "" {
		searched = `
			JOIN operators so ON so.address = ao.operator_address`
	}
	var out []AVSOperator
	if err := db.selectRankedPrepared(ctx, &out, `
		SELECT `+operatorColumns+`, x.avs_address, x.is_active, x.restaked_strategies
		FROM unnest(`+keys+`::text[]) WITH ORDINALITY AS k(avs_address, position)
		CROSS JOIN LATERAL (
			SELECT ao.operator_address, ao.avs_address, ao.is_active, ao.restaked_strategies,
			       row_number() OVER (ORDER BY `+orderBy+`) AS rank
			FROM avs_operators ao`+searched+`
			WHERE ao.avs_address = k.avs_address`+and(conds...)+`
			ORDER BY `+orderBy+`
			LIMIT `+q.add(p.Take)+` OFFSET `+q.add(p.Skip)+`
		) x
		JOIN operators o ON o.address = x.operator_address
		ORDER BY k.position, x.rank`, q.args...); err != nil {
		return nil, fmt.Errorf("list avs operators: %w", Classify(err))
	}
	return out, nil
}

// CountAVSOperators returns the number of operators matching f of each of
// the given AVS; AVS with none are left out of the map.
func (db *DB) CountAVSOperators(ctx context.Context, avs []string, f AVSOperatorFilter) (map[string]int, error) {
	var q queryArgs
	keys := q.add(pq.Array(avs))
	conds, err := f.conditions(&q, "o")
	if err != nil {
		return nil, err
	}
	return db.countByKey(ctx, "count avs operators", `
		SELECT ao.avs_address AS key, count(*) AS n
		FROM avs_operators ao
		JOIN operators o ON o.address = ao.operator_address
		WHERE ao.avs_address = ANY(`+keys+`)`+and(conds...)+`
		GROUP BY ao.avs_address`, q.args...)
}

// selectRanked runs a batched page query: one LATERAL page per key, whose
// rows carry a rank column (their place within the page) that orders the
// result but has no field in the row type.
func (db *DB) selectRanked(ctx context.Context, dest any, query string, args ...any) error {
	return db.sql.Unsafe().SelectContext(ctx, dest, query, args...)
}

// selectRankedPrepared is selectRanked with the statement kept prepared,
// for a page whose best plan does not depend on its arguments (see
// selectPrepared).
func (db *DB) selectRankedPrepared(ctx context.Context, dest any, query string, args ...any) error {
	return db.selectKept(ctx, true, dest, query, args...)
}

// countByKey runs a query that returns (key, n) rows and collects them.
func (db *DB) countByKey(ctx context.Context, what, query string, args ...any) (map[string]int, error) {
	return db.countRowsByKey(ctx, db.selectContext, what, query, args...)
}

// countByKeyPrepared is countByKey with a statement kept prepared, for a
// count whose best plan does not depend on its arguments (see
// selectPrepared).
func (db *DB) countByKeyPrepared(ctx context.Context, what, query string, args ...any) (map[string]int, error) {
	return db.countRowsByKey(ctx, db.selectPrepared, what, query, args...)
}

// countRowsByKey runs a count by key with run.
func (db *DB) countRowsByKey(ctx context.Context, run func(ctx context.Context, dest any, query string, args ...any) error, what, query string, args ...any) (map[string]int, error) {
	var rows []struct {
		Key string `db:"key"`
		N   int    `db:"n"`
	}
	if err := run(ctx, &rows, query, args...); err != nil {
		return nil, fmt.Errorf("%s: %w", what, Classify(err))
	}
	out := make(map[string]int, len(rows))
	for _, r := range rows {
		out[r.Key] = r.N
	}
	return out, nil
}
