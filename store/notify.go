package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/lib/pq"
)

// The channels on which the database announces version changes (migration
// 00032), with the new version as payload.
const (
	// DataVersionChannel announces a new data version (DataVersion).
	DataVersionChannel = "stakegraph_data_version"
	// APIKeysVersionChannel announces a change to the API keys
	// (APIKeysVersion).
	APIKeysVersionChannel = "stakegraph_api_keys_version"
)

// ListenVersions calls changed with a channel's name and the announced
// version each time the database announces a change on DataVersionChannel
// or APIKeysVersionChannel, until ctx ends. It listens on a connection of
// its own, which it restores when lost; since changes may have been
// announced meanwhile, it then calls changed for both channels with
// version -1 (unknown). It returns an error only when it cannot start
// listening.
func (db *DB) ListenVersions(ctx context.Context, changed func(channel string, version int64)) error {
	l := pq.NewListener(db.url, 100*time.Millisecond, 10*time.Second, nil)
	defer l.Close()
	// Listen waits for the server, however long it is down: the wait
	// ends with ctx (Close ends it).
	listened := make(chan error, 1)
	go func() {
		for _, ch := range []string{DataVersionChannel, APIKeysVersionChannel} {
			if err := l.Listen(ch); err != nil {
				listened <- fmt.Errorf("listen on %s: %w", ch, Classify(err))
				return
			}
		}
		listened <- nil
	}()
	select {
	case <-ctx.Done():
		return nil
	case err := <-listened:
		if err != nil {
			return err
		}
	}
	// The listener finds out that a quiet connection died only when it
	// uses it: a ping now and then does.
	ping := time.NewTicker(30 * time.Second)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case n := <-l.Notify:
			if n == nil {
				// Reconnected: announcements may have been missed.
				changed(DataVersionChannel, -1)
				changed(APIKeysVersionChannel, -1)
				continue
			}
			v, err := strconv.ParseInt(n.Extra, 10, 64)
			if err != nil {
				v = -1
			}
			changed(n.Channel, v)
		case <-ping.C:
			_ = l.Ping()
		}
	}
}
