package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// DataVersion returns service_state.data_version, which every committed
// batch and every refresh increments: two equal readings mean that no
// reader-visible data changed in between. Response caches key on it. A
// database without its service_state row yet is at version 0.
func (db *DB) DataVersion(ctx context.Context) (int64, error) {
	var v int64
	err := db.getContext(ctx, &v, `SELECT data_version FROM service_state WHERE id`)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read data version: %w", Classify(err))
	}
	return v, nil
}
