package indexer

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// IsTerminal reports whether f is a character device (a terminal), where a
// self-overwriting progress line makes sense.
func IsTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// ReportProgress rewrites one progress line on w every interval until ctx
// ends: blocks done and to go, logs per second and the time left at the
// current pace.
func ReportProgress(ctx context.Context, w io.Writer, m *Metrics, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	prev := m.Snapshot()
	prevAt := time.Now()
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(w)
			return
		case now := <-t.C:
			cur := m.Snapshot()
			fmt.Fprintf(w, "\r%s\x1b[K", ProgressLine(prev, cur, now.Sub(prevAt)))
			prev, prevAt = cur, now
		}
	}
}

// ProgressLine describes the progress between two snapshots taken elapsed
// apart.
func ProgressLine(prev, cur Snapshot, elapsed time.Duration) string {
	secs := elapsed.Seconds()
	if secs <= 0 {
		secs = 1
	}
	blocksPerSec := float64(cur.Blocks-prev.Blocks) / secs
	logsPerSec := float64(cur.Logs-prev.Logs) / secs
	var toGo uint64
	if cur.TargetHead > cur.IndexedHead {
		toGo = cur.TargetHead - cur.IndexedHead
	}
	eta := "-"
	switch {
	case toGo == 0:
		eta = "caught up"
	case blocksPerSec > 0:
		eta = (time.Duration(float64(toGo)/blocksPerSec) * time.Second).Round(time.Second).String()
	}
	return fmt.Sprintf("block %d · %d blocks done · %d to go · %.0f logs/s · %.0f blocks/s · ETA %s · errors %d",
		cur.IndexedHead, cur.Blocks, toGo, logsPerSec, blocksPerSec, eta, cur.Errors)
}
