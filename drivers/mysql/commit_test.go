package mysql

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/mysqltest"
	"github.com/cosid-go/store/internal/testing/poll"
)

// TestCommitAfterContextEnded: a transaction whose context ended is rolled
// back by database/sql in the background; a commit after that rollback
// fails with the context's error, not ErrTxDone (TestLockScenarios/
// FailedLockCostsItself saw ErrTxDone from a Lock at load, when the
// rollback came before the enqueue's commit).
func TestCommitAfterContextEnded(t *testing.T) {
	t.Parallel()
	db := rootDB(t, mysqltest.Shared(t))
	ctx, cancel := context.WithCancel(t.Context())
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	cancel()
	// A statement of the transaction fails with ErrTxDone once the
	// rollback is done: the state the commit must then be in.
	poll.Until(t, 10*time.Second, "database/sql's rollback of the cancelled transaction", func() bool {
		_, err := tx.ExecContext(context.Background(), "SELECT 1")
		return errors.Is(err, sql.ErrTxDone)
	})
	if err := commit(ctx, tx); !errors.Is(err, context.Canceled) {
		t.Fatalf("commit after the context ended and the rollback: %v; want context.Canceled", err)
	}
}
