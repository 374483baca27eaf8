package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/stakegraph/stakegraph/chain"
)

// This file holds the chain indexer's bookkeeping: the sync cursor (the
// last block whose events are applied), the hashes of indexed blocks that
// let it notice a reorganisation, the rollback that undoes the events above
// a block, and the reads it needs to resume work after a restart.

// Cursor is the indexer's position: every event up to and including Block
// is applied, and Block had hash Hash on the chain that was indexed.
type Cursor struct {
	Block uint64
	Hash  string
}

// IndexedBlock is the hash an indexed block had when it was applied.
type IndexedBlock struct {
	Number uint64
	Hash   string
}

// Cursor returns the sync cursor; ok is false when nothing was indexed yet.
func (tx *Tx) Cursor(ctx context.Context) (c Cursor, ok bool, err error) {
	return readCursor(ctx, tx, true)
}

// Cursor returns the sync cursor; ok is false when nothing was indexed yet.
func (db *DB) Cursor(ctx context.Context) (c Cursor, ok bool, err error) {
	return readCursor(ctx, db, false)
}

type getter interface {
	getContext(ctx context.Context, dest any, query string, args ...any) error
}

func readCursor(ctx context.Context, q getter, lock bool) (Cursor, bool, error) {
	var row struct {
		Block int64  `db:"block_number"`
		Hash  string `db:"block_hash"`
	}
	query := `SELECT block_number, block_hash FROM sync_cursor`
	if lock {
		// Two indexers on one database would interleave batches; the row
		// lock makes the second wait for the first's transaction.
		query += ` FOR UPDATE`
	}
	err := q.getContext(ctx, &row, query)
	if errors.Is(err, sql.ErrNoRows) {
		return Cursor{}, false, nil
	}
	if err != nil {
		return Cursor{}, false, fmt.Errorf("read sync cursor: %w", Classify(err))
	}
	return Cursor{Block: uint64(row.Block), Hash: row.Hash}, true, nil
}

// SetCursor moves the sync cursor to c and records the hashes of blocks
// (which should include c itself). It belongs in the transaction that
// applied the events up to c, so that events and cursor commit together.
func (tx *Tx) SetCursor(ctx context.Context, c Cursor, blocks []IndexedBlock) error {
	if len(blocks) > 0 {
		nums := make([]int64, len(blocks))
		hashes := make([]string, len(blocks))
		for i, b := range blocks {
			nums[i] = int64(b.Number)
			hashes[i] = strings.ToLower(b.Hash)
		}
		if _, err := tx.execContext(ctx, `
			INSERT INTO indexed_blocks (block_number, block_hash)
			SELECT * FROM unnest($1::bigint[], $2::text[])
			ON CONFLICT (block_number) DO UPDATE SET block_hash = EXCLUDED.block_hash`,
			pq.Array(nums), pq.Array(hashes)); err != nil {
			return fmt.Errorf("record indexed blocks: %w", Classify(err))
		}
	}
	if _, err := tx.execContext(ctx, `
		INSERT INTO sync_cursor (block_number, block_hash, updated_at) VALUES ($1, $2, now())
		ON CONFLICT (id) DO UPDATE
		SET block_number = EXCLUDED.block_number, block_hash = EXCLUDED.block_hash, updated_at = now()`,
		int64(c.Block), strings.ToLower(c.Hash)); err != nil {
		return fmt.Errorf("set sync cursor: %w", Classify(err))
	}
	return nil
}

// IndexedBlocks returns up to limit recorded block hashes at or below
// block, newest first: the candidates for the common ancestor after a
// reorganisation.
func (tx *Tx) IndexedBlocks(ctx context.Context, atOrBelow uint64, limit int) ([]IndexedBlock, error) {
	var rows []struct {
		Number int64  `db:"block_number"`
		Hash   string `db:"block_hash"`
	}
	if err := tx.selectContext(ctx, &rows, `
		SELECT block_number, block_hash FROM indexed_blocks
		WHERE block_number <= $1 ORDER BY block_number DESC LIMIT $2`, int64(atOrBelow), limit); err != nil {
		return nil, fmt.Errorf("read indexed blocks: %w", Classify(err))
	}
	out := make([]IndexedBlock, len(rows))
	for i, r := range rows {
		out[i] = IndexedBlock{Number: uint64(r.Number), Hash: r.Hash}
	}
	return out, nil
}

// PruneIndexedBlocks forgets the hashes of blocks below block, which are
// too deep to be reorganised. The cursor's own block is always kept.
func (tx *Tx) PruneIndexedBlocks(ctx context.Context, below uint64) error {
	if _, err := tx.execContext(ctx, `
		DELETE FROM indexed_blocks
		WHERE block_number < $1 AND block_number <> COALESCE((SELECT block_number FROM sync_cursor), -1)`,
		int64(below)); err != nil {
		return fmt.Errorf("prune indexed blocks: %w", Classify(err))
	}
	return nil
}

// rollbackKeyQueries collect the entities that the events above a block
// touch, whose state RollbackAfter recomputes once those events are gone.
var rollbackKeyQueries = []struct {
	name  string
	query string
}{
	{"stakers", `
		SELECT DISTINCT staker_address FROM delegation_events WHERE block_number > $1
		UNION SELECT staker_address FROM deposits WHERE block_number > $1
		UNION SELECT pod_owner FROM pod_share_events WHERE block_number > $1
		UNION SELECT staker_address FROM withdrawals WHERE block_number > $1
		UNION SELECT staker_address FROM deposit_scaling_factor_events WHERE block_number > $1
		UNION SELECT staker_address FROM beacon_slashing_factor_events WHERE block_number > $1`},
	{"avs", `
		SELECT DISTINCT address FROM metadata_uri_events WHERE subject = 'avs' AND block_number > $1
		UNION SELECT avs_address FROM avs_strategy_events WHERE block_number > $1
		UNION SELECT avs_address FROM operator_set_strategy_events WHERE block_number > $1`},
	{"delegated operators", `
		SELECT DISTINCT operator_address FROM delegation_events
		WHERE block_number > $1 AND type IN ('SHARES_INCREASED', 'SHARES_DECREASED')
		UNION SELECT operator_address FROM slashed_operator_shares WHERE block_number > $1`},
	{"operators", `
		SELECT DISTINCT operator_address FROM operator_registered_events WHERE block_number > $1
		UNION SELECT address FROM metadata_uri_events WHERE subject = 'operator' AND block_number > $1`},
}

// RollbackAfter undoes everything the events above block did: it deletes
// the raw events of later blocks (and the AVS, operators and stakers that
// only they created), reopens withdrawals completed after block, recomputes
// the entity state of every key those events touched, moves the head back
// to block and forgets the indexed block hashes above it. Aggregates are
// left to Refresh, which the caller runs next (in the same transaction or
// after it); the sync cursor is the caller's to move.
func (tx *Tx) RollbackAfter(ctx context.Context, block uint64) error {
	b := int64(block)
	var keys EntityKeys
	for _, k := range rollbackKeyQueries {
		var addrs []string
		if err := tx.selectContext(ctx, &addrs, k.query, b); err != nil {
			return fmt.Errorf("rollback: collect %s: %w", k.name, Classify(err))
		}
		switch k.name {
		case "stakers":
			keys.Stakers = addrs
		case "avs":
			keys.AVS = addrs
		case "operators":
			keys.Operators = addrs
		case "delegated operators":
			keys.DelegatedOperators = addrs
		}
	}
	var pairs []struct {
		AVS      string `db:"avs_address"`
		Operator string `db:"operator_address"`
	}
	if err := tx.selectContext(ctx, &pairs, `
		SELECT DISTINCT avs_address, operator_address FROM registration_events WHERE block_number > $1
		UNION SELECT avs_address, operator_address FROM operator_set_membership_events WHERE block_number > $1`, b); err != nil {
		return fmt.Errorf("rollback: collect registrations: %w", Classify(err))
	}
	for _, p := range pairs {
		keys.RegistrationAVS = append(keys.RegistrationAVS, p.AVS)
		keys.RegistrationOperators = append(keys.RegistrationOperators, p.Operator)
	}

	// The snapshots of the days from the earliest removed event on must be
	// recomputed by the next refresh.
	var since sql.NullTime
	if err := tx.getContext(ctx, &since, `
		SELECT min(t) FROM (
		    SELECT min(block_time) AS t FROM operator_registered_events WHERE block_number > $1
		    UNION ALL SELECT min(block_time) FROM metadata_uri_events WHERE block_number > $1
		    UNION ALL SELECT min(block_time) FROM delegation_events WHERE block_number > $1
		    UNION ALL SELECT min(block_time) FROM deposits WHERE block_number > $1
		    UNION ALL SELECT min(block_time) FROM pod_share_events WHERE block_number > $1
		    UNION ALL SELECT min(created_at) FROM withdrawals WHERE block_number > $1
		    UNION ALL SELECT min(completed_at) FROM withdrawals WHERE completed_block > $1
		    UNION ALL SELECT min(block_time) FROM registration_events WHERE block_number > $1
		    UNION ALL SELECT min(block_time) FROM rewards_submissions WHERE block_number > $1
		    UNION ALL SELECT min(block_time) FROM slashed_operator_shares WHERE block_number > $1
		    UNION ALL SELECT min(block_time) FROM operator_set_membership_events WHERE block_number > $1
		) m`, b); err != nil {
		return fmt.Errorf("rollback: earliest removed event: %w", Classify(err))
	}

	for _, stmt := range []struct{ name, sql string }{
		{"operator registrations", `DELETE FROM operator_registered_events WHERE block_number > $1`},
		{"metadata uris", `DELETE FROM metadata_uri_events WHERE block_number > $1`},
		{"delegations", `DELETE FROM delegation_events WHERE block_number > $1`},
		{"deposits", `DELETE FROM deposits WHERE block_number > $1`},
		{"pod shares", `DELETE FROM pod_share_events WHERE block_number > $1`},
		{"withdrawals", `DELETE FROM withdrawals WHERE block_number > $1`},
		{"withdrawal completions", `
			UPDATE withdrawals
			SET is_completed = FALSE, completed_block = NULL, completed_log_index = NULL,
			    completed_tx_hash = NULL, completed_at = NULL,
			    updated_at_block = created_at_block, updated_at = created_at
			WHERE completed_block > $1`},
		{"registrations", `DELETE FROM registration_events WHERE block_number > $1`},
		{"avs strategies", `DELETE FROM avs_strategy_events WHERE block_number > $1`},
		{"rewards submissions", `DELETE FROM rewards_submissions WHERE block_number > $1`},
		{"operator sets", `DELETE FROM operator_sets WHERE block_number > $1`},
		{"operator set strategies", `DELETE FROM operator_set_strategy_events WHERE block_number > $1`},
		{"operator set members", `DELETE FROM operator_set_membership_events WHERE block_number > $1`},
		{"allocation delays", `DELETE FROM allocation_delay_events WHERE block_number > $1`},
		{"allocations", `DELETE FROM allocation_events WHERE block_number > $1`},
		{"max magnitudes", `DELETE FROM max_magnitude_events WHERE block_number > $1`},
		{"encumbered magnitudes", `DELETE FROM encumbered_magnitude_events WHERE block_number > $1`},
		{"slashings", `DELETE FROM slashings WHERE block_number > $1`},
		{"slashed operator shares", `DELETE FROM slashed_operator_shares WHERE block_number > $1`},
		{"burned shares", `DELETE FROM operator_shares_slashed_events WHERE block_number > $1`},
		{"deposit scaling factors", `DELETE FROM deposit_scaling_factor_events WHERE block_number > $1`},
		{"beacon slashing factors", `DELETE FROM beacon_slashing_factor_events WHERE block_number > $1`},
		{"protocol events", `DELETE FROM protocol_events WHERE block_number > $1`},
		{"indexed blocks", `DELETE FROM indexed_blocks WHERE block_number > $1`},
		// A metadata document belongs to the URI update at its position;
		// with that update gone, so is the document (the indexer fetches
		// the one of the latest surviving update again).
		{"avs metadata documents", `
			UPDATE avs
			SET metadata_name = '', metadata_description = NULL, metadata_website = NULL, metadata_logo = NULL,
			    metadata_x = NULL, metadata_discord = NULL, metadata_telegram = NULL,
			    metadata_block = NULL, metadata_log_index = NULL
			WHERE metadata_block > $1`},
		{"operator metadata documents", `
			UPDATE operators
			SET metadata_name = '', metadata_description = NULL, metadata_website = NULL, metadata_logo = NULL,
			    metadata_x = NULL, metadata_discord = NULL, metadata_telegram = NULL,
			    metadata_block = NULL, metadata_log_index = NULL
			WHERE metadata_block > $1`},
	} {
		if _, err := tx.execContext(ctx, stmt.sql, b); err != nil {
			return fmt.Errorf("rollback: %s: %w", stmt.name, Classify(err))
		}
	}
	if err := tx.RecomputeEntities(ctx, keys); err != nil {
		return fmt.Errorf("rollback: %w", err)
	}
	if since.Valid {
		if err := tx.markDirty(ctx, since.Time); err != nil {
			return fmt.Errorf("rollback: mark snapshots dirty: %w", Classify(err))
		}
	}
	// SetHead never moves the head backwards; a rollback does. The head time
	// is set by the SetHead that follows with the new head's position.
	if _, err := tx.execContext(ctx, `UPDATE service_state SET head_block = LEAST(head_block, $1) WHERE id`, b); err != nil {
		return fmt.Errorf("rollback: head: %w", Classify(err))
	}
	return nil
}

// PendingMetadata returns, for every AVS and operator whose latest metadata
// URI has no document applied yet, that latest URI update: the documents an
// indexer still has to fetch. A document that could not be fetched stays
// pending until a later attempt succeeds.
func (db *DB) PendingMetadata(ctx context.Context) ([]chain.MetadataURIUpdated, error) {
	var rows []struct {
		Subject  string    `db:"subject"`
		Address  string    `db:"address"`
		URI      string    `db:"uri"`
		Block    int64     `db:"block_number"`
		LogIndex int64     `db:"log_index"`
		TxHash   string    `db:"tx_hash"`
		Time     time.Time `db:"block_time"`
	}
	if err := db.selectContext(ctx, &rows, `
		WITH latest AS (
		    SELECT DISTINCT ON (subject, address) subject, address, uri, block_number, log_index, tx_hash, block_time
		    FROM metadata_uri_events
		    ORDER BY subject, address, block_number DESC, log_index DESC
		)
		SELECT l.* FROM latest l
		LEFT JOIN avs a ON l.subject = 'avs' AND a.address = l.address
		LEFT JOIN operators o ON l.subject = 'operator' AND o.address = l.address
		WHERE l.uri <> ''
		  AND (COALESCE(a.metadata_block, o.metadata_block) IS NULL
		       OR (COALESCE(a.metadata_block, o.metadata_block), COALESCE(a.metadata_log_index, o.metadata_log_index))
		          < (l.block_number, l.log_index))
		ORDER BY l.block_number, l.log_index`); err != nil {
		return nil, fmt.Errorf("pending metadata: %w", Classify(err))
	}
	out := make([]chain.MetadataURIUpdated, len(rows))
	for i, r := range rows {
		out[i] = chain.MetadataURIUpdated{
			Position: chain.Position{
				BlockNumber: uint64(r.Block), LogIndex: uint32(r.LogIndex), TxHash: r.TxHash, BlockTime: r.Time.UTC(),
			},
			Subject: chain.Subject(r.Subject),
			Address: r.Address,
			URI:     r.URI,
		}
	}
	return out, nil
}

// AVSWithoutStrategies returns the address of every AVS whose restakeable
// strategies were never observed, in address order.
func (db *DB) AVSWithoutStrategies(ctx context.Context) ([]string, error) {
	var out []string
	if err := db.selectContext(ctx, &out, `SELECT address FROM avs WHERE strategies_block IS NULL ORDER BY address`); err != nil {
		return nil, fmt.Errorf("avs without strategies: %w", Classify(err))
	}
	return out, nil
}

// HasEvents reports whether any raw event is stored, so that an indexer can
// refuse to index into a database that holds data of another origin (the
// demo generator) without a sync cursor.
func (db *DB) HasEvents(ctx context.Context) (bool, error) {
	var has bool
	if err := db.getContext(ctx, &has, `
		SELECT EXISTS (SELECT 1 FROM operator_registered_events)
		    OR EXISTS (SELECT 1 FROM metadata_uri_events)
		    OR EXISTS (SELECT 1 FROM delegation_events)
		    OR EXISTS (SELECT 1 FROM deposits)
		    OR EXISTS (SELECT 1 FROM pod_share_events)
		    OR EXISTS (SELECT 1 FROM withdrawals)`); err != nil {
		return false, fmt.Errorf("check for events: %w", Classify(err))
	}
	return has, nil
}

// StrategyAddresses returns the address of every known strategy, in
// address order, so that an indexer can refresh their rates.
func (db *DB) StrategyAddresses(ctx context.Context) ([]string, error) {
	var out []string
	if err := db.selectContext(ctx, &out, `SELECT address FROM strategies ORDER BY address`); err != nil {
		return nil, fmt.Errorf("strategy addresses: %w", Classify(err))
	}
	return out, nil
}

// MetadataURIExists reports whether the URI update u is still stored (a
// rollback may have removed it while its document was being fetched).
func (tx *Tx) MetadataURIExists(ctx context.Context, u chain.MetadataURIUpdated) (bool, error) {
	var ok bool
	if err := tx.getContext(ctx, &ok, `
		SELECT EXISTS (SELECT 1 FROM metadata_uri_events
		               WHERE block_number = $1 AND log_index = $2 AND subject = $3 AND address = $4 AND uri = $5)`,
		int64(u.BlockNumber), int64(u.LogIndex), string(u.Subject), strings.ToLower(u.Address), u.URI); err != nil {
		return false, fmt.Errorf("check metadata uri: %w", Classify(err))
	}
	return ok, nil
}

// BumpDataVersion increments the data version without a full refresh, for
// writes that change what readers see but no aggregate (metadata
// documents).
func (tx *Tx) BumpDataVersion(ctx context.Context) error {
	if _, err := tx.execContext(ctx, `UPDATE service_state SET data_version = data_version + 1 WHERE id`); err != nil {
		return fmt.Errorf("bump data version: %w", Classify(err))
	}
	return nil
}

// DeleteUnusedStrategies deletes the strategies that no stored event names
// (deposits, share changes, queued withdrawals, pod shares for beacon ETH,
// rewards) and that are not in keep, with their daily snapshots. After a
// rollback it removes the strategies that only abandoned blocks named, so
// that the state equals that of an index of the winning chain; keep lists
// the strategies of the deployment's reference table.
func (tx *Tx) DeleteUnusedStrategies(ctx context.Context, keep []string) error {
	lowered := make([]string, len(keep))
	for i, k := range keep {
		lowered[i] = strings.ToLower(k)
	}
	if _, err := tx.execContext(ctx, `
		WITH unused AS (
		    SELECT s.address FROM strategies s
		    WHERE s.address <> ALL($1::text[])
		      AND NOT EXISTS (SELECT 1 FROM deposits d WHERE d.strategy_address = s.address)
		      AND NOT EXISTS (SELECT 1 FROM delegation_events e WHERE e.strategy_address = s.address)
		      AND NOT EXISTS (SELECT 1 FROM withdrawals w WHERE s.address = ANY (w.strategies))
		      AND NOT EXISTS (SELECT 1 FROM rewards_submission_strategies r WHERE r.strategy_address = s.address)
		      AND NOT (s.address = $2 AND EXISTS (SELECT 1 FROM pod_share_events))
		), snapshots AS (
		    DELETE FROM strategy_daily_snapshots WHERE strategy_address IN (SELECT address FROM unused)
		)
		DELETE FROM strategies WHERE address IN (SELECT address FROM unused)`,
		pq.Array(lowered), chain.BeaconStrategy); err != nil {
		return fmt.Errorf("delete unused strategies: %w", Classify(err))
	}
	return nil
}
