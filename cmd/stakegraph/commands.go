package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/stakegraph/stakegraph/internal/version"
	"github.com/stakegraph/stakegraph/localpg"
)

var migrateCommand = command{
	name:    "migrate",
	summary: "apply pending database migrations (idempotent)",
	flags: func(fs *flag.FlagSet, c *cli) func(context.Context, []string) error {
		return func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected arguments %q", args)
			}
			db, err := c.openDatabase(ctx) // migrates
			if err != nil {
				return err
			}
			defer db.Close()
			c.logger.Info("database schema is up to date", "network", c.network.Name)
			return nil
		}
	},
}

var keysCreateCommand = command{
	name:    "keys create",
	summary: "create an API key and print it, alone on the last line of output",
	flags: func(fs *flag.FlagSet, c *cli) func(context.Context, []string) error {
		name := fs.String("name", "", "the key's `name` (required, unique)")
		rateLimit := fs.Int("rate-limit", 0, "requests per minute allowed to the key; unset means the service default")
		return func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected arguments %q", args)
			}
			if *name == "" {
				return usagef("--name is required")
			}
			var limit *int
			fs.Visit(func(f *flag.Flag) {
				if f.Name == "rate-limit" {
					limit = rateLimit
				}
			})
			db, err := c.openDatabase(ctx)
			if err != nil {
				return err
			}
			defer db.Close()
			key, err := db.CreateAPIKey(ctx, *name, limit)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "Created API key %q. Keep it now: it cannot be shown again.\n%s\n", *name, key)
			return nil
		}
	},
}

var keysListCommand = command{
	name:    "keys list",
	summary: "list the API keys, revoked ones included",
	flags: func(fs *flag.FlagSet, c *cli) func(context.Context, []string) error {
		return func(ctx context.Context, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected arguments %q", args)
			}
			db, err := c.openDatabase(ctx)
			if err != nil {
				return err
			}
			defer db.Close()
			keys, err := db.ListAPIKeys(ctx)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tPREFIX\tRATE LIMIT/MIN\tCREATED\tREVOKED")
			for _, k := range keys {
				limit, revoked := "default", "-"
				if k.RateLimitPerMinute != nil {
					limit = fmt.Sprint(*k.RateLimitPerMinute)
				}
				if k.RevokedAt != nil {
					revoked = k.RevokedAt.UTC().Format(time.RFC3339)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.Name, k.Prefix, limit, k.CreatedAt.UTC().Format(time.RFC3339), revoked)
			}
			return tw.Flush()
		}
	},
}

var keysRevokeCommand = command{
	name:    "keys revoke",
	args:    "NAME",
	summary: "revoke the API key with the given name",
	flags: func(fs *flag.FlagSet, c *cli) func(context.Context, []string) error {
		return func(ctx context.Context, args []string) error {
			if len(args) != 1 {
				return usagef("want exactly one key name")
			}
			db, err := c.openDatabase(ctx)
			if err != nil {
				return err
			}
			defer db.Close()
			if err := db.RevokeAPIKey(ctx, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "Revoked API key %q.\n", args[0])
			return nil
		}
	},
}

// localpgFlags registers --test, which selects the shared test cluster,
// and returns the function giving the selected cluster's options.
func localpgFlags(fs *flag.FlagSet, c *cli) func() (localpg.Options, error) {
	test := fs.Bool("test", false, "act on the shared test cluster of the store tests instead of $STAKEGRAPH_HOME/pg")
	return func() (localpg.Options, error) {
		if *test {
			return localpg.TestOptions(c.logger), nil
		}
		home, err := filepath.Abs(c.opts.home)
		if err != nil {
			return localpg.Options{}, err
		}
		return localpg.Options{Dir: localpg.HomeDir(home), Port: c.opts.pgPort, Logger: c.logger}, nil
	}
}

var localpgStartCommand = command{
	name:    "localpg start",
	summary: "start the local PostgreSQL cluster and leave it running",
	flags: func(fs *flag.FlagSet, c *cli) func(context.Context, []string) error {
		selected := localpgFlags(fs, c)
		replicaOf := fs.String("replica-of", "", "make a new cluster a streaming replica (read-only hot standby) of the PostgreSQL server at this `URL`, copied with pg_basebackup")
		return func(ctx context.Context, args []string) error {
			opts, err := selected()
			if err != nil {
				return err
			}
			opts.ReplicaOf = *replicaOf
			cluster, err := localpg.Start(ctx, opts)
			if err != nil {
				return err
			}
			defer cluster.Close()
			if err := cluster.KeepRunning(); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "PostgreSQL runs in %s: %s\n", cluster.Dir(), cluster.URL("postgres"))
			return nil
		}
	},
}

var localpgStopCommand = command{
	name:    "localpg stop",
	summary: "stop the local PostgreSQL cluster",
	flags: func(fs *flag.FlagSet, c *cli) func(context.Context, []string) error {
		selected := localpgFlags(fs, c)
		return func(ctx context.Context, args []string) error {
			opts, err := selected()
			if err != nil {
				return err
			}
			stopped, err := localpg.StopDir(ctx, opts.Dir, c.logger)
			if err != nil {
				return err
			}
			if stopped {
				fmt.Fprintf(c.stdout, "Stopped PostgreSQL in %s.\n", opts.Dir)
			} else {
				fmt.Fprintf(c.stdout, "PostgreSQL in %s was not running.\n", opts.Dir)
			}
			return nil
		}
	},
}

var localpgStatusCommand = command{
	name:    "localpg status",
	summary: "tell whether the local PostgreSQL cluster runs, and its URL",
	flags: func(fs *flag.FlagSet, c *cli) func(context.Context, []string) error {
		selected := localpgFlags(fs, c)
		return func(ctx context.Context, args []string) error {
			opts, err := selected()
			if err != nil {
				return err
			}
			st, err := localpg.DirStatus(opts.Dir)
			if err != nil {
				return err
			}
			if st.Running {
				fmt.Fprintf(c.stdout, "PostgreSQL in %s runs (pid %d): %s\n", opts.Dir, st.PID, st.URL)
			} else {
				fmt.Fprintf(c.stdout, "PostgreSQL in %s is not running.\n", opts.Dir)
			}
			return nil
		}
	},
}

var versionCommand = command{
	name:    "version",
	summary: "print the version",
	flags: func(fs *flag.FlagSet, c *cli) func(context.Context, []string) error {
		return func(context.Context, []string) error {
			fmt.Fprintf(c.stdout, "stakegraph %s\n", version.Version)
			return nil
		}
	},
}
