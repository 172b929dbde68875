package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestLockAbandonedDuringOutage: a waiter gives up, and a holder loses its
// hold, while no server answers for longer than twice the session timeout,
// and their sessions survive the outage (sessions do not expire while the
// ensemble has no leader; a restarted server gives every session a new
// timeout). Both nodes must still be removed once the server is back: else
// each blocks the lock for as long as its store lives. Under a heavy load
// a store may not reconnect within the timeout the restarted server gives
// (its session then expires, which proves nothing here): that round is
// logged and run again, up to three times.
func TestLockAbandonedDuringOutage(t *testing.T) {
	zktest.EachVersion(t, func(t *testing.T, srv *zktest.Server) {
		for round := 1; ; round++ {
			err := abandonedDuringOutage(t, srv)
			if err == nil {
				return
			}
			if round == 3 {
				t.Fatalf("%v, in each of %d rounds: the test proves nothing", err, round)
			}
			t.Logf("round %d: %v; again", round, err)
		}
	})
}

// abandonedDuringOutage runs one round of TestLockAbandonedDuringOutage on
// fresh stores under a fresh root. It returns an error, not failing t,
// when a session did not survive the restart.
func abandonedDuringOutage(t *testing.T, srv *zktest.Server) error {
	addr := srv.Addr()
	const name = "outage"
	const timeout = 3 * time.Second
	opts := testOptions(addr, map[string]string{"sessionTimeout": timeout.String()})
	waiter := openTest(t, opts, nil)
	holder := openTest(t, opts, nil)
	ctx := t.Context()
	parent := waiter.lockParent(name)

	h, err := holder.Lock(ctx, name, "holder", true)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := lockAsync(t, wctx, waiter, name, "waiter")
	lockEventually(t, 10*time.Second, "the waiter queued", func() bool { return queueLength(ctx, holder, name) == 2 })
	sid, hsid := waiter.conn.SessionID(), holder.conn.SessionID()

	srv.Kill()
	cancel()
	r := awaitLock(t, ch, 5*time.Second, "Lock whose context ended while no server answers")
	if r.err == nil {
		t.Fatal("the waiter got the lock")
	}
	// The outage lasts past twice the session timeout (the bound
	// the removal had).
	time.Sleep(2*timeout + time.Second)
	srv.Start()

	conn := rawConn(t, addr)
	lockEventually(t, 20*time.Second, "the waiter reconnected", func() bool { return waiter.conn.SessionID() != 0 })
	lockEventually(t, 20*time.Second, "the holder reconnected", func() bool { return holder.conn.SessionID() != 0 })
	if waiter.conn.SessionID() != sid || holder.conn.SessionID() != hsid {
		return fmt.Errorf("a session did not survive the restart (waiter %#x then %#x, holder %#x then %#x)",
			sid, waiter.conn.SessionID(), hsid, holder.conn.SessionID())
	}
	select {
	case <-h.Lost():
	default:
		t.Fatal("the hold was not lost in the outage")
	}
	lockEventually(t, 20*time.Second, "the abandoned waiter's and the lost holder's nodes removed", func() bool {
		return len(lockNodes(t, conn, parent)) == 0
	})
	if err := h.Unlock(ctx); !errors.Is(err, driver.ErrLeaseLost) {
		t.Errorf("Unlock of the hold lost in the outage: %v, want ErrLeaseLost", err)
	}
	next, cancelNext := context.WithTimeout(ctx, 10*time.Second)
	defer cancelNext()
	l, err := holder.Lock(next, name, "holder", true)
	if err != nil {
		t.Fatalf("Lock once the holder unlocked: %v (nodes %q)", err, lockNodes(t, conn, parent))
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	return nil
}
