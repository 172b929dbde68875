package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cosid-go/store/internal/sqlstore"
)

// querier is what a pool and a transaction have in common.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// db adapts pgx to sqlstore.DB. Its errors say when no server answered
// (health), and its transactions carry the server-side bounds and are
// tried again when the server aborted them (a deadlock, a lock wait past
// lock_timeout): such a transaction changed nothing.
type db struct {
	q querier
	h *health
	b bounds
}

func (d db) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	if _, ok := d.q.(*pgxpool.Pool); ok {
		// A statement of its own that the server aborted (a deadlock with
		// a transaction, as TestAcquireStorm saw once from a Release)
		// changed nothing: it is tried again like a transaction.
		var n int64
		err := retryAborted(ctx, func() error {
			tag, err := d.q.Exec(ctx, sql, args...)
			n = tag.RowsAffected()
			return d.check(err)
		})
		return n, err
	}
	tag, err := d.q.Exec(ctx, sql, args...)
	return tag.RowsAffected(), d.check(err)
}

func (d db) QueryRow(ctx context.Context, sql string, args ...any) sqlstore.Row {
	return row{d.q.QueryRow(ctx, sql, args...), d}
}

func (d db) Query(ctx context.Context, sql string, args ...any) (sqlstore.Rows, error) {
	r, err := d.q.Query(ctx, sql, args...)
	if err != nil {
		return nil, d.check(err)
	}
	return rows{r, d, sql}, nil
}

func (d db) Tx(ctx context.Context, fn func(sqlstore.Querier) error) error {
	pool, ok := d.q.(*pgxpool.Pool)
	if !ok {
		return errors.New("postgres: nested transaction")
	}
	return retryAborted(ctx, func() error {
		return d.check(pgx.BeginTxFunc(ctx, pool, d.b.begin(), func(tx pgx.Tx) error {
			return fn(db{oneTrip{tx}, d.h, d.b})
		}))
	})
}

// check records the outcome with health and marks an error of no server
// answering.
func (d db) check(err error) error {
	return d.h.Check(err)
}

type row struct {
	r pgx.Row
	d db
}

func (r row) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		err = sqlstore.ErrNoRows
	}
	return r.d.check(err)
}

type rows struct {
	pgx.Rows
	d   db
	sql string
}

// Close tells a test's hook that the query has read (and locked) its rows.
func (r rows) Close() {
	r.Rows.Close()
	if f := r.d.h.hook.Load(); f != nil {
		(*f)(r.sql)
	}
}

func (r rows) Err() error {
	if err := r.Rows.Err(); err != nil {
		return r.d.check(err)
	}
	return nil
}

// oneTrip is a transaction whose statements, each the first time its
// connection runs it, go to the server in one round trip, parsed and
// planned where they run (pgx's QueryExecModeExec), rather than prepared
// first in a round trip of their own (the pool's default, which caches the
// statement on the connection). A fleet restarting has each of its
// instances, on a new connection, run each statement of an Acquire once:
// the extra round trip per statement, a wait for a backend among a
// thousand on the server's cores, cost more than the parse it saves. A
// statement the connection runs again (a Renew every few seconds) is
// prepared then, and its plan kept.
type oneTrip struct{ tx pgx.Tx }

// ranKey keys, in the connection's custom data, the statements it ran.
const ranKey = "cosid.ran"

// args puts the mode first for a statement the connection has not run:
// pgx reads it as the query's mode, not an argument. A statement without
// arguments goes in one round trip anyway. The transaction holds the
// connection, so its data is not shared meanwhile.
func (o oneTrip) args(sql string, args []any) []any {
	if len(args) == 0 {
		return args
	}
	data := o.tx.Conn().PgConn().CustomData()
	ran, _ := data[ranKey].(map[string]bool)
	if ran == nil {
		ran = map[string]bool{}
		data[ranKey] = ran
	}
	if ran[sql] {
		return args
	}
	ran[sql] = true
	return append([]any{pgx.QueryExecModeExec}, args...)
}

func (o oneTrip) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return o.tx.Exec(ctx, sql, o.args(sql, args)...)
}

func (o oneTrip) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return o.tx.Query(ctx, sql, o.args(sql, args)...)
}

func (o oneTrip) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return o.tx.QueryRow(ctx, sql, o.args(sql, args)...)
}
