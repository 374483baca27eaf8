package store_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/lib/pq"

	"github.com/stakegraph/stakegraph/internal/derrors"
	"github.com/stakegraph/stakegraph/store"
)

// TestClassify checks that Classify recognises an unreachable database and
// a timeout by the errors' types and codes, never by their text.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want error // nil: left as it is
	}{
		{"deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), derrors.Timeout},
		{"statement cancelled", &pq.Error{Code: "57014"}, derrors.Timeout},
		{"connection failure", &pq.Error{Code: "08006"}, derrors.Unavailable},
		{"admin shutdown", &pq.Error{Code: "57P01"}, derrors.Unavailable},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}, derrors.Unavailable},
		{"unknown host", &net.DNSError{Err: "no such host", Name: "db.invalid"}, derrors.Unavailable},
		{"bad connection", fmt.Errorf("exec: %w", driver.ErrBadConn), derrors.Unavailable},
		{"connection done", sql.ErrConnDone, derrors.Unavailable},
		{"closed mid-message", fmt.Errorf("read: %w", io.ErrUnexpectedEOF), derrors.Unavailable},
		{"closed", fmt.Errorf("read: %w", io.EOF), derrors.Unavailable},
		{"unique violation", &pq.Error{Code: "23505"}, nil},
		// Words in a message say nothing about the connection.
		{"words only", errors.New(`metadata "https://x/EOF": connection refused by the host`), nil},
		{"no rows", sql.ErrNoRows, nil},
	} {
		got := store.Classify(tc.err)
		for _, sentinel := range []error{derrors.Timeout, derrors.Unavailable} {
			if errors.Is(got, sentinel) != (sentinel == tc.want) {
				t.Errorf("%s: Classify(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
			}
		}
		if !errors.Is(got, tc.err) && tc.want == nil {
			t.Errorf("%s: Classify lost the error: %v", tc.name, got)
		}
	}
	if store.Classify(nil) != nil {
		t.Error("Classify(nil) is not nil")
	}
}

// TestClassifyRefusedConnection checks the error of a real connection
// attempt to a port nothing listens on.
func TestClassifyRefusedConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	db, err := sql.Open("postgres", "postgres://x@"+addr+"/x?sslmode=disable&connect_timeout=5")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := store.Classify(db.PingContext(context.Background())); !errors.Is(err, derrors.Unavailable) {
		t.Errorf("ping of a closed port: %v, want unavailable", err)
	}
}
