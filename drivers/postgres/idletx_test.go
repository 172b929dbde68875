package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/sqlstore"
	"github.com/cosid-go/store/internal/testing/pgtest"
)

// TestIdleTransactionEndedIsRetried: a transaction of the driver's that
// stalls between two statements past the server's idle bound (lockTimeout
// 2s: 500 ms) is ended by the server (SQLSTATE 25P03), which rolled it
// back; it is tried again, as a deadlock is, and not reported. A loaded
// client stalls so: a store's open failed with "create tables: FATAL:
// terminating connection due to idle-in-transaction timeout" at load 60.
func TestIdleTransactionEndedIsRetried(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	s := openAt(t, srv.ConnString(), freshSchema("idletx"), map[string]string{"lockTimeout": "2s"})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	attempts := 0
	err := s.DB().Tx(ctx, func(q sqlstore.Querier) error {
		attempts++
		if _, err := q.Exec(ctx, "SELECT 1"); err != nil {
			return err
		}
		if attempts == 1 {
			time.Sleep(1500 * time.Millisecond) // the stall: three idle bounds
		}
		_, err := q.Exec(ctx, "SELECT 1")
		return err
	})
	if err != nil || attempts != 2 {
		t.Fatalf("a transaction the server ended for idling: %v after %d attempts; want it tried again once and done", err, attempts)
	}
}
