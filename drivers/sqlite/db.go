package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"

	"github.com/cosid-go/store/internal/sqlstore"
)

// querier is what *sql.DB and *sql.Tx have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// db adapts database/sql to sqlstore.DB. Statements on one file take
// turns within the process (mu, shared by every store of the file): SQLite
// has one writer at a time anyway, and its busy handler polls with growing
// sleeps, which would starve some writers under contention. Processes
// still wait for each other through the busy timeout.
//
// Outside a transaction, each statement and each transaction is checked
// before and after by g (nil inside a transaction, and while a new store
// is built under a temporary name).
type db struct {
	q     querier
	mu    *sync.Mutex // nil inside a transaction, which holds it already
	stmts *stmtCache  // nil inside a transaction
	g     *fileGuard
}

// stmtCache keeps each statement run outside a transaction prepared, as a
// program would: preparing costs SQLite more than running a small one.
type stmtCache struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// prepared returns what runs one statement: its prepared form outside a
// transaction.
func (d db) prepared(ctx context.Context, query string) (querier, error) {
	if d.stmts == nil {
		return d.q, nil
	}
	c := d.stmts
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.m[query]
	if st == nil {
		var err error
		if st, err = c.db.PrepareContext(ctx, query); err != nil {
			return nil, err
		}
		c.m[query] = st
	}
	return stmtQuerier{st}, nil
}

// close closes every prepared statement.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	clear(c.m)
}

// stmtQuerier runs a prepared statement; the query text is its own.
type stmtQuerier struct{ st *sql.Stmt }

func (s stmtQuerier) ExecContext(ctx context.Context, _ string, args ...any) (sql.Result, error) {
	return s.st.ExecContext(ctx, args...)
}

func (s stmtQuerier) QueryContext(ctx context.Context, _ string, args ...any) (*sql.Rows, error) {
	return s.st.QueryContext(ctx, args...)
}

func (s stmtQuerier) QueryRowContext(ctx context.Context, _ string, args ...any) *sql.Row {
	return s.st.QueryRowContext(ctx, args...)
}

func (d db) lock() func() {
	if d.mu == nil {
		return func() {}
	}
	d.mu.Lock()
	return d.mu.Unlock
}

func (d db) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	defer d.lock()()
	if err := d.g.check(); err != nil {
		return 0, err
	}
	q, err := d.prepared(ctx, query)
	if err != nil {
		return 0, err
	}
	res, err := q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	if err := d.g.check(); err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (d db) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	unlock := d.lock()
	if err := d.g.check(); err != nil {
		return errRow{err, unlock}
	}
	q, err := d.prepared(ctx, query)
	if err != nil {
		return errRow{err, unlock}
	}
	return row{q.QueryRowContext(ctx, query, args...), unlock, d.g}
}

// Query is checked before it runs only: it reads.
func (d db) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	unlock := d.lock()
	if err := d.g.check(); err != nil {
		unlock()
		return nil, err
	}
	q, err := d.prepared(ctx, query)
	if err != nil {
		unlock()
		return nil, err
	}
	r, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		unlock()
		return nil, err
	}
	return rows{r, unlock}, nil
}

// Tx runs fn in a transaction that starts with BEGIN IMMEDIATE (the
// connection's _txlock), so it holds the write lock from its first
// statement and never fails to upgrade a read lock half-way.
func (d db) Tx(ctx context.Context, fn func(sqlstore.Querier) error) error {
	pool, ok := d.q.(*sql.DB)
	if !ok {
		return errors.New("sqlite: nested transaction")
	}
	defer d.lock()()
	tx, err := pool.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	// Checked once the write lock is held, and after the commit.
	if err := d.g.check(); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := fn(db{q: tx}); err != nil {
		_ = tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	return d.g.check()
}

// row is one row of a statement outside a transaction: the statement runs
// (and commits) by the time Scan has read it, and is checked after that.
type row struct {
	r      *sql.Row
	unlock func()
	g      *fileGuard
}

func (r row) Scan(dest ...any) error {
	defer r.unlock()
	err := r.r.Scan(dest...)
	if err == nil || errors.Is(err, sql.ErrNoRows) {
		if gerr := r.g.check(); gerr != nil {
			return gerr
		}
	}
	if errors.Is(err, sql.ErrNoRows) {
		return sqlstore.ErrNoRows
	}
	return err
}

// errRow is a row whose statement could not be prepared.
type errRow struct {
	err    error
	unlock func()
}

func (r errRow) Scan(...any) error {
	r.unlock()
	return r.err
}

type rows struct {
	*sql.Rows
	unlock func()
}

func (r rows) Close() {
	_ = r.Rows.Close()
	r.unlock()
}

// fileLocks holds one mutex per file, by its identity: every name of a
// file (a symlink, a relative path) shares it.
var fileLocks = struct {
	sync.Mutex
	m map[fileID]*sync.Mutex
}{m: map[fileID]*sync.Mutex{}}

func fileLock(id fileID) *sync.Mutex {
	fileLocks.Lock()
	defer fileLocks.Unlock()
	mu := fileLocks.m[id]
	if mu == nil {
		mu = &sync.Mutex{}
		fileLocks.m[id] = mu
	}
	return mu
}
