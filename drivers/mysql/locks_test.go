package mysql

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/sqlstore/mysqldialect"
	"github.com/cosid-go/store/internal/testing/mysqltest"
	"github.com/cosid-go/store/internal/testing/poll"
	"github.com/cosid-go/store/internal/testing/rawdriver"
	"github.com/cosid-go/store/internal/testing/sqllocks"
)

// closed reports whether a Lost channel (or any) is closed, without waiting.
var closed = poll.Closed

// storeOptions are a store's options on addr (a server's or a proxy's)
// and database, with extra added.
func storeOptions(addr, database string, extra map[string]string) map[string]string {
	o := map[string]string{"dsn": mysqltest.DSN(addr, ""), "database": database, "poolSize": "4"}
	return rawdriver.With(o, extra)
}

// openAt opens a driver store on addr (a server's or a proxy's) and
// database, closed when the test ends.
func openAt(t *testing.T, addr, database string, extra map[string]string) *driverStore {
	t.Helper()
	return rawdriver.Open[*driverStore](t, fromOptions, storeOptions(addr, database, nil), extra)
}

// TestLockScenarios runs the lock scenarios both SQL drivers share
// (package sqllocks) on MariaDB.
func TestLockScenarios(t *testing.T) {
	sqllocks.Run(t, sqllocks.Dialect{
		Shared: func(t testing.TB) sqllocks.Server { return mysqltest.Shared(t) },
		Start:  func(t testing.TB) sqllocks.Server { return mysqltest.Start(t) },
		Namespace: func(t testing.TB, srv sqllocks.Server) string {
			return srv.(*mysqltest.Server).NewDatabase(t)
		},
		Open: func(t *testing.T, addr, database string, extra map[string]string) sqllocks.Store {
			return openAt(t, addr, database, extra)
		},
		SetHook: func(s sqllocks.Store, f func(string)) { setHook(s.(*driverStore), f) },
		// Its connection ended by an operator's KILL CONNECTION.
		KillSession: func(t *testing.T, srv sqllocks.Server, database string, s sqllocks.Store) {
			root := rootDB(t, srv.(*mysqltest.Server))
			var conn int64
			err := root.QueryRowContext(t.Context(), "SELECT conn_id FROM "+mysqldialect.Quote(database)+
				".cosid_lock_session WHERE id = ?", s.(*driverStore).locks.Current().id).Scan(&conn)
			if err != nil {
				t.Fatalf("the session's connection id: %v", err)
			}
			if _, err := root.ExecContext(t.Context(), "KILL CONNECTION ?", conn); err != nil {
				t.Fatalf("KILL CONNECTION %d: %v", conn, err)
			}
		},
		KillSessionName: "connection killed",
		MoveConfirmations: func(t *testing.T, srv sqllocks.Server, database string, ms int64) {
			if _, err := rootDB(t, srv.(*mysqltest.Server)).ExecContext(t.Context(), "UPDATE "+mysqldialect.Quote(database)+
				".cosid_lock_session SET confirmed_at = confirmed_at + ?", ms); err != nil {
				t.Fatal(err)
			}
		},
		InFlightLockTimeout: 8 * time.Second, // the server's idle bound: 2s
		SessionID:           sessionID,
		Dump:                dumpDatabase,
		TakeoverWithin:      30 * time.Second,
	})
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
