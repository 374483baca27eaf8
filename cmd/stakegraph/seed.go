package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/stakegraph/stakegraph/demo"
)

// seedFlags registers the flags both seed commands take and returns the
// function that reads them into demo.Options.
func seedFlags(fs *flag.FlagSet, c *cli) (ifEmpty *bool, options func() (demo.Options, error)) {
	now := fs.String("now", "", "end the generated history at this `time` (RFC 3339); default the current time")
	seed := fs.Int64("seed", 1, "the generator's `seed`: the same seed and --now give the same data")
	ifEmpty = fs.Bool("if-empty", false, "do nothing, successfully, when the database already holds data")
	return ifEmpty, func() (demo.Options, error) {
		opts := demo.Options{Seed: *seed, Network: c.network, Now: time.Now().UTC()}
		if *now != "" {
			t, err := time.Parse(time.RFC3339, *now)
			if err != nil {
				return demo.Options{}, usagef("--now %q is not an RFC 3339 time such as 2025-06-01T00:00:00Z", *now)
			}
			opts.Now = t
		}
		return opts, nil
	}
}

// seedResult turns demo.ErrNotEmpty into success under --if-empty.
func (c *cli) seedResult(err error, ifEmpty bool, start time.Time) error {
	switch {
	case err == nil:
		c.logger.Info("seeded the database", "network", c.network.Name, "duration", time.Since(start).Round(time.Millisecond).String())
		return nil
	case ifEmpty && errors.Is(err, demo.ErrNotEmpty):
		c.logger.Info("the database already holds data; not seeding it")
		return nil
	}
	return err
}

var seedDemoCommand = command{
	name:    "seed demo",
	summary: "load the generated demo data set into an empty database",
	flags: func(fs *flag.FlagSet, c *cli) func(context.Context, []string) error {
		ifEmpty, options := seedFlags(fs, c)
		return func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected arguments %q", args)
			}
			opts, err := options()
			if err != nil {
				return err
			}
			db, err := c.openDatabase(ctx)
			if err != nil {
				return err
			}
			defer db.Close()
			start := time.Now()
			c.logger.Info("seeding demo data", "now", opts.Now.Format(time.RFC3339), "seed", opts.Seed)
			return c.seedResult(demo.SeedDemo(ctx, db.DB, opts), *ifEmpty, start)
		}
	},
}

var seedBenchCommand = command{
	name:    "seed bench",
	summary: "load the mainnet-scale bench data set into an empty database (slow)",
	flags: func(fs *flag.FlagSet, c *cli) func(context.Context, []string) error {
		ifEmpty, options := seedFlags(fs, c)
		return func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected arguments %q", args)
			}
			opts, err := options()
			if err != nil {
				return err
			}
			db, err := c.openDatabase(ctx)
			if err != nil {
				return err
			}
			defer db.Close()
			start := time.Now()
			c.logger.Info("seeding bench data", "now", opts.Now.Format(time.RFC3339), "seed", opts.Seed)
			err = demo.SeedBench(ctx, db.DB, demo.BenchOptions{Options: opts}, c.stderr)
			if err == nil {
				fmt.Fprintln(c.stderr)
			}
			return c.seedResult(err, *ifEmpty, start)
		}
	},
}
