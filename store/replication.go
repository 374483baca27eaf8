package store

import (
	"context"
	"fmt"
)

// ReplicaStatus is what a PostgreSQL server says of its replay of the
// primary's write-ahead log.
type ReplicaStatus struct {
	// InRecovery is true on a standby (a read replica), false on a primary.
	InRecovery bool `db:"in_recovery"`
	// ReplayLSN is the last log position replayed ("" on a primary).
	ReplayLSN string `db:"replay_lsn"`
	// LagSeconds is how far behind the primary the replayed data is: 0
	// when everything received is replayed, else the age of the last
	// replayed transaction.
	LagSeconds float64 `db:"lag_seconds"`
}

// ReplicaStatus returns the replay status of the server db connects to.
func (db *DB) ReplicaStatus(ctx context.Context) (ReplicaStatus, error) {
	var s ReplicaStatus
	if err := db.getContext(ctx, &s, `
		SELECT pg_is_in_recovery() AS in_recovery,
		       COALESCE(pg_last_wal_replay_lsn()::text, '') AS replay_lsn,
		       CASE
		           WHEN NOT pg_is_in_recovery()
		             OR pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn()
		             OR pg_last_xact_replay_timestamp() IS NULL THEN 0
		           ELSE GREATEST(0, EXTRACT(epoch FROM now() - pg_last_xact_replay_timestamp()))::float8
		       END AS lag_seconds`); err != nil {
		return ReplicaStatus{}, fmt.Errorf("read replica status: %w", Classify(err))
	}
	return s, nil
}

// WALBytesAhead returns how many bytes of write-ahead log the primary db
// connects to has written past the position lsn (a replica's ReplayLSN).
func (db *DB) WALBytesAhead(ctx context.Context, lsn string) (int64, error) {
	var n int64
	if err := db.getContext(ctx, &n, `SELECT GREATEST(0, pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn))::bigint`, lsn); err != nil {
		return 0, fmt.Errorf("read WAL position: %w", Classify(err))
	}
	return n, nil
}
