package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/store"
)

// ErrNotEmpty is returned by SeedDemo and SeedBench for a database that
// already holds events: generated data is only ever loaded into an empty
// database.
var ErrNotEmpty = errors.New("the database already holds events; seed an empty database")

// withDefaults fills a zero Now with the current time and a zero Network
// with mainnet.
func (o Options) withDefaults() Options {
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Network.Name == "" {
		o.Network = chain.Networks["mainnet"]
	}
	return o
}

// prepare records the network and refuses a database that holds events.
func prepare(ctx context.Context, db *store.DB, network string) error {
	if err := db.EnsureNetwork(ctx, network); err != nil {
		return err
	}
	has, err := db.HasEvents(ctx)
	if err != nil {
		return err
	}
	if has {
		return ErrNotEmpty
	}
	return nil
}

// SeedDemo generates the demo world for opts (see Generate) and loads it
// into db, which must hold no events, in one transaction: reference data,
// every event, curated metadata, the head, and a final refresh as of
// opts.Now.
func SeedDemo(ctx context.Context, db *store.DB, opts Options) error {
	opts = opts.withDefaults()
	w, err := Generate(opts)
	if err != nil {
		return err
	}
	if err := prepare(ctx, db, opts.Network.Name); err != nil {
		return err
	}
	// The event tables' secondary indexes are built once, after the load.
	return db.BulkLoad(ctx, func(ctx context.Context) error {
		return db.InBulkTx(ctx, func(tx *store.Tx, a *store.BulkApplier) error {
			if err := writeReference(ctx, tx, w.Reference); err != nil {
				return err
			}
			for i := range w.Batches {
				if err := a.Apply(ctx, &w.Batches[i]); err != nil {
					return err
				}
			}
			if err := a.Finish(ctx); err != nil {
				return err
			}
			return finish(ctx, tx, w.Reference, w.Head, opts.Now)
		})
	})
}

func writeReference(ctx context.Context, tx *store.Tx, ref Reference) error {
	if err := tx.UpsertTokens(ctx, ref.Tokens); err != nil {
		return err
	}
	if err := tx.UpsertStrategies(ctx, ref.Strategies); err != nil {
		return err
	}
	return tx.SetMinWithdrawalDelay(ctx, ref.MinWithdrawalDelay)
}

// demoETHSupply is the ETH supply the demo worlds record, oldest first:
// what an indexer's supply source would have observed (the chain itself
// does not tell), so that the restaking ratio and its changes have values.
var demoETHSupply = []struct {
	before time.Duration
	supply string
}{
	{30 * 24 * time.Hour, "120436871.25"},
	{8 * 24 * time.Hour, "120441904.5"},
	{36 * time.Hour, "120443388.75"},
	{2 * time.Hour, "120443512.125"},
}

// finish writes what needs the AVS to exist, the head, and refreshes.
func finish(ctx context.Context, tx *store.Tx, ref Reference, head chain.Position, now time.Time) error {
	if err := tx.UpsertCuratedMetadata(ctx, ref.Curated); err != nil {
		return err
	}
	if err := tx.SetHead(ctx, head); err != nil {
		return err
	}
	for _, o := range demoETHSupply {
		if err := tx.RecordETHSupply(ctx, now.Add(-o.before), o.supply); err != nil {
			return err
		}
	}
	if err := tx.Refresh(ctx, now); err != nil {
		return fmt.Errorf("refresh: %w", err)
	}
	return nil
}

// BenchOptions select the bench world.
type BenchOptions struct {
	Options
	// Scale sizes the world; the zero value means BenchScale.
	Scale Scale
}

// SeedBench generates the bench world and loads it into db, which must
// hold no events, in one transaction: generation runs alongside loading,
// each simulated day is applied as it comes (memory stays bounded), and
// the staker state and the aggregates are derived once at the end. A load
// that fails part way leaves no events behind. Progress goes to progress
// (nil for none): a line every few seconds, or one line rewritten in place
// when progress is a terminal.
func SeedBench(ctx context.Context, db *store.DB, opts BenchOptions, progress io.Writer) error {
	opts.Options = opts.Options.withDefaults()
	sc := opts.Scale
	if sc == (Scale{}) {
		sc = BenchScale
	}
	g, err := newGenerator(opts.Options, sc)
	if err != nil {
		return err
	}
	ref := g.reference()
	if err := prepare(ctx, db, opts.Network.Name); err != nil {
		return err
	}
	if err := db.InTx(ctx, func(tx *store.Tx) error { return writeReference(ctx, tx, ref) }); err != nil {
		return err
	}
	// The event tables' secondary indexes are built once, after the load.
	return db.BulkLoad(ctx, func(ctx context.Context) error {
		return loadBench(ctx, db, opts, sc, g, ref, progress)
	})
}

// loadBench streams the generated days into db in one transaction and
// derives the state once at the end.
func loadBench(ctx context.Context, db *store.DB, opts BenchOptions, sc Scale, g *generator, ref Reference, progress io.Writer) error {
	// The generator runs in its own goroutine, a few days ahead of the
	// loader.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	days := make(chan *chain.Batch, 4)
	genErr := make(chan error, 1)
	go func() {
		defer close(days)
		genErr <- g.run(func(b *chain.Batch) error {
			select {
			case days <- b:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()

	meter := newProgressMeter(progress, g.activityByDay(), time.Now())
	return db.InBulkTx(ctx, func(tx *store.Tx, a *store.BulkApplier) error {
		var head chain.Position
		for b := range days {
			if err := a.Apply(ctx, b); err != nil {
				return err
			}
			head = b.Head
			meter.done(1, b.Len(), time.Now())
		}
		if err := <-genErr; err != nil {
			return err
		}
		start := time.Now()
		meter.printf("storing withdrawals and stakers, refreshing aggregates and %d daily snapshots...", sc.Days)
		if err := a.Finish(ctx); err != nil {
			return err
		}
		derived := time.Now()
		if err := finish(ctx, tx, ref, head, opts.Now); err != nil {
			return err
		}
		meter.finish(derived.Sub(start), time.Since(derived))
		return nil
	})
}

// activityByDay estimates how many events each simulated day produces,
// relative to the others: a staker's arrival brings a handful of events
// and every staker present a small chance of more each day.
func (g *generator) activityByDay() []int64 {
	out := make([]int64, len(g.arrivals))
	var present int64
	for d, n := range g.arrivals {
		present += int64(n)
		out[d] = present + 60*int64(n)
	}
	return out
}

// progressMeter reports the progress of a bench load.
type progressMeter struct {
	w        io.Writer
	terminal bool
	weights  []int64
	total    int64
	began    time.Time

	days    int
	weight  int64
	events  int64
	lastOut time.Time
}

func newProgressMeter(w io.Writer, weights []int64, now time.Time) *progressMeter {
	m := &progressMeter{w: w, weights: weights, began: now}
	for _, x := range weights {
		m.total += x
	}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			m.terminal = true
		}
	}
	return m
}

// done records days more days holding events events.
func (m *progressMeter) done(days, events int, now time.Time) {
	for range days {
		m.weight += m.weights[m.days]
		m.days++
	}
	m.events += int64(events)
	if m.w == nil || (!m.terminal && now.Sub(m.lastOut) < 5*time.Second && m.days < len(m.weights)) {
		return
	}
	m.lastOut = now
	elapsed := now.Sub(m.began)
	frac := float64(m.weight) / float64(m.total)
	estimate := int64(float64(m.events) / frac)
	eta := time.Duration(float64(elapsed) * (1 - frac) / frac)
	rate := float64(m.events) / elapsed.Seconds()
	line := fmt.Sprintf("bench: day %d/%d, %d / ~%d events (%.0f%%), %.0f events/s, elapsed %s, ETA %s",
		m.days, len(m.weights), m.events, estimate, 100*frac, rate, elapsed.Round(time.Second), eta.Round(time.Second))
	if m.terminal {
		fmt.Fprintf(m.w, "\r\033[K%s", line)
		return
	}
	fmt.Fprintln(m.w, line)
}

func (m *progressMeter) printf(format string, args ...any) {
	if m.w == nil {
		return
	}
	if m.terminal {
		fmt.Fprintln(m.w)
	}
	fmt.Fprintf(m.w, "bench: "+format+"\n", args...)
}

func (m *progressMeter) finish(stakers, refresh time.Duration) {
	m.printf("loaded %d events in %s (withdrawals and stakers %s, refresh %s)", m.events, time.Since(m.began).Round(time.Second),
		stakers.Round(time.Second), refresh.Round(time.Second))
}
