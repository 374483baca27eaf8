package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// statementsMetric is the server's counter of SQL statements sent.
const statementsMetric = "stakegraph_sql_statements_total"

// OpResult is the measurement of one operation under load.
type OpResult struct {
	Op    Operation
	Stats *Stats
	// Statements is the average number of SQL statements per request
	// during the run (background statements of the server included: the
	// cache's data version poll, once a second, and the API key reload,
	// once every 30 s).
	Statements float64
	// PeakRSS is the largest resident set size of the server sampled
	// during the run.
	PeakRSS int64
}

// LoadConfig sets the shape of a measurement.
type LoadConfig struct {
	Clients  int
	Warmup   time.Duration
	Duration time.Duration
	Seed     uint64
}

// Measure warms the server up with op and then measures it.
func Measure(ctx context.Context, srv *Server, c *Client, op Operation, cfg LoadConfig) (OpResult, error) {
	if cfg.Warmup > 0 {
		Load(ctx, c, cfg.Clients, cfg.Warmup, cfg.Seed, op.Next, nil)
	}
	metrics := srv.AdminURL + "/metrics"
	before, err := ScrapeCounter(ctx, metrics, statementsMetric)
	if err != nil {
		return OpResult{}, err
	}
	sampler := SampleMemory(srv.PID(), 100*time.Millisecond)
	stats := Load(ctx, c, cfg.Clients, cfg.Duration, cfg.Seed+1, op.Next, nil)
	peak, _ := sampler.Stop()
	after, err := ScrapeCounter(ctx, metrics, statementsMetric)
	if err != nil {
		return OpResult{}, err
	}
	res := OpResult{Op: op, Stats: stats, PeakRSS: peak}
	if stats.Requests > 0 {
		res.Statements = (after - before) / float64(stats.Requests)
	}
	return res, ctx.Err()
}

// StatementRange is the fewest and most SQL statements one request of an
// operation cost, over requests sent one at a time.
type StatementRange struct {
	Min, Max int
	Requests int
}

func (r StatementRange) String() string {
	if r.Requests == 0 {
		return "-"
	}
	if r.Min == r.Max {
		return fmt.Sprint(r.Min)
	}
	return fmt.Sprintf("%d–%d", r.Min, r.Max)
}

// CountStatements sends n requests of op one at a time and returns the
// range of SQL statements each cost. Run it against a server without a
// response cache, whose only background statement is the API key reload
// (once every 30 s); a request that failed is an error.
func CountStatements(ctx context.Context, srv *Server, c *Client, op Operation, n int, seed uint64) (StatementRange, error) {
	metrics := srv.AdminURL + "/metrics"
	rng := rand.New(rand.NewPCG(seed, 99))
	r := StatementRange{Min: -1}
	for range n {
		req := op.Next(rng)
		before, err := ScrapeCounter(ctx, metrics, statementsMetric)
		if err != nil {
			return r, err
		}
		o := c.Do(ctx, req)
		if o.Err != nil || o.Status != 200 {
			return r, fmt.Errorf("%s %s: status %d, %v %s", req.Method, req.Target, o.Status, o.Err, o.Snippet)
		}
		after, err := ScrapeCounter(ctx, metrics, statementsMetric)
		if err != nil {
			return r, err
		}
		k := int(after - before)
		if r.Min < 0 || k < r.Min {
			r.Min = k
		}
		r.Max = max(r.Max, k)
		r.Requests++
	}
	return r, nil
}
