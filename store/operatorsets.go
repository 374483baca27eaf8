package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"
)

// OperatorSetRef names one operator set: the AVS that created it and the id
// the AVS gave it.
type OperatorSetRef struct {
	AVS string
	ID  int64
}

// Key returns the text form of r, "avs:id", which the batched reads of
// operator sets return as the key of each row.
func (r OperatorSetRef) Key() string {
	return r.AVS + ":" + strconv.FormatInt(r.ID, 10)
}

// ParseOperatorSetKey parses the text form that Key returns.
func ParseOperatorSetKey(key string) (OperatorSetRef, bool) {
	avs, id, ok := strings.Cut(key, ":")
	if !ok {
		return OperatorSetRef{}, false
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil {
		return OperatorSetRef{}, false
	}
	return OperatorSetRef{AVS: avs, ID: n}, true
}

// operatorSetKey is the SQL of the key (OperatorSetRef.Key) of the operator
// set whose AVS and id are the columns avs and id.
func operatorSetKey(avs, id string) string {
	return avs + " || ':' || " + id
}

// refArrays returns the AVS and ids of refs as two parallel array
// arguments, for unnest($n::text[], $m::bigint[]).
func refArrays(refs []OperatorSetRef) (any, any) {
	avs := make([]string, len(refs))
	ids := make([]int64, len(refs))
	for i, r := range refs {
		avs[i], ids[i] = r.AVS, r.ID
	}
	return pq.Array(avs), pq.Array(ids)
}

// OperatorSet is an operator set as stored: when it was created, its
// current strategies and the number of its members that Tx.Refresh counts.
type OperatorSet struct {
	AVSAddress     string         `db:"avs_address"`
	ID             int64          `db:"operator_set_id"`
	TotalOperators int            `db:"total_operators"`
	Strategies     pq.StringArray `db:"strategies"`
	CreatedAtBlock int64          `db:"created_at_block"`
	CreatedAt      time.Time      `db:"created_at"`
}

// Ref returns the reference of the set.
func (s OperatorSet) Ref() OperatorSetRef { return OperatorSetRef{AVS: s.AVSAddress, ID: s.ID} }

// operatorSetColumns selects an OperatorSet from operator_sets s.
const operatorSetColumns = `
	s.avs_address, s.operator_set_id, s.total_operators,
	ARRAY(SELECT x.strategy_address::text FROM operator_set_strategies x
	      WHERE x.avs_address = s.avs_address AND x.operator_set_id = s.operator_set_id
	      ORDER BY x.strategy_address) AS strategies,
	s.block_number AS created_at_block, s.block_time AS created_at`

// operatorSetOrder is the order of every list of operator sets: oldest
// first, by the position of the event that created them (a unique index).
const operatorSetOrder = `s.block_number, s.log_index`

// OperatorSetsByRefs returns the operator sets with the given references,
// in no particular order; unknown sets are left out.
func (db *DB) OperatorSetsByRefs(ctx context.Context, refs []OperatorSetRef) ([]OperatorSet, error) {
	avs, ids := refArrays(refs)
	var out []OperatorSet
	if err := db.selectPrepared(ctx, &out, `
		SELECT `+operatorSetColumns+`
		FROM unnest($1::text[], $2::bigint[]) AS k(avs_address, operator_set_id)
		JOIN operator_sets s ON s.avs_address = k.avs_address AND s.operator_set_id = k.operator_set_id`,
		avs, ids); err != nil {
		return nil, fmt.Errorf("operator sets by reference: %w", Classify(err))
	}
	return out, nil
}

// OperatorSetFilter selects operator sets in a list; the zero value selects
// every set.
type OperatorSetFilter struct {
	AVS string
}

func (f OperatorSetFilter) conditions(q *queryArgs) []string {
	if f.AVS == "" {
		return nil
	}
	return []string{"s.avs_address = " + q.add(f.AVS)}
}

// ListOperatorSets returns one page of the operator sets matching f, oldest
// first.
func (db *DB) ListOperatorSets(ctx context.Context, f OperatorSetFilter, p Page) ([]OperatorSet, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var q queryArgs
	conds := f.conditions(&q)
	out := make([]OperatorSet, 0, rowsFor(p.Take))
	if err := db.selectContext(ctx, &out, `
		SELECT `+operatorSetColumns+`
		FROM operator_sets s
		`+where(conds...)+`
		ORDER BY `+operatorSetOrder+`
		LIMIT `+q.add(p.Take)+` OFFSET `+q.add(p.Skip), q.args...); err != nil {
		return nil, fmt.Errorf("list operator sets: %w", Classify(err))
	}
	return out, nil
}

// CountOperatorSets returns the number of operator sets matching f.
func (db *DB) CountOperatorSets(ctx context.Context, f OperatorSetFilter) (int, error) {
	var q queryArgs
	conds := f.conditions(&q)
	var n int
	if err := db.getContext(ctx, &n, `
		SELECT count(*)
		FROM operator_sets s
		`+where(conds...), q.args...); err != nil {
		return 0, fmt.Errorf("count operator sets: %w", Classify(err))
	}
	return n, nil
}

// AVSOperatorSet is an operator set of the AVS Key.
type AVSOperatorSet struct {
	Key string `db:"key"`
	OperatorSet
}

// ListOperatorSetsByAVS returns, for each of the given AVS, one page of its
// operator sets, oldest first, all in one statement. Rows are grouped by
// AVS (Key) in the order of avs.
func (db *DB) ListOperatorSetsByAVS(ctx context.Context, avs []string, p Page) ([]AVSOperatorSet, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out []AVSOperatorSet
	if err := db.selectRanked(ctx, &out, `
		SELECT k.key, x.*
		FROM unnest($1::text[]) WITH ORDINALITY AS k(key, position)
		CROSS JOIN LATERAL (
			SELECT `+operatorSetColumns+`, row_number() OVER (ORDER BY `+operatorSetOrder+`) AS rank
			FROM operator_sets s
			WHERE s.avs_address = k.key
			ORDER BY `+operatorSetOrder+`
			LIMIT $2 OFFSET $3
		) x
		ORDER BY k.position, x.rank`, pq.Array(avs), p.Take, p.Skip); err != nil {
		return nil, fmt.Errorf("list avs operator sets: %w", Classify(err))
	}
	return out, nil
}

// CountOperatorSetsByAVS returns the number of operator sets of each of the
// given AVS; AVS without any are left out of the map.
func (db *DB) CountOperatorSetsByAVS(ctx context.Context, avs []string) (map[string]int, error) {
	return db.countByKeyPrepared(ctx, "count avs operator sets", `
		SELECT avs_address AS key, count(*) AS n
		FROM operator_sets
		WHERE avs_address = ANY($1)
		GROUP BY avs_address`, pq.Array(avs))
}

// OperatorSetMember is the membership of an operator in an operator set:
// an operator is a member while its latest membership event of the set
// added it (IsActive). Key is the parent the row was listed for: the set's
// key (OperatorSetRef.Key) or the operator's address.
type OperatorSetMember struct {
	Key             string    `db:"key"`
	AVSAddress      string    `db:"avs_address"`
	OperatorSetID   int64     `db:"operator_set_id"`
	OperatorAddress string    `db:"operator_address"`
	IsActive        bool      `db:"is_active"`
	CreatedAtBlock  int64     `db:"created_at_block"`
	UpdatedAtBlock  int64     `db:"updated_at_block"`
	CreatedAt       time.Time `db:"created_at"`
	UpdatedAt       time.Time `db:"updated_at"`
}

// Set returns the reference of the member's operator set.
func (m OperatorSetMember) Set() OperatorSetRef {
	return OperatorSetRef{AVS: m.AVSAddress, ID: m.OperatorSetID}
}

const operatorSetMemberColumns = `
	m.avs_address, m.operator_set_id, m.operator_address, m.is_active,
	m.created_at_block, m.updated_at_block, m.created_at, m.updated_at`

// memberStatus returns the condition on operator_set_members m of status.
func memberStatus(status RegistrationStatus) string {
	switch status {
	case ActiveRegistration:
		return "m.is_active"
	case InactiveRegistration:
		return "NOT m.is_active"
	}
	return ""
}

// ListOperatorSetMembers returns, for each of the given operator sets, one
// page of its members matching status, ordered by operator address, all in
// one statement. Rows are grouped by set (Key, the set's key) in the order
// of sets.
func (db *DB) ListOperatorSetMembers(ctx context.Context, sets []OperatorSetRef, status RegistrationStatus, p Page) ([]OperatorSetMember, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	avs, ids := refArrays(sets)
	var out []OperatorSetMember
	if err := db.selectContext(ctx, &out, `
		SELECT `+operatorSetKey("k.avs_address", "k.operator_set_id")+` AS key, x.*
		FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS k(avs_address, operator_set_id, position)
		CROSS JOIN LATERAL (
			SELECT `+operatorSetMemberColumns+`
			FROM operator_set_members m
			WHERE m.avs_address = k.avs_address AND m.operator_set_id = k.operator_set_id`+and(memberStatus(status))+`
			ORDER BY m.operator_address
			LIMIT $3 OFFSET $4
		) x
		ORDER BY k.position, x.operator_address`, avs, ids, p.Take, p.Skip); err != nil {
		return nil, fmt.Errorf("list operator set members: %w", Classify(err))
	}
	return out, nil
}

// CountOperatorSetMembers returns the number of members matching status of
// each of the given operator sets, by the set's key; sets without any are
// left out of the map.
func (db *DB) CountOperatorSetMembers(ctx context.Context, sets []OperatorSetRef, status RegistrationStatus) (map[string]int, error) {
	avs, ids := refArrays(sets)
	return db.countByKey(ctx, "count operator set members", `
		SELECT `+operatorSetKey("m.avs_address", "m.operator_set_id")+` AS key, count(*) AS n
		FROM unnest($1::text[], $2::bigint[]) AS k(avs_address, operator_set_id)
		JOIN operator_set_members m ON m.avs_address = k.avs_address AND m.operator_set_id = k.operator_set_id
		`+where(memberStatus(status))+`
		GROUP BY m.avs_address, m.operator_set_id`, avs, ids)
}

// ListOperatorSetMembershipsByOperators returns, for each of the given
// operators, one page of its operator set memberships matching status,
// ordered by AVS and set id, all in one statement. Rows are grouped by
// operator (Key) in the order of operators.
func (db *DB) ListOperatorSetMembershipsByOperators(ctx context.Context, operators []string, status RegistrationStatus, p Page) ([]OperatorSetMember, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var out []OperatorSetMember
	if err := db.selectContext(ctx, &out, `
		SELECT k.key, x.*
		FROM unnest($1::text[]) WITH ORDINALITY AS k(key, position)
		CROSS JOIN LATERAL (
			SELECT `+operatorSetMemberColumns+`
			FROM operator_set_members m
			WHERE m.operator_address = k.key`+and(memberStatus(status))+`
			ORDER BY m.avs_address, m.operator_set_id
			LIMIT $2 OFFSET $3
		) x
		ORDER BY k.position, x.avs_address, x.operator_set_id`, pq.Array(operators), p.Take, p.Skip); err != nil {
		return nil, fmt.Errorf("list operator set memberships: %w", Classify(err))
	}
	return out, nil
}

// CountOperatorSetMembershipsByOperators returns the number of operator set
// memberships matching status of each of the given operators; operators
// without any are left out of the map.
func (db *DB) CountOperatorSetMembershipsByOperators(ctx context.Context, operators []string, status RegistrationStatus) (map[string]int, error) {
	return db.countByKey(ctx, "count operator set memberships", `
		SELECT m.operator_address AS key, count(*) AS n
		FROM operator_set_members m
		WHERE m.operator_address = ANY($1)`+and(memberStatus(status))+`
		GROUP BY m.operator_address`, pq.Array(operators))
}
