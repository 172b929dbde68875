// Package postgres is the PostgreSQL driver of package store, on pgx v5:
// ranges, slot leases, fair locks, seeding and purge, with the database's
// clock as the store's clock (docs/design.md, The store's clock).
//
// # Opening
//
//	import _ "github.com/cosid-go/store/drivers/postgres"
//
//	st, err := store.Open("postgres", map[string]string{
//		"connString": "postgres://ids@db.internal:5432/ids",
//		"schema":     "cosid",
//	})
//
// or, with a pool the program already has (it stays the caller's to
// close):
//
//	st, err := postgres.OpenStore(ctx, pool, &postgres.Options{Schema: "cosid"})
//
// # Options
//
//   - connString: a libpq connection string or URL. The fields below, when
//     set, override its parts.
//   - host, port, user, password, database, sslmode: the usual fields.
//     The password is never printed.
//   - schema: where the tables live (created if missing); default public.
//     ASCII letters, digits, '_' and '-', at most 63 bytes (the server's
//     limit: a longer name would be cut, and two stores share tables).
//   - poolSize: the most connections the pool opens, 1 to 10000; default
//     10. Locks use one more connection per store, for their session.
//   - connectTimeout: the bound on opening a connection, at most 1h;
//     default 10s.
//   - lockTimeout: T of the lock liveness rule (see Locks), 100ms to 24h;
//     default 10s. It also sets the server-side bounds below.
//
// A refused option is named with its value (the password and connString
// redacted) and the reason; so is a host, port or sslmode inside
// connString that pgx cannot parse.
//   - create (true): false opens only a schema that holds the store's
//     tables already; otherwise Open fails with ErrNotFound ("no store at
//     schema ..."), having created and written nothing.
//
// A store's identity (driver.Identifier) is the store_id row of its
// cosid_meta table: random, written with the tables (or, for tables made
// before identities existed, at the next open with create).
//
// # Tables
//
// In the schema: the tables of internal/sqlstore (cosid_meta, cosid_range,
// cosid_namespace, cosid_slot, cosid_owner, cosid_slot_used), and for locks the sequence
// cosid_lock_ticket, cosid_lock (one row per name ever locked),
// cosid_lock_session (one per store using locks: its backend pid, a
// confirmation counter and, for operators, the last confirmation's time)
// and cosid_lock_waiter (ticket, name, owner, session).
//
// # Locks
//
// A Lock takes a ticket from the sequence (it is the fence) while holding
// the name's row lock, so tickets of a name commit in order; the holder is
// the lowest ticket. Each store has one lock session, a connection of its
// own that confirms its row every T/3 (T = lockTimeout), adding one to its
// counter, and LISTENs on a channel of its own: Unlock and a cancelled
// wait NOTIFY the ticket of the new head only, on its session's channel,
// so no herd wakes and no other store hears of it (the channel's name is
// a hash of the schema's and the session's id). Its Lost closes at the local send time of the last
// confirmation + T - T/5. Another store deletes a session's rows (takes it
// over) only after it has itself seen the session's counter stand still
// for T on its own monotonic clock, and only if the counter is still that
// value: so Lost closes before anyone else can be granted, whatever
// happened to the connection and whatever any wall clock, the database's
// included, did (docs/design.md, Locks on PostgreSQL). A holder whose process dies frees its locks
// about T after a waiter first looks at it; Close frees them at once. A
// failed or cancelled Lock, wait or Unlock costs nothing but itself: a row
// it may have left is removed, in the background if the server does not
// answer, and the store's other holds stay. A store that opened its pool
// waits at most 2 s in Close for the server to hear it; on a silent
// network it then closes its sockets, and its locks are freed as after a
// crash. Lease expiry of slots stays on the database's clock: floors and
// ceilings keep terms disjoint whatever it does.
//
// # Server-side bounds
//
// Every connection the driver opens carries settings so that a client
// gone silent cannot stall the others: idle_in_transaction_session_timeout
// of T/4 (at least 500 ms), so its open transaction and row locks end that
// long after its last statement; lock_timeout of T/2 (at least 1 s) on
// every statement, after which the transaction is tried again within the
// operation's timeout; TCP keepalives on both ends (first probe after T/4,
// at least 1 s, then 3 probes a second apart) and the server's
// tcp_user_timeout of T/2. With the default T of 10 s: a silent client's
// locks are gone within 2.5 s, a dead peer is noticed within about 6 s. On a
// pool the caller made (New), every transaction of the driver sets the
// first two for itself. A silence that cuts a statement's messages short
// (before the Sync) is bounded by none of these timeouts: the server waits
// for the rest, holding the row locks, until the keepalives find the peer
// dead; give a pool passed to New keepalives too.
//
// # Errors and events
//
// As with ZooKeeper: an operation that failed because no server answered
// (a refused or broken connection, a server shutting down, or a deadline
// passed since the last such failure) wraps driver.ErrUnavailable. The
// store reports Disconnected when its connections start failing,
// Connected when the server answers again and when its lock session
// starts (SessionID: the session's id), and Expired when another store
// took the session over or a purge deleted it (driver.Notifier); a lost
// hold says why (driver.LostCause).
//
// # Replication
//
// Never-twice holds only if a commit the driver saw acknowledged survives a
// failover: a single primary, or synchronous replication
// (synchronous_commit on, with a synchronous standby). A database restored
// from a backup or a replica promoted without the last commits is caught by
// the regression guard of every open store (ErrCorrupt), but a store opened
// afterwards has nothing to compare with.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
	"github.com/cosid-go/store/internal/sqlstore/pgdialect"
)

func init() { store.Register("postgres", fromOptions) }

// Options configures a store opened with OpenStore, besides its pool: the
// schema and lockTimeout options of the package documentation.
type Options struct {
	Schema      string        // where the tables live; default "public"
	LockTimeout time.Duration // T of the lock liveness rule, at least 100ms; default 10s
	// ConnConfig opens the lock session's connection; nil uses the pool's.
	ConnConfig *pgx.ConnConfig
}

// driverStore is an open PostgreSQL store. It implements driver.Store,
// driver.RangeStore, driver.SlotLeaseStore, driver.Locker, driver.SlotSeeder,
// driver.Purger, driver.Pinger and driver.Notifier.
type driverStore struct {
	*sqlstore.Store
	pool    *pgxpool.Pool
	ownPool bool
	sockets *sockets // of the pool and lock session, when the store opened the pool
	cfg     Options
	locks   *lockSession
	health  *health
	obs     sqlstore.Observations // other lock sessions' counters, seen by this store

	lq *lockStatements
}

var _ sqlstore.Capabilities = (*driverStore)(nil)

// fromOptions opens a store from options (see the package documentation). It is
// the driver's factory.
func fromOptions(options map[string]string) (driver.Store, error) {
	o := driver.NewOptions(options)
	connString := o.String("connString", "")
	fields := map[string]string{}
	for _, f := range fieldNames {
		if _, given := options[f.option]; given {
			fields[f.option] = o.String(f.option, "")
		}
	}
	schema := o.String("schema", "public")
	poolSize := o.Int("poolSize", 10, 1, maxPoolSize)
	connectTimeout := o.Duration("connectTimeout", 10*time.Second, 0, time.Hour)
	lockTimeout := o.Duration("lockTimeout", 10*time.Second, 100*time.Millisecond, 24*time.Hour)
	create := o.Bool(driver.OptionCreate, true)
	if err := o.Err(); err != nil {
		return nil, err
	}
	if err := checkFields(fields); err != nil {
		return nil, err
	}
	if err := checkSchema(schema); err != nil {
		return nil, fmt.Errorf("option \"schema\": %w", err)
	}
	cfg, err := pgxpool.ParseConfig(withFields(connString, fields))
	if err != nil {
		// pgx's message may quote the connection string: say only what
		// failed, so that a password never reaches a log.
		why := "cannot be parsed as a PostgreSQL connection string"
		if r := explainConnString(connString); r != "" {
			why += ": " + r
		}
		return nil, &driver.OptionError{Key: "connString", Value: connString, Secret: true, Reason: why}
	}
	cfg.MaxConns = int32(poolSize) // bounded by maxPoolSize
	cfg.ConnConfig.ConnectTimeout = connectTimeout
	b := boundsOf(lockTimeout)
	b.apply(&cfg.ConnConfig.Config)
	socks := &sockets{}
	cfg.ConnConfig.DialFunc = quietDial(socks.wrap(b.dialer()))
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout+5*time.Second)
	defer cancel()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s, err := newDriver(ctx, pool, Options{Schema: schema, LockTimeout: lockTimeout, ConnConfig: cfg.ConnConfig}, create)
	if err != nil {
		pool.Close()
		return nil, err
	}
	s.ownPool, s.sockets = true, socks
	return s, nil
}

// clockSQL is the store's clock: the database's, in ms since the epoch.
// Tests put a step in it.
var clockSQL = pgdialect.Clock

// maxPoolSize bounds poolSize, far above any server's max_connections and
// within pgx's int32.
const maxPoolSize = 10000

// maxSchema is the server's limit on an identifier (NAMEDATALEN - 1): a
// longer name would be cut, and two stores configured with different
// names would share tables.
const maxSchema = 63

// checkSchema accepts a schema name of ASCII letters, digits, '_' and '-',
// at most maxSchema bytes: nothing the server would cut, and nothing that
// could read as SQL or as a marker of a statement template.
func checkSchema(schema string) error {
	if schema == "" {
		return fmt.Errorf("schema name is empty: %w", driver.ErrInvalidArgument)
	}
	if len(schema) > maxSchema {
		return fmt.Errorf("schema name %q is %d bytes, over PostgreSQL's %d: %w", schema, len(schema), maxSchema, driver.ErrInvalidArgument)
	}
	for _, c := range schema {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("schema name %q has %q: only ASCII letters, digits, '_' and '-' are allowed: %w", schema, c, driver.ErrInvalidArgument)
		}
	}
	return nil
}

// fieldNames are the separate connection options, in libpq's keywords.
var fieldNames = []struct{ option, keyword string }{
	{"host", "host"}, {"port", "port"}, {"user", "user"},
	{"password", "password"}, {"database", "dbname"}, {"sslmode", "sslmode"},
}

// withFields returns connString with the given fields added: as query
// parameters of a URL, or as keyword pairs (libpq lets the later one win).
func withFields(connString string, fields map[string]string) string {
	if len(fields) == 0 {
		return connString
	}
	if u, err := url.Parse(connString); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		for _, f := range fieldNames {
			if v, ok := fields[f.option]; ok {
				q.Set(f.keyword, v)
			}
		}
		// pgx reads '+' literally, so spaces go as %20 ('+' itself is %2B).
		u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
		return u.String()
	}
	var b strings.Builder
	b.WriteString(connString)
	quote := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	for _, f := range fieldNames {
		if v, ok := fields[f.option]; ok {
			fmt.Fprintf(&b, " %s='%s'", f.keyword, quote.Replace(v))
		}
	}
	return b.String()
}

// newDriver opens a store on a pool the caller owns and closes; without
// create, only a schema with the tables is opened, and nothing is written.
func newDriver(ctx context.Context, pool *pgxpool.Pool, cfg Options, create bool) (*driverStore, error) {
	if cfg.Schema == "" {
		cfg.Schema = "public"
	}
	if cfg.LockTimeout <= 0 {
		cfg.LockTimeout = 10 * time.Second
	}
	if cfg.ConnConfig == nil {
		cfg.ConnConfig = pool.Config().ConnConfig
	}
	// The lock session's connection is the driver's own: it carries the
	// bounds, whoever made the pool.
	cfg.ConnConfig = cfg.ConnConfig.Copy()
	b := boundsOf(cfg.LockTimeout)
	b.apply(&cfg.ConnConfig.Config)
	schema := cfg.Schema
	if err := checkSchema(schema); err != nil {
		return nil, err
	}
	d := pgdialect.New(schema)
	d.Now = clockSQL
	lq, err := newLockStatements(d)
	if err != nil {
		return nil, err
	}
	d.Tables = lockTables
	d.PurgeMore = func(ctx context.Context, tx sqlstore.Querier) ([]string, error) {
		return sqlstore.PurgeLocks(ctx, tx, "postgres", &sqlstore.LockPurge{
			Lock: lq.PurgeLockTables, Head: lq.PurgeHead, List: lq.PurgeList, Delete: lq.PurgeDelete})
	}
	h := &health{Health: sqlstore.NewHealth("PostgreSQL", net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))), connFailure)}
	sqlOpen := sqlstore.Open
	if !create {
		sqlOpen = sqlstore.OpenExisting
	}
	s, err := sqlOpen(ctx, db{pool, h, b}, d)
	if cerr := connectFailure(err); cerr != nil {
		return nil, cerr // about the server, not the schema
	}
	if errors.Is(err, driver.ErrNotFound) {
		cc := pool.Config().ConnConfig
		return nil, fmt.Errorf("postgres: no store at schema %q of database %q on %s: %w", schema, cc.Database, cc.Host, err)
	}
	if err != nil {
		return nil, fmt.Errorf("schema %q: %w", schema, err)
	}
	st := &driverStore{Store: s, pool: pool, cfg: cfg, health: h, lq: lq}
	st.locks = newLockSession(st)
	return st, nil
}

// closeGrace is how long Close of a store that opened its pool waits for
// the server to hear its goodbyes (the lock session's end, which frees its
// locks at once, and each connection's); past it, Close closes the sockets,
// and the session's locks are freed as after a crash, within lockTimeout.
const closeGrace = 2 * time.Second

// Close ends the lock session and, if the store opened the pool, the pool.
func (s *driverStore) Close() error {
	if !s.ownPool {
		return s.locks.Close()
	}
	done := make(chan error, 1)
	go func() {
		err := s.locks.Close()
		s.pool.Close()
		done <- err
	}()
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
	}
	s.sockets.closeAll()
	return <-done
}
