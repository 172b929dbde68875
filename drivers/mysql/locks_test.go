package mysql

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore/mysqldialect"
	"github.com/cosid-go/store/internal/testing/mysqltest"
	"github.com/cosid-go/store/internal/testing/poll"
)

// closed reports whether a Lost channel (or any) is closed, without waiting.
var closed = poll.Closed

// openAt opens a driver store on addr (a server's or a proxy's) and
// database, closed when the test ends.
func openAt(t *testing.T, addr, database string, extra map[string]string) *driverStore {
	t.Helper()
	o := map[string]string{"dsn": mysqltest.DSN(addr, ""), "database": database, "poolSize": "4"}
	for k, v := range extra {
		o[k] = v
	}
	d, err := fromOptions(o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	s := d.(*driverStore)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// setHook calls f at the store's named points ("enqueue", "pass").
func setHook(s *driverStore, f func(point string)) { s.testHook.Store(&f) }

// rootDB is a connection pool of the server's root user, as an operator's.
func rootDB(t *testing.T, srv *mysqltest.Server) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", srv.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

type lockResult struct {
	l       driver.Lock
	err     error
	aLost   bool // whether the old holder's Lost was closed when this Lock returned
	granted time.Time
}

// TestLockLostBeforeTakeover proves the lock rule (docs/design.md, Locks on
// PostgreSQL, which the MySQL driver follows): when the holder's session
// fails (its network goes silent, an operator's KILL CONNECTION ends its
// connection, the server is killed and restarted), another store gets the
// lock, and only after the holder's Lost has closed, with a higher fence.
func TestLockLostBeforeTakeover(t *testing.T) {
	const lockTimeout = 2 * time.Second
	opts := map[string]string{"lockTimeout": lockTimeout.String()}
	faults := []struct {
		name string
		// setup returns the holder's address and the fault.
		setup func(t *testing.T, srv *mysqltest.Server, database string, a func() *driverStore) (string, func())
		own   bool // needs a server of its own
	}{
		{"silent network", func(t *testing.T, srv *mysqltest.Server, _ string, _ func() *driverStore) (string, func()) {
			p := mysqltest.NewProxy(t, srv.Addr())
			return p.Addr(), p.Freeze
		}, false},
		{"connection killed", func(t *testing.T, srv *mysqltest.Server, database string, a func() *driverStore) (string, func()) {
			return srv.Addr(), func() {
				root := rootDB(t, srv)
				var conn int64
				err := root.QueryRowContext(t.Context(), "SELECT conn_id FROM "+mysqldialect.Quote(database)+
					".cosid_lock_session WHERE id = ?", a().locks.Current().id).Scan(&conn)
				if err != nil {
					t.Fatalf("the session's connection id: %v", err)
				}
				if _, err := root.ExecContext(t.Context(), "KILL CONNECTION ?", conn); err != nil {
					t.Fatalf("KILL CONNECTION %d: %v", conn, err)
				}
			}
		}, false},
		{"server killed and restarted", func(t *testing.T, srv *mysqltest.Server, _ string, _ func() *driverStore) (string, func()) {
			return srv.Addr(), func() { srv.Kill(); srv.Restart(t) }
		}, true},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			var srv *mysqltest.Server
			if f.own {
				srv = mysqltest.Start(t)
			} else {
				t.Parallel()
				srv = mysqltest.Shared(t)
			}
			database := srv.NewDatabase(t)
			var a *driverStore
			addrA, fault := f.setup(t, srv, database, func() *driverStore { return a })
			a = openAt(t, addrA, database, opts)
			ctx := t.Context()
			la, err := a.Lock(ctx, "x", "a", true)
			if err != nil {
				t.Fatal(err)
			}
			b := openAt(t, srv.Addr(), database, opts)
			// b watches a's confirmations before the fault: a takeover
			// must still wait T from the last one.
			bctx, cancel := context.WithTimeout(ctx, lockTimeout/2)
			if _, err := b.Lock(bctx, "x", "b", true); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("b's Lock while a holds and confirms: %v, want a deadline", err)
			}
			cancel()
			if closed(la.Lost()) {
				t.Fatalf("a's hold was lost before the fault: %v", la.(*hold).LostErr())
			}
			start := time.Now()
			fault()
			ch := make(chan lockResult, 1)
			go func() {
				for {
					l, err := b.Lock(ctx, "x", "b", true)
					// A restart ends b's session too: its waiting Lock
					// fails (it held nothing), and b, as a user would,
					// tries again on a new session.
					if (errors.Is(err, driver.ErrLeaseLost) || errors.Is(err, driver.ErrUnavailable)) && ctx.Err() == nil {
						t.Logf("b's Lock failed: %v; trying again", err)
						time.Sleep(50 * time.Millisecond) // a user's pause before trying again
						continue
					}
					ch <- lockResult{l: l, err: err, aLost: closed(la.Lost()), granted: time.Now()}
					return
				}
			}()
			var r lockResult
			select {
			case r = <-ch:
			case <-time.After(15 * lockTimeout):
				t.Fatalf("the other store was not granted the lock within %v of the fault", 15*lockTimeout)
			}
			if r.err != nil {
				t.Fatalf("the other store's Lock: %v", r.err)
			}
			if !r.aLost {
				t.Fatalf("the other store was granted the lock %v after the fault while the holder's Lost was still open", r.granted.Sub(start))
			}
			if r.l.Fence() <= la.Fence() {
				t.Errorf("fence %d of the new holder is not above %d", r.l.Fence(), la.Fence())
			}
			if !errors.Is(la.(*hold).LostErr(), driver.ErrLeaseLost) {
				t.Errorf("the lost hold says %v, want ErrLeaseLost", la.(*hold).LostErr())
			}
			t.Logf("granted to the other store %v after the fault; the holder was told: %v", r.granted.Sub(start), la.(*hold).LostErr())
			if err := la.Unlock(ctx); !errors.Is(err, driver.ErrLeaseLost) {
				t.Errorf("Unlock of the lost hold: %v, want ErrLeaseLost", err)
			}
			if err := r.l.Unlock(ctx); err != nil {
				t.Errorf("Unlock of the new hold: %v", err)
			}
		})
	}
}

// TestLockConfirmingHolderKept: a holder that keeps confirming is never
// taken over, however long others wait, and its session row's stored time
// plays no part: it is set an hour back (as a forward step of the
// server's clock would leave it) while others wait.
func TestLockConfirmingHolderKept(t *testing.T) {
	t.Parallel()
	const lockTimeout = 2 * time.Second // under load, 500ms lost the waiters' own sessions
	opts := map[string]string{"lockTimeout": lockTimeout.String()}
	srv := mysqltest.Shared(t)
	database := srv.NewDatabase(t)
	a := openAt(t, srv.Addr(), database, opts)
	b := openAt(t, srv.Addr(), database, opts)
	c := openAt(t, srv.Addr(), database, opts)
	ctx := t.Context()
	la, err := a.Lock(ctx, "x", "a", true)
	if err != nil {
		t.Fatal(err)
	}
	root := rootDB(t, srv)
	if _, err := root.ExecContext(ctx, "UPDATE "+mysqldialect.Quote(database)+".cosid_lock_session SET confirmed_at = confirmed_at - 3600000"); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 4*lockTimeout)
	defer cancel()
	errs := make(chan error, 2)
	for _, s := range []*driverStore{b, c} {
		go func() {
			_, err := s.Lock(wctx, "x", "w", true)
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a waiter's Lock while the holder confirms: %v, want a deadline", err)
		}
	}
	if closed(la.Lost()) {
		t.Fatalf("a confirming holder lost its hold: %v", la.(*hold).LostErr())
	}
	if err := la.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestLockTablesAdded: a store made before the driver had locks (here,
// its lock tables dropped) refuses a Lock opened without create, saying
// what to do; opened with create, the tables are added and Lock works,
// with the store's ranges kept.
func TestLockTablesAdded(t *testing.T) {
	t.Parallel()
	srv := mysqltest.Shared(t)
	database := srv.NewDatabase(t)
	ctx := t.Context()
	old := openAt(t, srv.Addr(), database, nil)
	first, err := old.Next(ctx, "k", 10)
	if err != nil {
		t.Fatal(err)
	}
	_ = old.Close()
	root := rootDB(t, srv)
	for _, table := range []string{"cosid_lock_waiter", "cosid_lock_session", "cosid_lock", "cosid_lock_state"} {
		if _, err := root.ExecContext(ctx, "DROP TABLE "+mysqldialect.Quote(database)+"."+table); err != nil {
			t.Fatal(err)
		}
	}
	existing := openAt(t, srv.Addr(), database, map[string]string{"create": "false"})
	if _, err := existing.Lock(ctx, "x", "a", true); err == nil || !strings.Contains(err.Error(), "open it once with create=true") {
		t.Fatalf("Lock on a store without lock tables: %v; want an error saying to open it with create", err)
	}
	if _, err := existing.Locks(ctx); err == nil || !strings.Contains(err.Error(), "open it once with create=true") {
		t.Fatalf("Locks on a store without lock tables: %v; want an error saying to open it with create", err)
	}
	upgraded := openAt(t, srv.Addr(), database, nil)
	l, err := upgraded.Lock(ctx, "x", "a", true)
	if err != nil {
		t.Fatalf("Lock after an open with create: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if next, err := upgraded.Next(ctx, "k", 10); err != nil || next < first+10 {
		t.Fatalf("Next after the upgrade: %d, %v; want at least %d", next, err, first+10)
	}
}
