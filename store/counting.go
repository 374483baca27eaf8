package store

import (
	"context"
	"database/sql/driver"
	"strings"
	"sync/atomic"

	"github.com/lib/pq"
)

// A DB counts the statements it sends: each handle talks to PostgreSQL
// through a thin driver wrapper that adds every statement to the counter
// the handle and the pools it opens with NewPool share, so tests can
// assert that a request costs a constant number of queries (no N+1) and
// benchmarks can report statements per request (DB.StatementCount).

// countingDriver is the driver of a countingConnector's connections.
type countingDriver struct {
	count *atomic.Int64
}

func (d countingDriver) Open(name string) (driver.Conn, error) {
	c, err := pq.Open(name)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, count: d.count}, nil
}

// countingConnector opens pq connections in a fixed configuration (the
// connection URL with the pool's session settings) and counts their
// statements.
type countingConnector struct {
	pq    *pq.Connector
	count *atomic.Int64
}

// newCountingConnector returns the connector of url, with runtime
// parameters (statement_timeout, say) sent to the server as each
// connection starts, adding each statement to count.
func newCountingConnector(url string, runtime map[string]string, count *atomic.Int64) (*countingConnector, error) {
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
	// A statement with arguments that is not kept prepared (a page of a
	// whole list, filtered by the request) is sent with its arguments in
	// one round trip: Parse, Bind, Describe and Execute together. Without
	// this pq first asks the server for the parameters' types, a round
	// trip of its own, and encodes the arguments by them; here the server
	// reads each argument's text as the type its position takes, which
	// is what every statement of this package casts or compares it to.
	// Only []byte arguments are sent in binary, and those this package
	// sends are bytea (API key hashes).
	cfg.BinaryParameters = true
	c, err := pq.NewConnectorConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &countingConnector{pq: c, count: count}, nil
}

func (c *countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.pq.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn, count: c.count}, nil
}

func (c *countingConnector) Driver() driver.Driver { return countingDriver{count: c.count} }

// countingConn forwards to pq's connection and counts statements.
type countingConn struct {
	driver.Conn
	count *atomic.Int64
}

func (c *countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.count.Add(1)
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, query, args)
}

func (c *countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.count.Add(1)
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, query, args)
}

// PrepareContext prepares query on this connection. A COPY counts as one
// statement when prepared, as before its rows are sent; any other prepared
// statement counts each time it runs (countingStmt), and preparing it,
// once per connection, does not count, so that a request's count does not
// depend on the connections it happens to get.
func (c *countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	stmt, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil || strings.HasPrefix(query, "COPY ") {
		c.count.Add(1)
		return stmt, err
	}
	return &countingStmt{Stmt: stmt, count: c.count}, nil
}

// countingStmt forwards to pq's prepared statement and counts its runs.
type countingStmt struct {
	driver.Stmt
	count *atomic.Int64
}

func (s *countingStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.count.Add(1)
	return s.Stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}

func (s *countingStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.count.Add(1)
	return s.Stmt.(driver.StmtExecContext).ExecContext(ctx, args)
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
