package mysql

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/eventrec"
	"github.com/cosid-go/store/internal/testing/mysqltest"
	"github.com/cosid-go/store/internal/testing/poll"
	"github.com/cosid-go/store/internal/testing/rangecheck"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// openStore opens a store through the user API with options added to the
// DSN of addr and database; it is closed when the test ends.
func openStore(t *testing.T, addr, database string, extra map[string]string, opts ...store.Option) *store.Store {
	t.Helper()
	return rawdriver.OpenStore(t, fromOptions, storeOptions(addr, database, extra), opts...)
}

// TestServerKilled: the server is SIGKILLed under a store; calls fail with
// ErrUnavailable and a Disconnected event, and once it is back (after
// crash recovery) the store goes on above every value handed out before.
func TestServerKilled(t *testing.T) {
	srv := mysqltest.Start(t)
	database := srv.NewDatabase(t)
	rec := eventrec.New()
	st := openStore(t, srv.Addr(), database, map[string]string{"connectTimeout": "1s"},
		append(rec.Options(), store.WithTimeout(2*time.Second))...)
	ctx := t.Context()
	var h rangecheck.Handed
	for range 5 {
		r, err := st.Ranges().Next(ctx, "k", 10)
		if err != nil {
			t.Fatal(err)
		}
		h.Step(t, 0, r, 10)
	}
	srv.Kill()
	_, err := st.Ranges().Next(ctx, "k", 10)
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Next with the server killed: %v; want ErrUnavailable", err)
	}
	rec.Await(t, store.Disconnected, 5*time.Second)
	srv.Restart(t)
	poll.Succeeds(t, 30*time.Second, "Next after the restart", func() error {
		r, err := st.Ranges().Next(ctx, "k", 10)
		if err == nil {
			h.Step(t, 0, r, 10)
		}
		return err
	})
	rec.Await(t, store.Connected, 5*time.Second)
	rs := h.Check(t)
	if last := rs[len(rs)-1]; last.Start < 50 {
		t.Errorf("after the restart Next gave %v, below the 50 values handed out before", last)
	}
}

// TestConnectionsKilled: an operator's KILL CONNECTION of every connection
// of the stores, again and again while they call Next and Acquire: no
// value is handed out twice, no lease is lost, and every failure is
// ErrUnavailable (a write cut short is a gap, never a duplicate).
func TestConnectionsKilled(t *testing.T) {
	srv := mysqltest.Shared(t)
	database := srv.NewDatabase(t)
	const stores = 3
	sts := make([]*store.Store, stores)
	for i := range sts {
		sts[i] = openStore(t, srv.Addr(), database, nil)
	}
	op, self := operator(t, srv)
	ctx, stop := context.WithCancel(t.Context())
	var h rangecheck.Handed
	var wg sync.WaitGroup
	var mu sync.Mutex
	var other []error
	calls := 0
	ns := store.Namespace{Name: "killed", Limit: 64, Tolerance: 50 * time.Millisecond}
	for i, st := range sts {
		wg.Go(func() {
			for ctx.Err() == nil {
				r, err := st.Ranges().Next(ctx, "k", 7)
				if err == nil {
					h.Step(t, i, r, 7)
				}
				l, lerr := st.Slots().Acquire(ctx, ns, "o", store.AcquireOptions{TTL: time.Minute})
				if lerr == nil {
					lerr = st.Slots().Release(ctx, l)
				}
				mu.Lock()
				calls++
				for _, e := range []error{err, lerr} {
					if e != nil && !errors.Is(e, store.ErrUnavailable) && ctx.Err() == nil {
						other = append(other, e)
					}
				}
				mu.Unlock()
			}
		})
	}
	// The stores' connections name no database.
	kills := killRounds(t, op, self, "db IS NULL", 50*time.Millisecond)
	stop()
	wg.Wait()
	// Each store works again once the kills stop, whatever the load let
	// it do meanwhile.
	for i, st := range sts {
		poll.Succeeds(t, 30*time.Second, "Next after the kills", func() error {
			r, err := st.Ranges().Next(t.Context(), "k", 7)
			if err == nil {
				h.Step(t, i, r, 7)
			}
			return err
		})
	}
	h.Check(t)
	t.Logf("%d connections killed, %d rounds of calls, %d ranges handed out", kills, calls, h.Len())
	if kills == 0 {
		t.Fatal("nothing proven: no connection was killed")
	}
	for _, err := range other {
		t.Errorf("a call failed with neither success nor ErrUnavailable: %v", err)
	}
}

// TestPausedClientInTransaction: a client of the driver (its connector,
// with the session settings) takes a range's row lock in a transaction and
// goes silent, its network frozen. MariaDB ends its session after
// idle_transaction_timeout (lockTimeout/4, rounded up to 1s), and another
// store's Next, which waits innodb_lock_wait_timeout at a time and tries
// again, goes through within its 5s timeout.
func TestPausedClientInTransaction(t *testing.T) {
	srv := mysqltest.Shared(t)
	database := srv.NewDatabase(t)
	opts := map[string]string{"lockTimeout": "2s"}
	st := openStore(t, srv.Addr(), database, opts, store.WithTimeout(5*time.Second))
	ctx := t.Context()
	if _, err := st.Ranges().Next(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	p := mysqltest.NewProxy(t, srv.Addr())
	c, err := parseOptions(map[string]string{"dsn": mysqltest.DSN(p.Addr(), ""), "lockTimeout": "2s"})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := newConnector(c)
	if err != nil {
		t.Fatal(err)
	}
	paused := sql.OpenDB(conn)
	defer paused.Close()
	tx, err := paused.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var next int64
	if err := tx.QueryRowContext(ctx, "SELECT next FROM "+database+".cosid_range WHERE `key` = 'k' FOR UPDATE").Scan(&next); err != nil {
		t.Fatal(err)
	}
	p.Freeze()
	defer p.Thaw()
	start := time.Now()
	r, err := st.Ranges().Next(ctx, "k", 1)
	if err != nil {
		t.Fatalf("Next while a paused client held the row (for %v): %v", time.Since(start), err)
	}
	t.Logf("Next went through %v after the client paused holding the row", time.Since(start))
	if r.Start != next {
		t.Errorf("Next = %v; want it to start at %d", r, next)
	}
}

// TestUnavailableAtOpen: no server at the address: Open fails with
// ErrUnavailable, naming the server, within connectTimeout.
func TestUnavailableAtOpen(t *testing.T) {
	p := mysqltest.NewProxy(t, "127.0.0.1:1")
	p.Cut()
	_, err := fromOptions(map[string]string{"dsn": mysqltest.DSN(p.Addr(), ""), "connectTimeout": "1s"})
	if !errors.Is(err, driver.ErrUnavailable) {
		t.Fatalf("Open with no server: %v; want ErrUnavailable", err)
	}
}
