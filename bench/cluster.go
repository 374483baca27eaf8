package bench

import (
	"fmt"
	"runtime"
	"strings"
	"time"
)

// ClusterRun is one setup of the two-instance run: its load's statistics
// and the share of requests whose reads a replica served.
type ClusterRun struct {
	Setup        string
	Stats        *Stats
	ReplicaShare float64 // of the requests; 0 without a replica
}

// ClusterReport describes the two-instance run: clients closed-loop
// clients over the mixed workload for duration per setup, after warmup.
func ClusterReport(runs []ClusterRun, clients int, warmup, duration time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s UTC by `stakebench cluster` on %d cores: %d closed-loop clients over the mixed workload (every operation, by weight), %s of warm-up then %s per setup, each setup on the bench data with the response cache on unless it says otherwise. The two instances share the clients' requests in turn, as a round-robin load balancer would; the primary, the replica, Redis, both instances and the load generator share this one machine.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04"), runtime.NumCPU(), clients, warmup, duration)
	b.WriteString("| Setup | Requests/s | p50 ms | p95 ms | p99 ms | 5xx | Other failures | Reads on the replica |\n|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range runs {
		ms := func(p float64) float64 { return float64(r.Stats.Percentile(p)) / 1e6 }
		share := "–"
		if r.ReplicaShare > 0 {
			share = fmt.Sprintf("%.0f%%", 100*r.ReplicaShare)
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.1f | %.1f | %.1f | %d | %d | %s |\n", r.Setup, r.Stats.RPS(), ms(0.5), ms(0.95), ms(0.99),
			r.Stats.Count5xx(), r.Stats.CountFailed()-r.Stats.Count5xx(), share)
	}
	return b.String()
}
