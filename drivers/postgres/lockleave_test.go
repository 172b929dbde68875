package postgres

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/poll"
)

// TestLeaveWaitsForFirstEnqueue: a removal (a Lock that gave up while its
// enqueue's COMMIT was in flight) that reaches the server before that
// COMMIT waits for it and then deletes the row, also on a name's first
// use. On a name never used before, the enqueue once inserted the name's
// row in its own transaction: the removal's FOR UPDATE did not see the
// uncommitted row, so it neither waited nor found the waiter row, and the
// row committed after it stayed at the head of the queue, a hold nobody
// has, for as long as the store lived (TestLockCommitInFlight failed so
// at load, when the thawed proxy delivered the removal first).
func TestLeaveWaitsForFirstEnqueue(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	schema := freshSchema("leavefirst")
	s := openAt(t, srv.ConnString(), schema, nil)
	ctx := t.Context()
	held, err := s.Lock(ctx, "held", "a", true) // starts the lock session
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock(ctx)
	se, err := s.locks.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, srv.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())

	type result struct {
		found bool
		err   error
	}
	left := make(chan result, 1)
	var early *result
	setHook(s, func(point string) {
		if point != "enqueue" {
			return
		}
		// Inside the enqueue's transaction, its waiter row written, not
		// committed: the ticket is the sequence's last value.
		var ticket int64
		if err := c.QueryRow(ctx, `SELECT last_value FROM `+pgx.Identifier{schema}.Sanitize()+`.cosid_lock_ticket`).Scan(&ticket); err != nil {
			t.Error(err)
			return
		}
		go func() {
			lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			found, err := s.leave(lctx, se, "first", ticket)
			left <- result{found, err}
		}()
		// Let the COMMIT go once the removal waits for a lock, or has
		// returned (which it must not before the COMMIT).
		poll.Succeeds(t, 30*time.Second, "the removal waits for a lock or returns", func() error {
			select {
			case r := <-left:
				early = &r
				return nil
			default:
			}
			var n int
			if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%cosid_lock%'`).Scan(&n); err != nil {
				return err
			}
			if n == 0 {
				return errors.New("no statement waits for a lock yet")
			}
			return nil
		})
	})
	ticket, err := s.enqueue(ctx, se, "first", "a", true)
	s.health.hook.Store(nil)
	if err != nil {
		t.Fatalf("enqueue: %v", err)
	}
	if early != nil {
		t.Fatalf("the removal of ticket %d returned (found %v, %v) before the enqueue that wrote it committed", ticket, early.found, early.err)
	}
	r := <-left
	if r.err != nil || !r.found {
		t.Fatalf("the removal of ticket %d, once the enqueue committed: found %v, %v; want the row found and deleted", ticket, r.found, r.err)
	}
	if ws, err := s.Waiters(ctx, "first"); err != nil || len(ws) != 0 {
		t.Fatalf("waiters of the name after the removal: %v, %v; want none", ws, err)
	}
}
