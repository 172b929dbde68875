package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/mysqltest"
	"github.com/cosid-go/store/internal/testing/poll"
)

// TestLocksUnderKills: three stores take turns on one lock while an
// operator's KILL CONNECTION ends every connection of theirs (pools and
// lock sessions), again and again. No store is ever granted the lock while
// another's hold has its Lost open, fences only grow, every failure is
// ErrUnavailable, ErrLeaseLost or the call's deadline, and once the kills
// stop each store locks again.
func TestLocksUnderKills(t *testing.T) {
	srv := mysqltest.Shared(t)
	database := srv.NewDatabase(t)
	opts := map[string]string{"lockTimeout": "2s"}
	const stores = 3
	sts := make([]*driverStore, stores)
	for i := range sts {
		sts[i] = openAt(t, srv.Addr(), database, opts)
	}
	op, self := operator(t, srv)
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var mu sync.Mutex
	var cur driver.Lock // the hold granted last and not yet given up
	var last int64      // the highest fence granted
	var grants, failures int
	var bad []error
	for i, s := range sts {
		wg.Go(func() {
			for ctx.Err() == nil {
				lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				l, err := s.Lock(lctx, "x", fmt.Sprint("s", i), true)
				cancel()
				if err != nil {
					mu.Lock()
					failures++
					if ctx.Err() == nil && !errors.Is(err, driver.ErrUnavailable) && !errors.Is(err, driver.ErrLeaseLost) &&
						!errors.Is(err, context.DeadlineExceeded) {
						bad = append(bad, fmt.Errorf("store %d: Lock: %w", i, err))
					}
					mu.Unlock()
					continue
				}
				mu.Lock()
				if cur != nil && !closed(cur.Lost()) {
					bad = append(bad, fmt.Errorf("store %d granted fence %d while fence %d was held with its Lost open", i, l.Fence(), cur.Fence()))
				}
				if l.Fence() <= last {
					bad = append(bad, fmt.Errorf("store %d granted fence %d after fence %d", i, l.Fence(), last))
				}
				cur, last = l, max(last, l.Fence())
				grants++
				mu.Unlock()
				time.Sleep(10 * time.Millisecond) // the hold's length, not a synchronisation
				mu.Lock()
				if cur == l {
					cur = nil
				}
				mu.Unlock()
				_ = l.Unlock(context.Background())
			}
		})
	}
	kills := killRounds(t, op, self, "user <> 'system user'", 100*time.Millisecond)
	stop()
	wg.Wait()
	for i, s := range sts {
		poll.Succeeds(t, 30*time.Second, "Lock after the kills", func() error {
			lctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			l, err := s.Lock(lctx, "x", fmt.Sprint("s", i), true)
			if err != nil {
				return err
			}
			return l.Unlock(t.Context())
		})
	}
	t.Logf("%d connections killed; %d grants, %d failed Locks", kills, grants, failures)
	if kills == 0 || grants == 0 {
		t.Fatalf("nothing proven: %d kills, %d grants", kills, grants)
	}
	for _, err := range bad {
		t.Error(err)
	}
}

// operator is one connection of the server's root user, as an operator's
// session, with its connection id; it is closed when the test ends.
func operator(t *testing.T, srv *mysqltest.Server) (op *sql.DB, self int64) {
	t.Helper()
	op = rootDB(t, srv)
	op.SetMaxOpenConns(1)
	if err := op.QueryRowContext(t.Context(), "SELECT CONNECTION_ID()").Scan(&self); err != nil {
		t.Fatal(err)
	}
	return op, self
}

// killRounds kills, 20 times pace apart, as the operator op (connection
// self), every client connection of the server that where (a condition on
// information_schema.processlist) selects, and counts those it killed.
func killRounds(t *testing.T, op *sql.DB, self int64, where string, pace time.Duration) int {
	t.Helper()
	kills := 0
	for range 20 {
		kills += killRound(t, op, self, where)
		time.Sleep(pace) // the pace of the faults, not a synchronisation
	}
	return kills
}

func killRound(t *testing.T, op *sql.DB, self int64, where string) int {
	t.Helper()
	rows, err := op.QueryContext(t.Context(), "SELECT id FROM information_schema.processlist WHERE id <> ? AND command <> 'Daemon' AND "+where, self)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	kills := 0
	for _, id := range ids {
		if _, err := op.ExecContext(t.Context(), "KILL CONNECTION ?", id); err == nil {
			kills++
		}
	}
	return kills
}
