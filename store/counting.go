package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync"
	"sync/atomic"

	"github.com/lib/pq"
)

// statementCounts maps each counted driver name's counter. Every *DB opened
// by Open talks to PostgreSQL through a thin driver wrapper that counts the
// statements it sends, so tests can assert that a request costs a constant
// number of queries (no N+1) and benchmarks can report statements per
// request.
var (
	registerOnce sync.Once
	statements   atomic.Int64
)

const countingDriverName = "postgres-stakegraph"

func registerCountingDriver() {
	registerOnce.Do(func() {
		sql.Register(countingDriverName, countingDriver{})
	})
}

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
