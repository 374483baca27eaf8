package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"
)

// SoakConfig shapes a soak: clients clients for Duration, reported per
// Interval.
type SoakConfig struct {
	Clients  int
	Duration time.Duration
	Interval time.Duration
	Seed     uint64
}

// SoakInterval is one interval of a soak.
type SoakInterval struct {
	Stats *Stats
	RSS   int64 // the server's resident set size at the end of the interval
}

// SoakResult is the outcome of a soak.
type SoakResult struct {
	Config    SoakConfig
	Intervals []SoakInterval
	Total     *Stats
	// Memory holds the server's resident set size every five seconds.
	Memory []MemorySample
	// WarmRSS is the largest RSS sampled during the second interval (the
	// first is warm-up); EndRSS the largest during the last one.
	WarmRSS, EndRSS, PeakRSS int64
}

// Soak runs next from cfg.Clients clients for cfg.Duration, one interval at
// a time, recording the server's memory.
func Soak(ctx context.Context, srv *Server, c *Client, next func(*rand.Rand) Request, cfg SoakConfig) SoakResult {
	res := SoakResult{Config: cfg, Total: newStats()}
	sampler := SampleMemory(srv.PID(), 5*time.Second)
	start := time.Now()
	for i := 0; time.Since(start) < cfg.Duration && ctx.Err() == nil; i++ {
		d := min(cfg.Interval, cfg.Duration-time.Since(start))
		s := Load(ctx, c, cfg.Clients, d, cfg.Seed+uint64(i)*1000, next, nil)
		mem, _ := ReadMemory(srv.PID())
		res.Intervals = append(res.Intervals, SoakInterval{Stats: s, RSS: mem.RSS})
		res.Total.merge(s)
	}
	res.Total.finish(time.Since(start))
	res.PeakRSS, res.Memory = sampler.Stop()
	interval := cfg.Interval
	for _, m := range res.Memory {
		switch {
		case m.At >= interval && m.At < 2*interval:
			res.WarmRSS = max(res.WarmRSS, m.RSS)
		case m.At >= res.Total.Elapsed-interval:
			res.EndRSS = max(res.EndRSS, m.RSS)
		}
	}
	return res
}

// Growth is the RSS growth from warm-up to the end, in percent.
func (r SoakResult) Growth() float64 {
	if r.WarmRSS == 0 {
		return 0
	}
	return 100 * float64(r.EndRSS-r.WarmRSS) / float64(r.WarmRSS)
}

// Report renders the soak as Markdown.
func (r SoakResult) Report() string {
	var b strings.Builder
	t := r.Total
	flat := r.Growth() <= TargetSoakGrowthPct
	fmt.Fprintf(&b, "%d clients for %s over the mixed workload (every operation above, by weight), ended %s.\n\n",
		r.Config.Clients, r.Config.Duration, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "| Check | Result | Target |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| Requests | %d (%.0f/s), %s | |\n", t.Requests, t.RPS(), t.StatusSummary())
	fmt.Fprintf(&b, "| 5xx responses | %d | 0: %s |\n", t.Count5xx(), mark(t.Count5xx() == 0))
	fmt.Fprintf(&b, "| Transport errors | %d | 0: %s |\n", t.TransportErrors, mark(t.TransportErrors == 0))
	fmt.Fprintf(&b, "| Other non-2xx | %d | 0: %s |\n", t.CountNon2xx()-t.Count5xx(), mark(t.CountNon2xx()-t.Count5xx() == 0))
	fmt.Fprintf(&b, "| GraphQL responses with errors | %d | 0: %s |\n", t.GraphQLErrors, mark(t.GraphQLErrors == 0))
	fmt.Fprintf(&b, "| Latency p50 / p99 / max | %s / %s / %s ms | |\n", ms(t.Percentile(0.5)), ms(t.Percentile(0.99)), ms(t.Max()))
	fmt.Fprintf(&b, "| RSS after warm-up → at the end (peak) | %s → %s MiB (%s MiB), %+.1f%% | flat (≤ +%d%%): %s; ≤ 250 MiB: %s |\n",
		mib(r.WarmRSS), mib(r.EndRSS), mib(r.PeakRSS), r.Growth(), TargetSoakGrowthPct, mark(flat), mark(r.PeakRSS <= TargetRSS))
	if len(t.FirstErrors) > 0 {
		fmt.Fprintf(&b, "\nFirst failures: %s\n", strings.Join(t.FirstErrors, "; "))
	}
	fmt.Fprintf(&b, "\n| Interval | Requests/s | p50 ms | p99 ms | 5xx | Transport errors | Failed in all | RSS MiB at the end |\n|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for i, in := range r.Intervals {
		s := in.Stats
		fmt.Fprintf(&b, "| %d | %.0f | %s | %s | %d | %d | %d | %s |\n", i+1, s.RPS(), ms(s.Percentile(0.5)), ms(s.Percentile(0.99)),
			s.Count5xx(), s.TransportErrors, s.CountFailed(), mib(in.RSS))
	}
	return b.String()
}

// RestartConfig shapes a database restart under load: clients clients run
// for Before, then Stop takes PostgreSQL down, it stays down for Down, Start
// brings it back, and the load goes on for After.
type RestartConfig struct {
	Clients             int
	Before, Down, After time.Duration
	Seed                uint64
	Stop, Start         func(context.Context) error
}

// timedOutcome is an outcome with the time its request ended, since the
// start of the run.
type timedOutcome struct {
	at time.Duration
	Outcome
}

// RestartResult is the outcome of a database restart under load.
type RestartResult struct {
	Config RestartConfig
	// Times of the phases, since the start of the load.
	StopBegan, StopEnded, StartBegan, StartEnded time.Duration
	// Before, Down and After hold the outcomes of requests that ended
	// before the stop, while the database was down (from the end of Stop
	// to the start of Start), and after Start returned.
	Before, Down, After *Stats
	// DownServed200 counts the successful answers while down: cache hits
	// before the cache noticed the outage, and requests that had their
	// data before it.
	DownServed200 int
	// Down503 counts the REST 503s while down and Down503JSON those whose
	// body is the contract's JSON error; DownGraphQL counts the GraphQL
	// answers whose errors all say internal_server_error (503 since the
	// GraphQL endpoint reports an unavailable database with that status;
	// 200 from a server that answers failed execution with 200).
	// DownFailureP99 is the p99 latency of all of those failures.
	Down503, Down503JSON, DownGraphQL int
	DownFailureP99                    time.Duration
	// DownOther describes up to five answers while down that were none of
	// those.
	DownOther []string
	// FirstDBSuccess is the time from the end of Start to the first 200
	// that was not a cache hit; LastFailure to the last 5xx or transport
	// error (0 when none came after Start).
	FirstDBSuccess, LastFailure time.Duration
	StopErr, StartErr           error
}

// Restart runs the restart scenario.
func Restart(ctx context.Context, c *Client, next func(*rand.Rand) Request, cfg RestartConfig) RestartResult {
	res := RestartResult{Config: cfg, Before: newStats(), Down: newStats(), After: newStats()}
	var mu sync.Mutex
	var outcomes []timedOutcome
	var reqs []Request
	start := time.Now()
	total := cfg.Before + cfg.Down + cfg.After + 60*time.Second // Stop and Start take time
	loadCtx, stopLoad := context.WithCancel(ctx)
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		Load(loadCtx, c, cfg.Clients, total, cfg.Seed, next, func(req Request, o Outcome) {
			mu.Lock()
			outcomes = append(outcomes, timedOutcome{at: time.Since(start), Outcome: o})
			reqs = append(reqs, req)
			mu.Unlock()
		})
	}()
	sleep := func(d time.Duration) {
		select {
		case <-ctx.Done():
		case <-time.After(d):
		}
	}
	sleep(cfg.Before)
	res.StopBegan = time.Since(start)
	res.StopErr = cfg.Stop(ctx)
	res.StopEnded = time.Since(start)
	sleep(cfg.Down)
	res.StartBegan = time.Since(start)
	res.StartErr = cfg.Start(ctx)
	res.StartEnded = time.Since(start)
	sleep(cfg.After)
	stopLoad()
	<-loadDone

	var down503 []time.Duration
	for i, o := range outcomes {
		req := reqs[i]
		switch {
		case o.at < res.StopBegan:
			res.Before.add(req, o.Outcome)
		case o.at >= res.StopEnded && o.at < res.StartBegan:
			res.Down.add(req, o.Outcome)
			switch {
			case (o.Status == 503 || o.Status == 200) && o.GraphQLUnavailable:
				res.DownGraphQL++
				down503 = append(down503, o.Latency)
			case o.Status == 200 && o.GraphQLError:
				if len(res.DownOther) < 5 {
					res.DownOther = append(res.DownOther, fmt.Sprintf("%s %.200s: %d %s", req.Method, req.Body, o.Status, o.Snippet))
				}
			case o.Status == 200:
				res.DownServed200++
			case o.Status == 503:
				res.Down503++
				down503 = append(down503, o.Latency)
				if isErrorJSON(o.Snippet) {
					res.Down503JSON++
				}
			}
		case o.at >= res.StartEnded:
			res.After.add(req, o.Outcome)
			since := o.at - res.StartEnded
			if o.Status == 200 && !o.CacheHit && !o.GraphQLError && res.FirstDBSuccess == 0 {
				res.FirstDBSuccess = since
			}
			if o.Err != nil || o.Status >= 500 || o.GraphQLError {
				res.LastFailure = since
			}
		}
	}
	res.Before.finish(res.StopBegan)
	res.Down.finish(res.StartBegan - res.StopEnded)
	res.After.finish(time.Since(start) - res.StartEnded)
	down := &Stats{latencies: down503}
	down.finish(0)
	res.DownFailureP99 = down.Percentile(0.99)
	return res
}

// isErrorJSON reports whether body is the contract's error object.
func isErrorJSON(body string) bool {
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	return json.Unmarshal([]byte(body), &e) == nil && e.Error.Code != "" && e.Error.Message != ""
}

// isGraphQLUnavailable reports whether body is a GraphQL response whose
// errors all carry the code internal_server_error.
func isGraphQLUnavailable(body []byte) bool {
	var r struct {
		Errors []struct {
			Extensions struct {
				Code string `json:"code"`
			} `json:"extensions"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &r) != nil || len(r.Errors) == 0 {
		return false
	}
	for _, e := range r.Errors {
		if e.Extensions.Code != "internal_server_error" {
			return false
		}
	}
	return true
}

// Report renders the restart as Markdown.
func (r RestartResult) Report() string {
	var b strings.Builder
	cfg := r.Config
	fmt.Fprintf(&b, "%d clients over the mixed workload; PostgreSQL stopped (fast shutdown) after %s, kept down %s, started again and the load kept on for %s. Requests that ended while PostgreSQL was stopping or starting count in no phase. Ended %s.\n\n",
		cfg.Clients, cfg.Before, cfg.Down, cfg.After, time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	if r.StopErr != nil || r.StartErr != nil {
		fmt.Fprintf(&b, "Stopping or starting PostgreSQL failed: stop: %v; start: %v\n\n", r.StopErr, r.StartErr)
	}
	downOK := r.Down.TransportErrors == 0 && r.Down503 == r.Down503JSON && r.Down503+r.DownGraphQL+r.DownServed200 == r.Down.Requests
	fmt.Fprintf(&b, "| Phase | Requests | Statuses | p50 ms | p99 ms |\n|---|--:|---|--:|--:|\n")
	for _, p := range []struct {
		name string
		s    *Stats
	}{{"before", r.Before}, {"database down", r.Down}, {"after it returned", r.After}} {
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |\n", p.name, p.s.Requests, p.s.StatusSummary(), ms(p.s.Percentile(0.5)), ms(p.s.Percentile(0.99)))
	}
	fmt.Fprintf(&b, "\n| Check | Result | Verdict |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| While down: REST answers 503 with the JSON error body, GraphQL 503 with errors whose code is internal_server_error; a few 200s are cache hits before the cache notices, or requests in flight when it stopped | %d × 503 (%d with the JSON body), %d GraphQL errors, %d × 200, %d other | %s |\n",
		r.Down503, r.Down503JSON, r.DownGraphQL, r.DownServed200, r.Down.Requests-r.Down503-r.DownGraphQL-r.DownServed200, mark(downOK))
	fmt.Fprintf(&b, "| While down: failures are fast | p99 %s ms | %s |\n", ms(r.DownFailureP99), mark(r.DownFailureP99 <= time.Second))
	recovered := r.FirstDBSuccess > 0 && r.LastFailure < 10*time.Second && r.After.Requests > 0
	fmt.Fprintf(&b, "| Recovery after PostgreSQL accepts connections again | first database-backed 200 after %s ms, last failure %s ms after | within seconds: %s |\n",
		ms(r.FirstDBSuccess), ms(r.LastFailure), mark(recovered))
	fmt.Fprintf(&b, "| No 500 and no transport error in any phase | 500: %d, transport errors: %d | %s |\n",
		r.Before.Statuses[500]+r.Down.Statuses[500]+r.After.Statuses[500],
		r.Before.TransportErrors+r.Down.TransportErrors+r.After.TransportErrors,
		mark(r.Before.Statuses[500]+r.Down.Statuses[500]+r.After.Statuses[500]+r.Before.TransportErrors+r.Down.TransportErrors+r.After.TransportErrors == 0))
	if len(r.DownOther) > 0 {
		fmt.Fprintf(&b, "\nOther answers while down: %s\n", strings.Join(r.DownOther, "; "))
	}
	return b.String()
}
