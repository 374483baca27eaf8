package store

import (
	"context"
	"database/sql/driver"
	"sync/atomic"

	"github.com/lib/pq"
)

// statements counts the statements of every *DB opened by Open: each talks
// to PostgreSQL through a thin driver wrapper that counts the statements it
// sends, so tests can assert that a request costs a constant number of
// queries (no N+1) and benchmarks can report statements per request.
var statements atomic.Int64

// StatementCount returns the number of SQL statements sent through every
// database handle of this process so far. Take the difference of two readings
// to count the statements of one piece of work.
func StatementCount() int64 { return statements.Load() }

type countingDriver struct{}

func (countingDriver) Open(name string) (driver.Conn, error) {
	c, err := pq.Open(name)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c}, nil
}

// countingConnector opens pq connections in a fixed configuration (the
// connection URL with the pool's session settings) and counts their
// statements.
type countingConnector struct {
	pq *pq.Connector
}

// newCountingConnector returns the connector of url, with runtime
// parameters (statement_timeout, say) sent to the server as each
// connection starts.
func newCountingConnector(url string, runtime map[string]string) (*countingConnector, error) {
	cfg, err := pq.NewConfig(url)
	if err != nil {
		return nil, err
	}
	if len(runtime) > 0 {
		if cfg.Runtime == nil {
			cfg.Runtime = map[string]string{}
		}
		for k, v := range runtime {
			cfg.Runtime[k] = v
		}
	}
	c, err := pq.NewConnectorConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &countingConnector{pq: c}, nil
}

func (c *countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.pq.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn}, nil
}

func (c *countingConnector) Driver() driver.Driver { return countingDriver{} }

// countingConn forwards to pq's connection and counts statements.
type countingConn struct {
	driver.Conn
}

func (c *countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	statements.Add(1)
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	statements.Add(1)
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

func (c *countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	statements.Add(1)
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *countingConn) Ping(ctx context.Context) error {
	return c.Conn.(driver.Pinger).Ping(ctx)
}

func (c *countingConn) ResetSession(ctx context.Context) error {
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *countingConn) IsValid() bool {
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (c *countingConn) CheckNamedValue(nv *driver.NamedValue) error {
	if ch, ok := c.Conn.(driver.NamedValueChecker); ok {
		return ch.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}
