package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/stakegraph/stakegraph/chain"
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
		if _, err := tx.execContext(ctx, `
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
		if err := tx.selectContext(ctx, &names, `SELECT name FROM suspended_indexes ORDER BY name`); err != nil {
			return err
		}
		for _, n := range names {
			if _, err := tx.execContext(ctx, `DROP INDEX IF EXISTS `+pq.QuoteIdentifier(n)); err != nil {
				return err
			}
		}
		for _, t := range quietTables {
			if _, err := tx.execContext(ctx, `ALTER TABLE `+pq.QuoteIdentifier(t)+` SET (autovacuum_enabled = false)`); err != nil {
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
	if err := db.selectContext(ctx, &defs, `SELECT name, definition FROM suspended_indexes ORDER BY name`); err != nil {
		return fmt.Errorf("read suspended indexes: %w", Classify(err))
	}
	for _, d := range defs {
		err := db.InTx(ctx, func(tx *Tx) error {
			if _, err := tx.execContext(ctx, `SET LOCAL maintenance_work_mem = '256MB'`); err != nil {
				return err
			}
			def := strings.Replace(d.Definition, "CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1)
			if _, err := tx.execContext(ctx, def); err != nil {
				return err
			}
			_, err := tx.execContext(ctx, `DELETE FROM suspended_indexes WHERE name = $1`, d.Name)
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
		if _, err := db.execContext(ctx, `VACUUM (ANALYZE) `+strings.Join(quietTables, ", ")); err != nil {
			return fmt.Errorf("vacuum: %w", Classify(err))
		}
	}
	return db.restoreAutovacuum(ctx)
}

// restoreAutovacuum turns autovacuum back on for the tables a bulk load
// turned it off for. The schema never turns it off otherwise.
func (db *DB) restoreAutovacuum(ctx context.Context) error {
	var off []string
	if err := db.selectContext(ctx, &off, `
		SELECT relname::text FROM pg_class
		WHERE relnamespace = current_schema()::regnamespace AND relname = ANY($1)
		  AND reloptions @> '{autovacuum_enabled=false}'
		ORDER BY relname`, pq.Array(quietTables)); err != nil {
		return fmt.Errorf("read autovacuum settings: %w", Classify(err))
	}
	for _, t := range off {
		if _, err := db.execContext(ctx, `ALTER TABLE `+pq.QuoteIdentifier(t)+` RESET (autovacuum_enabled)`); err != nil {
			return fmt.Errorf("turn autovacuum on for %s: %w", t, Classify(err))
		}
	}
	return nil
}

// InBulkTx runs fn in one transaction, as InTx does, with a BulkApplier
// of that transaction.
//
// A BulkApplier applies batches as ApplyBatch does, faster, for a load into
// a database that held no events when the load began. The large event
// kinds are streamed with COPY: delegations, deposits and pod share updates
// straight into their tables; queued and completed withdrawals into staging
// tables, from which Finish stores each withdrawal with its completion in
// one statement, so that the withdrawals' statement triggers run once and
// no row is updated. Finish then derives the stakers, their positions and
// the operators' shares with the derivations ApplyBatch runs for the keys a
// batch touches (deriveStakers, deriveOperatorShares), once over every key.
// The tables end up
// exactly as ApplyBatch would leave them (demo's TestSeedBenchMatchesApplyBatch
// compares every table); unlike ApplyBatch, applying an event twice is an
// error (a duplicate key), not a no-op.
func (db *DB) InBulkTx(ctx context.Context, fn func(*Tx, *BulkApplier) error) error {
	// COPY data goes straight to the driver's connection, under the
	// transaction that runs on it.
	conn, err := db.sql.Connx(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", Classify(err))
	}
	defer conn.Close()
	sqlTx, err := conn.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", Classify(err))
	}
	tx := &Tx{sqlTx}
	a := &BulkApplier{tx: tx, conn: conn}
	err = a.prepare(ctx)
	if err == nil {
		err = fn(tx, a)
	}
	if err != nil {
		_ = sqlTx.Rollback()
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", Classify(err))
	}
	return nil
}

// A BulkApplier applies batches in a bulk load; see InBulkTx.
type BulkApplier struct {
	tx      *Tx
	conn    *sqlx.Conn
	buf     []byte // COPY data
	batches int    // batches applied, which orders staged withdrawals and completions
}

// prepare creates the staging tables, which go with the transaction,
// committed or not.
func (a *BulkApplier) prepare(ctx context.Context) error {
	if _, err := a.tx.execContext(ctx, `
		CREATE TEMP TABLE bulk_withdrawals (
		    batch INTEGER NOT NULL,
		    block_number BIGINT NOT NULL,
		    log_index INTEGER NOT NULL,
		    tx_hash TEXT NOT NULL,
		    created_at TIMESTAMPTZ NOT NULL,
		    withdrawal_root TEXT NOT NULL,
		    nonce NUMERIC NOT NULL,
		    staker_address TEXT NOT NULL,
		    delegated_to TEXT NOT NULL,
		    withdrawer_address TEXT NOT NULL,
		    start_block BIGINT NOT NULL,
		    strategies TEXT[] NOT NULL,
		    shares NUMERIC[] NOT NULL,
		    scaled_shares NUMERIC[]
		) ON COMMIT DROP;
		CREATE TEMP TABLE bulk_completions (
		    batch INTEGER NOT NULL,
		    block_number BIGINT NOT NULL,
		    log_index INTEGER NOT NULL,
		    tx_hash TEXT NOT NULL,
		    completed_at TIMESTAMPTZ NOT NULL,
		    withdrawal_root TEXT NOT NULL
		) ON COMMIT DROP`); err != nil {
		return fmt.Errorf("prepare bulk apply: %w", Classify(err))
	}
	return nil
}

// Apply applies b.
func (a *BulkApplier) Apply(ctx context.Context, b *chain.Batch) error {
	a.batches++
	return a.tx.applySteps(ctx, b, largeSteps{
		delegations:       a.copyDelegations,
		deposits:          a.copyDeposits,
		podShares:         a.copyPodShares,
		scalingFactors:    a.copyDepositScalingFactors,
		withdrawalsQueued: a.stageWithdrawalsQueued,
		withdrawalsDone:   a.stageWithdrawalsCompleted,
	})
}

// Finish stores the staged withdrawals and derives the stakers, their
// shares and the operators' shares. Refresh comes after.
func (a *BulkApplier) Finish(ctx context.Context) error {
	tx := a.tx
	// The joins below run over hundreds of thousands of rows.
	if _, err := tx.execContext(ctx, `SET LOCAL work_mem = '256MB'`); err != nil {
		return Classify(err)
	}
	if _, err := tx.execContext(ctx, `ANALYZE bulk_withdrawals, bulk_completions`); err != nil {
		return Classify(err)
	}
	// A completion applies to the withdrawal queued with its root in the
	// same or an earlier batch, the first such completion winning, as
	// ApplyBatch's update of not yet completed withdrawals does.
	if _, err := tx.execContext(ctx, `
		INSERT INTO withdrawals (block_number, log_index, tx_hash, created_at, withdrawal_root, nonce,
		    staker_address, delegated_to, withdrawer_address, start_block, strategies, shares,
		    scaled_shares, deposit_shares,
		    created_at_block, updated_at_block, updated_at,
		    is_completed, completed_block, completed_log_index, completed_tx_hash, completed_at)
		SELECT w.block_number, w.log_index, w.tx_hash, w.created_at, w.withdrawal_root, w.nonce,
		       w.staker_address, w.delegated_to, w.withdrawer_address, w.start_block,
		       w.strategies::address[], w.shares::numeric(78,0)[], w.scaled_shares::numeric(78,0)[],
		       withdrawal_deposit_shares(w.staker_address, w.strategies, w.shares, w.scaled_shares,
		                                 w.block_number, w.log_index, w.tx_hash),
		       w.block_number, COALESCE(c.block_number, w.block_number), COALESCE(c.completed_at, w.created_at),
		       c.withdrawal_root IS NOT NULL, c.block_number, c.log_index, c.tx_hash, c.completed_at
		FROM bulk_withdrawals w
		LEFT JOIN (
		    SELECT DISTINCT ON (c.withdrawal_root) c.*
		    FROM bulk_completions c
		    JOIN bulk_withdrawals q ON q.withdrawal_root = c.withdrawal_root AND q.batch <= c.batch
		    ORDER BY c.withdrawal_root, c.batch, c.block_number, c.log_index
		) c ON c.withdrawal_root = w.withdrawal_root
		ORDER BY w.batch, w.block_number, w.log_index`); err != nil {
		return fmt.Errorf("store withdrawals: %w", Classify(err))
	}
	if err := tx.deriveStakers(ctx, allKeys); err != nil {
		return Classify(err)
	}
	if err := tx.deriveOperatorShares(ctx, allKeys); err != nil {
		return Classify(err)
	}
	_, err := tx.execContext(ctx, `RESET work_mem`)
	return Classify(err)
}

// copyStmt is the part of the driver's COPY statement that takes raw data.
type copyStmt interface {
	driver.Stmt
	CopyData(ctx context.Context, line string) (driver.Result, error)
}

// copyRows streams n rows into the columns cols of table with COPY: row
// appends the text format of row i (tab-separated fields, without the
// newline) to a buffer.
func (a *BulkApplier) copyRows(ctx context.Context, table string, cols []string, n int, row func(b []byte, i int) ([]byte, error)) error {
	if n == 0 {
		return nil
	}
	return a.conn.Raw(func(dc any) error {
		prep, ok := dc.(driver.ConnPrepareContext)
		if !ok {
			return errors.New("bulk apply: the driver cannot prepare COPY")
		}
		st, err := prep.PrepareContext(ctx, pq.CopyIn(table, cols...))
		if err != nil {
			return err
		}
		stmt, ok := st.(copyStmt)
		if !ok {
			st.Close()
			return errors.New("bulk apply: the driver cannot stream COPY data")
		}
		b := a.buf[:0]
		for i := range n {
			if b, err = row(b, i); err != nil {
				stmt.Close()
				return err
			}
			// CopyData ends each chunk with a newline.
			if i == n-1 || len(b) >= 60<<10 {
				if _, err := stmt.CopyData(ctx, string(b)); err != nil {
					stmt.Close()
					return err
				}
				b = b[:0]
			} else {
				b = append(b, '\n')
			}
		}
		a.buf = b
		// Closing ends the COPY and reports what the server made of it.
		return stmt.Close()
	})
}

// appendText appends s as a field of COPY's text format.
func appendText(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\', '\n', '\r', '\t':
			b = append(b, s[:i]...)
			for ; i < len(s); i++ {
				switch c := s[i]; c {
				case '\\':
					b = append(b, '\\', '\\')
				case '\n':
					b = append(b, '\\', 'n')
				case '\r':
					b = append(b, '\\', 'r')
				case '\t':
					b = append(b, '\\', 't')
				default:
					b = append(b, c)
				}
			}
			return b
		}
	}
	return append(b, s...)
}

func appendNull(b []byte) []byte { return append(b, '\\', 'N') }

// appendTime appends t as ApplyBatch sends it (RFC 3339 with nanoseconds,
// which PostgreSQL rounds to microseconds).
func appendTime(b []byte, t time.Time) []byte { return t.UTC().AppendFormat(b, time.RFC3339Nano) }

func appendBig(b []byte, v *big.Int) []byte {
	if v == nil {
		return append(b, '0')
	}
	return v.Append(b, 10)
}

// appendPosition appends the fields block_number, log_index, tx_hash and
// block_time of p, and returns the earlier of since and p's block time.
func appendPosition(b []byte, p chain.Position, since time.Time) ([]byte, time.Time) {
	b = strconv.AppendInt(b, int64(p.BlockNumber), 10)
	b = strconv.AppendInt(append(b, '\t'), int64(p.LogIndex), 10)
	b = appendText(append(b, '\t'), lower(p.TxHash))
	t := p.BlockTime.UTC()
	b = appendTime(append(b, '\t'), t)
	if since.IsZero() || t.Before(since) {
		since = t
	}
	return b, since
}

// copyEvents streams n events into table with COPY, as ApplyBatch stores
// them: the position columns (block number, log index, transaction hash and
// the block time, in column timeCol) of pos(i), then the columns cols that
// rest appends. It marks the data dirty from the earliest block time.
func (a *BulkApplier) copyEvents(ctx context.Context, table, timeCol string, cols []string, n int,
	pos func(i int) chain.Position, rest func(b []byte, i int) ([]byte, error)) error {
	var since time.Time
	cols = append([]string{"block_number", "log_index", "tx_hash", timeCol}, cols...)
	err := a.copyRows(ctx, table, cols, n, func(b []byte, i int) ([]byte, error) {
		b, since = appendPosition(b, pos(i), since)
		return rest(append(b, '\t'), i)
	})
	if err != nil {
		return err
	}
	return a.tx.markDirty(ctx, since)
}

func (a *BulkApplier) copyDelegations(ctx context.Context, batch *chain.Batch) error {
	return a.copyEvents(ctx, "delegation_events", "block_time",
		[]string{"type", "staker_address", "operator_address", "strategy_address", "shares"}, len(batch.Delegations),
		func(i int) chain.Position { return batch.Delegations[i].Position },
		func(b []byte, i int) ([]byte, error) {
			e := &batch.Delegations[i]
			if !e.Type.Valid() {
				return nil, fmt.Errorf("delegation event at block %d log %d: unknown type %q", e.BlockNumber, e.LogIndex, e.Type)
			}
			staker, op := lower(e.Staker), lower(e.Operator)
			b = appendText(b, string(e.Type))
			b = appendText(append(b, '\t'), staker)
			b = append(appendText(append(b, '\t'), op), '\t')
			if e.Type == chain.SharesIncreased || e.Type == chain.SharesDecreased {
				b = appendBig(append(appendText(b, lower(e.Strategy)), '\t'), e.Shares)
			} else {
				b = appendNull(append(appendNull(b), '\t'))
			}
			return b, nil
		})
}

func (a *BulkApplier) copyDeposits(ctx context.Context, batch *chain.Batch) error {
	return a.copyEvents(ctx, "deposits", "block_time",
		[]string{"staker_address", "token_address", "strategy_address", "shares"}, len(batch.Deposits),
		func(i int) chain.Position { return batch.Deposits[i].Position },
		func(b []byte, i int) ([]byte, error) {
			e := &batch.Deposits[i]
			staker, strategy := lower(e.Staker), lower(e.Strategy)
			b = append(appendText(b, staker), '\t')
			if e.Token == "" {
				b = appendNull(b)
			} else {
				b = appendText(b, lower(e.Token))
			}
			b = appendText(append(b, '\t'), strategy)
			b = appendBig(append(b, '\t'), e.Shares)
			return b, nil
		})
}

func (a *BulkApplier) copyPodShares(ctx context.Context, batch *chain.Batch) error {
	return a.copyEvents(ctx, "pod_share_events", "block_time", []string{"pod_owner", "shares_delta"}, len(batch.PodShares),
		func(i int) chain.Position { return batch.PodShares[i].Position },
		func(b []byte, i int) ([]byte, error) {
			e := &batch.PodShares[i]
			owner := lower(e.PodOwner)
			b = appendBig(append(appendText(b, owner), '\t'), e.SharesDelta)
			return b, nil
		})
}

// copyDepositScalingFactors streams the deposit scaling factor events, one
// for nearly every slashing-era deposit and delegation, into their table;
// Finish derives the withdrawals' deposit shares from them.
func (a *BulkApplier) copyDepositScalingFactors(ctx context.Context, batch *chain.Batch) error {
	return a.copyEvents(ctx, "deposit_scaling_factor_events", "block_time",
		[]string{"staker_address", "strategy_address", "factor"}, len(batch.DepositScalingFactors),
		func(i int) chain.Position { return batch.DepositScalingFactors[i].Position },
		func(b []byte, i int) ([]byte, error) {
			e := &batch.DepositScalingFactors[i]
			b = append(appendText(b, lower(e.Staker)), '\t')
			b = append(appendText(b, lower(e.Strategy)), '\t')
			return appendBig(b, e.Factor), nil
		})
}

func (a *BulkApplier) stageWithdrawalsQueued(ctx context.Context, batch *chain.Batch) error {
	return a.copyEvents(ctx, "bulk_withdrawals", "created_at", []string{"withdrawal_root", "nonce", "staker_address",
		"delegated_to", "withdrawer_address", "start_block", "strategies", "shares", "scaled_shares", "batch"}, len(batch.WithdrawalsQueued),
		func(i int) chain.Position { return batch.WithdrawalsQueued[i].Position },
		func(b []byte, i int) ([]byte, error) {
			e := &batch.WithdrawalsQueued[i]
			if len(e.Strategies) != len(e.Shares) {
				return nil, fmt.Errorf("withdrawal %s: %d strategies but %d share amounts", e.Root, len(e.Strategies), len(e.Shares))
			}
			if len(e.Strategies) == 0 {
				return nil, fmt.Errorf("withdrawal %s: no strategies", e.Root)
			}
			staker := lower(e.Staker)
			d := lower(e.DelegatedTo)
			if d == "" {
				d = chain.ZeroAddress
			}
			w := lower(e.Withdrawer)
			if w == "" {
				w = staker
			}
			b = appendText(b, lower(e.Root))
			b = appendBig(append(b, '\t'), e.Nonce)
			b = appendText(append(b, '\t'), staker)
			b = appendText(append(b, '\t'), d)
			b = appendText(append(b, '\t'), w)
			b = strconv.AppendInt(append(b, '\t'), int64(e.StartBlock), 10)
			strategies := make([]string, len(e.Strategies))
			for j, s := range e.Strategies {
				strategies[j] = lower(s)
			}
			// Array literals, quoted element by element.
			b = appendText(append(b, '\t'), arrayLiteral(strategies))
			b = append(b, '\t', '{')
			for j, sh := range e.Shares {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendBig(b, sh)
			}
			b = append(b, '}', '\t')
			if e.ScaledShares == nil {
				b = appendNull(b)
			} else {
				if len(e.ScaledShares) != len(e.Strategies) {
					return nil, fmt.Errorf("withdrawal %s: %d strategies but %d scaled share amounts", e.Root, len(e.Strategies), len(e.ScaledShares))
				}
				b = append(b, '{')
				for j, sh := range e.ScaledShares {
					if j > 0 {
						b = append(b, ',')
					}
					b = appendBig(b, sh)
				}
				b = append(b, '}')
			}
			b = strconv.AppendInt(append(b, '\t'), int64(a.batches), 10)
			return b, nil
		})
}

// arrayLiteral is the PostgreSQL array literal of ss, each element quoted.
func arrayLiteral(ss []string) string {
	var sb strings.Builder
	sb.WriteByte('{')
	for i, s := range ss {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteByte('"')
		for j := 0; j < len(s); j++ {
			if s[j] == '"' || s[j] == '\\' {
				sb.WriteByte('\\')
			}
			sb.WriteByte(s[j])
		}
		sb.WriteByte('"')
	}
	sb.WriteByte('}')
	return sb.String()
}

func (a *BulkApplier) stageWithdrawalsCompleted(ctx context.Context, batch *chain.Batch) error {
	return a.copyEvents(ctx, "bulk_completions", "completed_at", []string{"withdrawal_root", "batch"}, len(batch.WithdrawalsDone),
		func(i int) chain.Position { return batch.WithdrawalsDone[i].Position },
		func(b []byte, i int) ([]byte, error) {
			b = appendText(b, lower(batch.WithdrawalsDone[i].Root))
			return strconv.AppendInt(append(b, '\t'), int64(a.batches), 10), nil
		})
}
