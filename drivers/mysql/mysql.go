// Package mysql is the MySQL and MariaDB driver of package store, on
// github.com/go-sql-driver/mysql: ranges, slot leases, fair locks, seeding
// and purge, with the server's clock as the store's clock (docs/design.md,
// The store's clock). Tested against MariaDB 10.11; written for MySQL 8.0+
// too (internal/sqlstore/mysqldialect says what differs and how each
// difference is handled).
//
// # Opening
//
//	import _ "github.com/cosid-go/store/drivers/mysql"
//
//	st, err := store.Open("mysql", map[string]string{
//		"dsn":      "ids:secret@tcp(db.internal:3306)/ids",
//		"database": "cosid",
//	})
//
// or, with options as a struct:
//
//	st, err := mysql.OpenStore(ctx, &mysql.Options{DSN: "ids@tcp(db:3306)/", Database: "cosid"})
//
// # Options
//
//   - dsn: a go-sql-driver/mysql data source name,
//     [user[:password]@][net[(addr)]]/dbname[?param=value]. The fields
//     below, when set, override its parts. It is never printed.
//   - host, port, user, password: the usual fields (the password is
//     never printed); host may be a Unix socket's path (starting with /).
//   - database: where the tables live (created if missing); default the
//     dsn's database, else cosid. ASCII letters, digits, '_' and '-', at
//     most 64 bytes.
//   - tls: false (the default), true (verify the server), skip-verify or
//     preferred; tlsCA: a PEM file of the CAs to verify the server with
//     (implies tls=true).
//   - poolSize: the most connections the pool opens, 1 to 10000; default
//     10. Locks use one more connection per store, for their session.
//   - connectTimeout: the bound on opening a connection, at most 1h;
//     default 10s.
//   - lockTimeout: T of the lock liveness rule (see Locks), 100ms to 24h;
//     default 10s. It also sets the server-side bounds below.
//   - create (true): false opens only a database that holds the store's
//     tables already; otherwise Open fails with ErrNotFound, having
//     created and written nothing.
//
// A refused option is named with its value (dsn and password redacted)
// and the reason.
//
// A store's identity (driver.Identifier) is the store_id row of its
// cosid_meta table: random, written with the tables.
//
// # Tables
//
// In the database: the tables of internal/sqlstore (cosid_meta,
// cosid_range, cosid_namespace, cosid_slot, cosid_owner), InnoDB, and for
// locks cosid_lock_state (one row: the ticket counter and the seal),
// cosid_lock (one row per name ever locked), cosid_lock_session (one per
// store using locks: its connection id, a confirmation counter and, for
// operators, the last confirmation's time) and cosid_lock_waiter (ticket,
// name, owner, session; deleted with its session by a foreign key). Other
// tables may share the database (a Leaf leaf_alloc table, say).
//
// # Locks
//
// The PostgreSQL driver's design (docs/design.md, Locks on PostgreSQL),
// on InnoDB rows. A Lock takes a ticket from the state row's counter (it
// is the fence) while holding the name's row, so tickets of a name commit
// in order; the holder is the lowest ticket. Each store has one lock
// session, a connection of its own that confirms its row every T/3 (T =
// lockTimeout), adding one to its counter. Its Lost closes at the local
// send time of the last counted confirmation + T - T/5. Another store
// deletes a session's rows (takes it over) only after it has itself seen
// the session's counter stand still for T on its own monotonic clock, and
// only if the counter is still that value: so Lost closes before anyone
// else can be granted, whether the holder's process died or paused, its
// network went silent, an operator's KILL CONNECTION ended its
// connection, or the server restarted (its confirmations then fail), and
// whatever any wall clock, the server's included, did. A holder whose
// process dies frees its locks about T after a waiter first looks at it;
// Unlock and Close free them at once. A failed or cancelled Lock, wait or
// Unlock costs nothing but itself: a row it may have left is removed, in
// the background if the server does not answer, and the store's other
// holds stay. SealLocks and RaiseLockFences (driver.LockSealer) set and
// undo a seal on the state row, under the row lock every enqueue takes.
//
// Why not GET_LOCK: a named lock is held by a connection, and the server
// frees it when it sees that connection end; the holder, whose
// connection may be silent or gone, is told nothing first, so another
// session can be granted while the old holder still believes it holds
// (no Lost before grant); and it has no fence that grows across holders
// and restarts. The session rows give both, and keep the lock's state in
// tables a backup and a purge see.
//
// What differs from PostgreSQL, and what it costs:
//
//   - No LISTEN/NOTIFY: a waiter is woken at once by an Unlock of its own
//     store, and otherwise looks at its queue again every T/10, at most
//     100 ms and at least 10 ms. A hand-over between stores takes up to
//     that long, and each waiting Lock costs one small query per period.
//   - No sequence both servers share: tickets and session ids come from
//     the counter of the state row, which an enqueue holds until it
//     commits. Enqueues of every name take turns on it (a short
//     transaction of four statements each), and a client gone silent
//     inside one stalls every Lock of the database until the server ends
//     its transaction: on MariaDB idle_transaction_timeout (T/4, at least
//     1 s); on MySQL 8, which has none, until wait_timeout or TCP
//     keepalives end its connection (others' statements give up after
//     innodb_lock_wait_timeout and try again meanwhile).
//   - Confirming is two statements (the counter's UPDATE, then a read of
//     the others' counters): MySQL has no UPDATE in a WITH.
//
// # Ranges
//
// Next is one statement, one round trip: an INSERT ... ON DUPLICATE KEY
// UPDATE that adds the step unless the key is sealed or would pass
// math.MaxInt64, and reports the new value through LAST_INSERT_ID(expr)
// in its OK packet (neither server has UPDATE ... RETURNING); once the
// store has seen a key, a plain UPDATE of its row unless sealed, whose
// addition fails past math.MaxInt64 (error 1690, changing nothing: the
// store reports ErrExhausted). Nothing is lost to the missing RETURNING:
// no second statement, no transaction.
//
// # Server-side bounds
//
// Every connection the driver opens carries: READ COMMITTED (each
// statement reads the latest commits; the purge alone runs at REPEATABLE
// READ), innodb_lock_wait_timeout of T/2 (at least 1 s), after which the
// transaction is rolled back and tried again within the operation's
// timeout, as after a deadlock (1213); on MariaDB,
// idle_transaction_timeout of T/4 (at least 1 s), so a client gone silent
// inside a transaction loses its connection, and its row locks, that long
// after its last statement (MySQL 8 has no such setting: there a silent
// holder's locks stay until the server's wait_timeout or TCP keepalives
// end its connection, and others' statements give up after
// innodb_lock_wait_timeout and are tried again); time_zone +00:00 and a
// strict sql_mode.
//
// # MySQL 8 and MariaDB
//
// Only MariaDB 10.11 runs in this repository's tests; the statements keep
// to what MySQL 8.0 has too, and where the two differ the driver says so:
//
//   - RETURNING: MariaDB has it on INSERT and DELETE, MySQL not at all,
//     neither on UPDATE. Next and Seal read their value from
//     LAST_INSERT_ID(expr) in the OK packet on both: still one statement.
//   - SKIP LOCKED and NOWAIT: both (MariaDB 10.6+, MySQL 8.0.1+). A NOWAIT
//     refused is error 1205 on MariaDB and 3572 on MySQL; both are retried.
//   - FOR SHARE is MySQL 8's only: the driver writes LOCK IN SHARE MODE,
//     which both read.
//   - idle_transaction_timeout is MariaDB's only: it is set inside a
//     /*M! ... */ comment, which MySQL skips (see Server-side bounds for
//     what a silent client costs there).
//   - The isolation variable is tx_isolation on MariaDB 10.11 and
//     transaction_isolation on MySQL 8: the driver uses SET SESSION
//     TRANSACTION ISOLATION LEVEL, which both accept.
//   - CAST(x AS BIGINT) is neither's: CAST(x AS SIGNED).
//
// # Errors and events
//
// An operation that failed because no server answered (a refused or
// broken connection, a server shutting down, a connection the server
// killed, or a deadline passed since the last such failure) wraps
// driver.ErrUnavailable. The store reports Disconnected when its
// connections start failing, Connected when the server answers again and
// when its lock session starts (SessionID: the session's id), and Expired
// when another store took the session over or a purge deleted it
// (driver.Notifier); a lost hold says why (driver.LostCause).
//
// # Replication
//
// Never-twice holds only if a commit the driver saw acknowledged survives a
// failover: a single primary with innodb_flush_log_at_trx_commit=1 and
// sync_binlog=1, or semi-synchronous (MySQL) or Galera-synchronous
// replication. A database restored from a backup or a replica promoted
// without the last commits is caught by the regression guard of every open
// store (ErrCorrupt), but a store opened afterwards has nothing to compare
// with.
package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
	"github.com/cosid-go/store/internal/sqlstore/mysqldialect"
)

func init() { store.Register("mysql", fromOptions) }

// driverStore is an open MySQL store. It implements driver.Store,
// driver.RangeStore, driver.SlotLeaseStore, driver.Locker,
// driver.LockSealer, driver.SlotSeeder, driver.Purger, driver.Pinger,
// driver.Identifier and driver.Notifier.
type driverStore struct {
	*sqlstore.Store
	pool        *sql.DB
	db          db
	health      *sqlstore.Health
	lockTimeout time.Duration
	lq          *lockStatements
	locks       *lockSession
	obs         sqlstore.Observations // other lock sessions' counters, seen by this store
	testHook    atomic.Pointer[func(point string)]
}

var _ sqlstore.Capabilities = (*driverStore)(nil)

// fromOptions opens a store from options (see the package documentation).
// It is the driver's factory.
func fromOptions(options map[string]string) (driver.Store, error) {
	c, err := parseOptions(options)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout+5*time.Second)
	defer cancel()
	return open(ctx, c)
}

// open opens the pool of c and the store on it; without c.create, only a
// database with the tables is opened, and nothing is written.
func open(ctx context.Context, c *config) (*driverStore, error) {
	h := sqlstore.NewHealth("MySQL", c.server(), connFailure)
	conn, err := newConnector(c)
	if err != nil {
		return nil, err
	}
	if c.create {
		unlock, err := setupLock(ctx, conn, c.database)
		if err != nil {
			return nil, h.Unavailable(err)
		}
		defer unlock()
	}
	pool := sql.OpenDB(conn)
	pool.SetMaxOpenConns(c.poolSize)
	pool.SetMaxIdleConns(c.poolSize)
	d := mysqldialect.New(c.database)
	lq, err := newLockStatements(d)
	if err != nil {
		pool.Close()
		return nil, err
	}
	lp, err := newLockPurge(d)
	if err != nil {
		pool.Close()
		return nil, err
	}
	d.Tables = lockTables
	d.PurgeMore = func(ctx context.Context, tx sqlstore.Querier) ([]string, error) {
		return sqlstore.PurgeLocks(ctx, tx, "mysql", lp)
	}
	sqlOpen := sqlstore.Open
	if !c.create {
		sqlOpen = sqlstore.OpenExisting
	}
	adapter := newDB(pool, h, d)
	s, err := sqlOpen(ctx, adapter, d)
	if err != nil {
		pool.Close()
		if errors.Is(err, driver.ErrUnavailable) {
			return nil, err // about the server, not the database
		}
		if errors.Is(err, driver.ErrNotFound) {
			return nil, fmt.Errorf("mysql: no store in database %q on %s: %w", c.database, c.server(), err)
		}
		return nil, fmt.Errorf("mysql: database %q: %w", c.database, err)
	}
	st := &driverStore{Store: s, pool: pool, db: adapter, health: h, lockTimeout: c.lockTimeout, lq: lq}
	// The lock sessions' connections are beside the pool's poolSize.
	st.locks = newLockSession(st, sql.OpenDB(conn))
	return st, nil
}

// Close ends the lock session, deleting its rows (its holds are lost and
// the next waiters get their turn), then closes the connections.
func (s *driverStore) Close() error {
	err := s.locks.Close()
	return errors.Join(err, s.locks.conns.Close(), s.pool.Close())
}
