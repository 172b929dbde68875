package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/cosid-go/store/internal/sqlstore"
)

// An Advance whose write fails passes the failure on, so that a caller
// (and the portable layer) can tell a deadline or a cancelled context
// from a key that changed meanwhile. A mutant that called every failed
// write "key changed during Advance" went unseen (make mutants-sqlstore).
func TestAdvanceWriteFails(t *testing.T) {
	for _, db := range databases(t) {
		t.Run(db.name, func(t *testing.T) {
			ctx := t.Context()
			f := failingExec{DB: db.db, on: new(atomic.Bool)}
			s, err := sqlstore.Open(ctx, f, db.d)
			if err != nil {
				t.Fatal(err)
			}
			f.on.Store(true)
			if _, err := s.Advance(ctx, "k", 10); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("Advance whose write ran out of time: %v; want context.DeadlineExceeded", err)
			}
		})
	}
}

// failingExec, once on, fails every Exec inside a transaction, as a
// statement that runs out of time does; reads go through.
type failingExec struct {
	sqlstore.DB
	on *atomic.Bool
}

func (f failingExec) Tx(ctx context.Context, fn func(sqlstore.Querier) error) error {
	return f.DB.Tx(ctx, func(q sqlstore.Querier) error {
		if f.on.Load() {
			q = failingQuerier{q}
		}
		return fn(q)
	})
}

type failingQuerier struct{ sqlstore.Querier }

func (failingQuerier) Exec(context.Context, string, ...any) (int64, error) {
	return 0, fmt.Errorf("test: statement timed out: %w", context.DeadlineExceeded)
}
