package graph

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/stakegraph/stakegraph/internal/derrors"
)

// statementBudget bounds the database reads of one GraphQL request. The
// dataloaders and resolvers spend one unit before each read of the store
// (one SQL statement, or for a few reads a small fixed number of them);
// the read that would go over the limit fails instead, the request's
// context is canceled so that the work under way stops, and the request
// is answered with the budget's error alone.
//
// A nil *statementBudget is unlimited: the executor of the REST routes,
// which runs only the service's own operations, has none.
type statementBudget struct {
	limit int64
	used  atomic.Int64
	// tripped is set by the first read over the limit.
	tripped atomic.Bool
	// stop cancels the request's context, with the budget's error as the
	// cause.
	stop context.CancelCauseFunc
	err  *budgetError
}

// newStatementBudget returns a budget of limit reads for a request whose
// context stop cancels.
func newStatementBudget(limit int, stop context.CancelCauseFunc) *statementBudget {
	return &statementBudget{limit: int64(limit), stop: stop, err: &budgetError{limit: limit}}
}

// spend records one read of the store. It returns the budget's error, and
// stops the request, when the read would exceed the limit.
func (b *statementBudget) spend() error {
	if b == nil {
		return nil
	}
	if b.used.Add(1) <= b.limit {
		return nil
	}
	if b.tripped.CompareAndSwap(false, true) && b.stop != nil {
		b.stop(b.err)
	}
	return b.err
}

// exceeded reports whether a read went over the limit.
func (b *statementBudget) exceeded() bool {
	return b != nil && b.tripped.Load()
}

// budgeted returns read, which reads the store, spending one unit of b
// before each call.
func budgeted[K, V any](b *statementBudget, read func(context.Context, K) (V, error)) func(context.Context, K) (V, error) {
	if b == nil {
		return read
	}
	return func(ctx context.Context, keys K) (V, error) {
		if err := b.spend(); err != nil {
			var zero V
			return zero, err
		}
		return read(ctx, keys)
	}
}

// budgetError is the error of a request that exceeded its statement
// budget: a request the client can make cheaper, hence an invalid
// argument (unprocessable_entity).
type budgetError struct {
	limit int
}

func (e *budgetError) Error() string {
	return fmt.Sprintf("the operation needs more than %d database statements, the limit of one request; "+
		"select fewer fields or aliases, or split it into several requests", e.limit)
}

func (e *budgetError) Unwrap() error { return derrors.InvalidArgument }

// budgetExceeded reports whether ctx belongs to a request stopped by its
// statement budget, or err is the budget's error.
func budgetExceeded(ctx context.Context, err error) bool {
	var be *budgetError
	return errors.As(err, &be) || errors.As(context.Cause(ctx), &be)
}
