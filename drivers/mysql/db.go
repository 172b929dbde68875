package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/cosid-go/store/internal/sqlstore"
	"github.com/cosid-go/store/internal/sqlstore/mysqldialect"
)

// execer is what a pool and a transaction have in common.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// db adapts database/sql to sqlstore.DB: the statements' $n become ?
// with their arguments in order, the dialect's marks are read (values
// through LAST_INSERT_ID, upsert counts), errors say when no server
// answered (health), and what the server aborted (a deadlock, a lock wait
// past innodb_lock_wait_timeout) is tried again: a statement of its own or
// a whole transaction, rolled back, so it changed nothing.
type db struct {
	pool *sql.DB
	h    *sqlstore.Health
	d    sqlstore.Dialect
	q    *queries
}

var _ sqlstore.Int64Querier = db{}

func newDB(pool *sql.DB, h *sqlstore.Health, d sqlstore.Dialect) db {
	return db{pool: pool, h: h, d: d, q: &queries{}}
}

// query is a statement in the server's form.
type query struct {
	text  string
	order []int // the argument of each ?, 0-based
	mark  string
}

// queries caches statements in the server's form, by their text: read
// on every statement, written once per text.
type queries struct {
	m sync.Map // string to *query
}

// get returns q in the server's form: each $n a ?, its argument listed.
func (c *queries) get(q string) *query {
	if t, ok := c.m.Load(q); ok {
		return t.(*query)
	}
	t := &query{}
	for _, m := range []string{mysqldialect.MarkID, mysqldialect.MarkIDChanged, mysqldialect.MarkIDFound,
		mysqldialect.MarkUpsert, mysqldialect.MarkRepeatableRead} {
		if strings.HasPrefix(q, m) {
			t.mark = m
		}
	}
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		if q[i] == '$' && i+1 < len(q) && q[i+1] >= '0' && q[i+1] <= '9' {
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			n, _ := strconv.Atoi(q[i+1 : j])
			t.order = append(t.order, n-1)
			b.WriteByte('?')
			i = j - 1
			continue
		}
		b.WriteByte(q[i])
	}
	t.text = b.String()
	got, _ := c.m.LoadOrStore(q, t)
	return got.(*query)
}

// returnsID says whether t's value is the LAST_INSERT_ID it sets.
func (t *query) returnsID() bool {
	switch t.mark {
	case mysqldialect.MarkID, mysqldialect.MarkIDChanged, mysqldialect.MarkIDFound:
		return true
	}
	return false
}

// args lists args in the order of t's placeholders.
func (t *query) args(args []any) ([]any, error) {
	out := make([]any, len(t.order))
	for i, n := range t.order {
		if n < 0 || n >= len(args) {
			return nil, fmt.Errorf("mysql: statement wants argument $%d of %d", n+1, len(args))
		}
		out[i] = args[n]
	}
	return out, nil
}

func (d db) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	var n int64
	err := d.retry(ctx, func() error {
		var err error
		n, _, err = d.exec(ctx, d.pool, d.q.get(q), args)
		return err
	})
	return n, d.check(err)
}

// exec runs t on e and returns its affected rows (an upsert's update
// counted once) and the insert id of its OK packet.
func (d db) exec(ctx context.Context, e execer, t *query, args []any) (n, id int64, err error) {
	a, err := t.args(args)
	if err != nil {
		return 0, 0, err
	}
	res, err := e.ExecContext(ctx, t.text, a...)
	if err != nil {
		return 0, 0, err
	}
	if n, err = res.RowsAffected(); err != nil {
		return 0, 0, err
	}
	if id, err = res.LastInsertId(); err != nil {
		return 0, 0, err
	}
	if t.mark == mysqldialect.MarkUpsert && n == 2 {
		n = 1
	}
	return n, id, nil
}

func (d db) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	t := d.q.get(q)
	if t.returnsID() {
		v, err := d.queryID(ctx, t, args)
		return &idRow{v: v, err: err}
	}
	return d.queryRow(ctx, d.pool, t, args)
}

// QueryInt64 is QueryRow of a statement of one int64 value without a Row
// (sqlstore.Int64Querier): Next's path.
func (d db) QueryInt64(ctx context.Context, q string, args ...any) (int64, error) {
	t := d.q.get(q)
	if t.returnsID() {
		return d.queryID(ctx, t, args)
	}
	var v int64
	err := d.queryRow(ctx, d.pool, t, args).Scan(&v)
	return v, err
}

// queryID runs t, whose value is the LAST_INSERT_ID it sets, on the pool,
// again while the server aborts it.
func (d db) queryID(ctx context.Context, t *query, args []any) (int64, error) {
	var v int64
	err := d.retry(ctx, func() error {
		var err error
		v, err = d.id(ctx, d.pool, t, args)
		return err
	})
	return v, d.check(err)
}

func (d db) queryRow(ctx context.Context, e execer, t *query, args []any) sqlstore.Row {
	a, err := t.args(args)
	if err != nil {
		return &idRow{err: err}
	}
	return row{e.QueryRowContext(ctx, t.text, a...), d}
}

// id runs a statement whose value is the LAST_INSERT_ID(expr) it set (the
// dialect's marks); sqlstore.ErrNoRows when, by its mark, it set none.
func (d db) id(ctx context.Context, e execer, t *query, args []any) (int64, error) {
	n, id, err := d.exec(ctx, e, t, args)
	switch {
	case err != nil && t.mark == mysqldialect.MarkIDChanged && mysqldialect.OutOfRange(err):
		return 0, sqlstore.ErrNoRows // it changed nothing
	case err != nil:
		return 0, err
	case t.mark == mysqldialect.MarkIDChanged && n == 0, t.mark == mysqldialect.MarkIDFound && id == 0:
		return 0, sqlstore.ErrNoRows
	}
	return id, nil
}

// idRow is the value of a statement that returns its LAST_INSERT_ID as a
// row of that one value, or of none (its error sqlstore.ErrNoRows).
type idRow struct {
	v   int64
	err error
}

func (r *idRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	if len(dest) != 1 {
		return fmt.Errorf("mysql: a statement's one value scanned into %d destinations", len(dest))
	}
	p, ok := dest[0].(*int64)
	if !ok {
		return fmt.Errorf("mysql: a statement's value scanned into %T, not *int64", dest[0])
	}
	*p = r.v
	return nil
}

func (d db) Query(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	return d.query(ctx, d.pool, d.q.get(q), args)
}

func (d db) query(ctx context.Context, e execer, t *query, args []any) (sqlstore.Rows, error) {
	a, err := t.args(args)
	if err != nil {
		return nil, err
	}
	r, err := e.QueryContext(ctx, t.text, a...)
	if err != nil {
		return nil, d.check(err)
	}
	return rows{r, d}, nil
}

// Tx runs fn in a transaction begun by its first statement: at REPEATABLE
// READ when that statement is so marked (the purge's lock), else at the
// connection's READ COMMITTED. One the server aborted is rolled back and
// run again.
func (d db) Tx(ctx context.Context, fn func(sqlstore.Querier) error) error {
	return d.check(d.retry(ctx, func() error {
		t := &tx{d: d}
		err := fn(t)
		if t.tx == nil {
			return err
		}
		if err != nil {
			_ = t.tx.Rollback()
			return err
		}
		return commit(ctx, t.tx)
	}))
}

// retry runs fn again while the server aborted it, until ctx ends
// (sqlstore.RetryAborted).
func (d db) retry(ctx context.Context, fn func() error) error {
	return sqlstore.RetryAborted(ctx, func(err error) bool { return d.d.Kind(err) == sqlstore.Aborted }, fn)
}

// commit commits tx, begun with ctx. A context that ended first is the
// error: database/sql rolls a transaction back when its context ends, and
// a Commit after that rollback only says ErrTxDone (a Lock whose context
// ended inside its enqueue failed so, not with the context's error).
func commit(ctx context.Context, tx *sql.Tx) error {
	err := tx.Commit()
	if errors.Is(err, sql.ErrTxDone) && ctx.Err() != nil {
		return fmt.Errorf("%w (the transaction was rolled back)", ctx.Err())
	}
	return err
}

// check records the outcome with health and marks an error of no server
// answering.
func (d db) check(err error) error {
	return d.h.Check(err)
}

// tx is one transaction of Tx, begun by its first statement.
type tx struct {
	d  db
	tx *sql.Tx
}

func (t *tx) begin(ctx context.Context, q string) error {
	if t.tx != nil {
		return nil
	}
	var opts *sql.TxOptions
	if t.d.q.get(q).mark == mysqldialect.MarkRepeatableRead {
		opts = &sql.TxOptions{Isolation: sql.LevelRepeatableRead}
	}
	var err error
	t.tx, err = t.d.pool.BeginTx(ctx, opts)
	return err
}

func (t *tx) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	if err := t.begin(ctx, q); err != nil {
		return 0, err
	}
	n, _, err := t.d.exec(ctx, t.tx, t.d.q.get(q), args)
	return n, err
}

func (t *tx) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	if err := t.begin(ctx, q); err != nil {
		return &idRow{err: err}
	}
	s := t.d.q.get(q)
	if s.returnsID() {
		v, err := t.d.id(ctx, t.tx, s, args)
		return &idRow{v: v, err: err}
	}
	return t.d.queryRow(ctx, t.tx, s, args)
}

func (t *tx) Query(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	if err := t.begin(ctx, q); err != nil {
		return nil, err
	}
	return t.d.query(ctx, t.tx, t.d.q.get(q), args)
}

type row struct {
	r *sql.Row
	d db
}

func (r row) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		err = sqlstore.ErrNoRows
	}
	return r.d.check(err)
}

type rows struct {
	r *sql.Rows
	d db
}

func (r rows) Next() bool             { return r.r.Next() }
func (r rows) Scan(dest ...any) error { return r.r.Scan(dest...) }
func (r rows) Close()                 { _ = r.r.Close() }

func (r rows) Err() error {
	if err := r.r.Err(); err != nil {
		return r.d.check(err)
	}
	return nil
}
