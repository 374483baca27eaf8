package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lib/pq"
)

// bulkTables are the event tables that grow into the millions of rows. Their
// secondary indexes serve reads only: ApplyBatch never looks rows up in them
// except by primary key.
var bulkTables = []string{"delegation_events", "deposits", "pod_share_events", "withdrawals"}

// quietTables are the tables whose autovacuum a bulk load turns off: it
// would only read pages that the load rewrites and that RestoreIndexes
// vacuums once at the end.
var quietTables = append([]string{"stakers", "staker_shares"}, bulkTables...)

// BulkLoad runs load with the secondary indexes of the large event tables
// dropped and autovacuum off on them and on the staker tables, then
// rebuilds the indexes, vacuums, refreshes the planner's statistics and
// turns autovacuum back on: building an index once over millions of rows is
// far cheaper than keeping it up to date row by row. Readers see no data of
// an unfinished load anyway, but they would see slow plans, so use it only
// for seeding. The dropped definitions are recorded first, so that a load
// that dies leaves nothing lost: the next Migrate rebuilds them and turns
// autovacuum back on.
func (db *DB) BulkLoad(ctx context.Context, load func(ctx context.Context) error) (err error) {
	if err := db.InTx(ctx, func(tx *Tx) error {
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO suspended_indexes (name, definition)
			SELECT i.indexname, i.indexdef
			FROM pg_indexes i
			JOIN pg_class c ON c.relname = i.indexname AND c.relkind = 'i'
			JOIN pg_index x ON x.indexrelid = c.oid
			WHERE i.schemaname = current_schema() AND i.tablename = ANY($1)
			  AND NOT x.indisprimary AND NOT x.indisunique
			ON CONFLICT (name) DO NOTHING`, pq.Array(bulkTables)); err != nil {
			return err
		}
		var names []string
		if err := tx.SelectContext(ctx, &names, `SELECT name FROM suspended_indexes ORDER BY name`); err != nil {
			return err
		}
		for _, n := range names {
			if _, err := tx.ExecContext(ctx, `DROP INDEX IF EXISTS `+pq.QuoteIdentifier(n)); err != nil {
				return err
			}
		}
		for _, t := range quietTables {
			if _, err := tx.ExecContext(ctx, `ALTER TABLE `+pq.QuoteIdentifier(t)+` SET (autovacuum_enabled = false)`); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("suspend indexes: %w", Classify(err))
	}
	defer func() {
		// Rebuild even when the load failed or its context was cancelled.
		rctx := context.WithoutCancel(ctx)
		if rerr := db.RestoreIndexes(rctx); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}()
	return load(ctx)
}

// RestoreIndexes rebuilds every index a bulk load suspended, vacuums and
// analyzes the tables, and turns their autovacuum back on. Migrate calls
// it, so a database left by a dead bulk load heals.
func (db *DB) RestoreIndexes(ctx context.Context) error {
	var defs []struct {
		Name       string `db:"name"`
		Definition string `db:"definition"`
	}
	if err := db.SelectContext(ctx, &defs, `SELECT name, definition FROM suspended_indexes ORDER BY name`); err != nil {
		return fmt.Errorf("read suspended indexes: %w", Classify(err))
	}
	for _, d := range defs {
		err := db.InTx(ctx, func(tx *Tx) error {
			if _, err := tx.ExecContext(ctx, `SET LOCAL maintenance_work_mem = '256MB'`); err != nil {
				return err
			}
			def := strings.Replace(d.Definition, "CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1)
			if _, err := tx.ExecContext(ctx, def); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `DELETE FROM suspended_indexes WHERE name = $1`, d.Name)
			return err
		})
		if err != nil {
			return fmt.Errorf("rebuild index %s: %w", d.Name, Classify(err))
		}
	}
	if len(defs) > 0 {
		// VACUUM as well as ANALYZE: it sets the visibility map, without which
		// the index-only scans that count and page the lists (withdrawals by
		// keyset, say) read the heap row by row until autovacuum comes by.
		if _, err := db.ExecContext(ctx, `VACUUM (ANALYZE) `+strings.Join(quietTables, ", ")); err != nil {
			return fmt.Errorf("vacuum: %w", Classify(err))
		}
	}
	return db.restoreAutovacuum(ctx)
}

// restoreAutovacuum turns autovacuum back on for the tables a bulk load
// turned it off for. The schema never turns it off otherwise.
func (db *DB) restoreAutovacuum(ctx context.Context) error {
	var off []string
	if err := db.SelectContext(ctx, &off, `
		SELECT relname::text FROM pg_class
		WHERE relnamespace = current_schema()::regnamespace AND relname = ANY($1)
		  AND reloptions @> '{autovacuum_enabled=false}'
		ORDER BY relname`, pq.Array(quietTables)); err != nil {
		return fmt.Errorf("read autovacuum settings: %w", Classify(err))
	}
	for _, t := range off {
		if _, err := db.ExecContext(ctx, `ALTER TABLE `+pq.QuoteIdentifier(t)+` RESET (autovacuum_enabled)`); err != nil {
			return fmt.Errorf("turn autovacuum on for %s: %w", t, Classify(err))
		}
	}
	return nil
}
