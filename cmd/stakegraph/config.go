package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/stakegraph/stakegraph/chain"
	"github.com/stakegraph/stakegraph/localpg"
	"github.com/stakegraph/stakegraph/server"
	"github.com/stakegraph/stakegraph/store"
)

// localDatabase is the database the local cluster serves.
const localDatabase = "stakegraph"

// options are the settings every command takes, as global flags with
// environment variables for defaults.
type options struct {
	network     string
	databaseURL string
	home        string
	pgPort      int
	logFormat   string
	logLevel    string
}

// fromEnv sets the defaults from the environment.
func (o *options) fromEnv(getenv func(string) string) error {
	o.network = envOr(getenv, "STAKEGRAPH_NETWORK", "mainnet")
	o.databaseURL = getenv("DATABASE_URL")
	o.home = envOr(getenv, "STAKEGRAPH_HOME", ".stakegraph")
	o.logFormat = envOr(getenv, "STAKEGRAPH_LOG_FORMAT", "auto")
	o.logLevel = envOr(getenv, "STAKEGRAPH_LOG_LEVEL", "info")
	o.pgPort = localpg.DefaultPort
	if p := getenv("STAKEGRAPH_PG_PORT"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("STAKEGRAPH_PG_PORT=%q is not a port number", p)
		}
		o.pgPort = n
	}
	return nil
}

func envOr(getenv func(string) string, name, fallback string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return fallback
}

// register adds the options to fs, with their current values as defaults,
// so that flags given after the command override those given before it.
func (o *options) register(fs *flag.FlagSet) {
	fs.StringVar(&o.network, "network", o.network, "the EigenLayer `network` served: mainnet or holesky (env STAKEGRAPH_NETWORK)")
	fs.StringVar(&o.databaseURL, "database-url", o.databaseURL, "PostgreSQL `URL`; empty means the local cluster (env DATABASE_URL)")
	fs.StringVar(&o.home, "home", o.home, "`directory` of the local PostgreSQL cluster (env STAKEGRAPH_HOME)")
	fs.IntVar(&o.pgPort, "pg-port", o.pgPort, "TCP `port` of the local PostgreSQL cluster on 127.0.0.1 (env STAKEGRAPH_PG_PORT)")
	fs.StringVar(&o.logFormat, "log-format", o.logFormat, "log `format`: auto (text on a terminal, JSON otherwise), text or json (env STAKEGRAPH_LOG_FORMAT)")
	fs.StringVar(&o.logLevel, "log-level", o.logLevel, "log `level`: debug, info, warn or error (env STAKEGRAPH_LOG_LEVEL)")
}

// cli is one run of the command line.
type cli struct {
	getenv  func(string) string
	stdout  io.Writer
	stderr  io.Writer
	opts    options
	network chain.Network
	logger  *slog.Logger
}

// setup checks the options and builds the logger.
func (c *cli) setup() error {
	n, err := chain.Lookup(c.opts.network)
	if err != nil {
		return err
	}
	c.network = n
	if c.opts.pgPort < 1 || c.opts.pgPort > 65535 {
		return fmt.Errorf("--pg-port %d is not a port number", c.opts.pgPort)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.opts.logLevel)); err != nil {
		return fmt.Errorf("unknown log level %q (want debug, info, warn or error)", c.opts.logLevel)
	}
	hopts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch c.opts.logFormat {
	case "text":
		h = slog.NewTextHandler(c.stderr, hopts)
	case "json":
		h = slog.NewJSONHandler(c.stderr, hopts)
	case "auto":
		if isTerminal(c.stderr) {
			h = slog.NewTextHandler(c.stderr, hopts)
		} else {
			h = slog.NewJSONHandler(c.stderr, hopts)
		}
	default:
		return fmt.Errorf("unknown log format %q (want auto, text or json)", c.opts.logFormat)
	}
	c.logger = slog.New(server.LogHandler(h))
	slog.SetDefault(c.logger)
	return nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

// database is an open database and what it takes to let it go.
type database struct {
	*store.DB
	cluster *localpg.Cluster // nil with DATABASE_URL
}

// Close closes the database and, when this was its last user and a
// command started it, stops the local cluster.
func (d *database) Close() error {
	err := d.DB.Close()
	if d.cluster != nil {
		if cerr := d.cluster.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// openDatabase connects to DATABASE_URL or the local cluster (starting it
// if needed), applies pending migrations and checks that the database
// serves the selected network.
func (c *cli) openDatabase(ctx context.Context) (*database, error) {
	d := &database{}
	url := c.opts.databaseURL
	if url == "" {
		home, err := filepath.Abs(c.opts.home)
		if err != nil {
			return nil, err
		}
		cluster, err := localpg.Start(ctx, localpg.Options{Dir: localpg.HomeDir(home), Port: c.opts.pgPort, Logger: c.logger})
		if err != nil {
			return nil, err
		}
		if err := cluster.EnsureDatabase(ctx, localDatabase); err != nil {
			cluster.Close()
			return nil, err
		}
		d.cluster = cluster
		url = cluster.URL(localDatabase)
	}
	db, err := store.Open(ctx, url)
	if err != nil {
		if d.cluster != nil {
			d.cluster.Close()
		}
		return nil, redactURLError(err, url)
	}
	d.DB = db
	if err := db.Migrate(ctx); err != nil {
		d.Close()
		return nil, err
	}
	if err := db.EnsureNetwork(ctx, c.network.Name); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// redactURLError keeps a password in the database URL out of messages.
func redactURLError(err error, url string) error {
	if i := strings.Index(url, "://"); i >= 0 {
		if at := strings.LastIndex(url, "@"); at > i {
			if colon := strings.Index(url[i+3:at], ":"); colon >= 0 {
				password := url[i+3+colon+1 : at]
				if password != "" && strings.Contains(err.Error(), password) {
					return errors.New(strings.ReplaceAll(err.Error(), password, "REDACTED"))
				}
			}
		}
	}
	return err
}
