package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/cosid-go/store/internal/sqlstore"
	"github.com/cosid-go/store/internal/sqlstore/pgdialect"
	"github.com/cosid-go/store/internal/sqlstore/sqlitedialect"
	"github.com/cosid-go/store/internal/testing/leakcheck"
	"github.com/cosid-go/store/internal/testing/mysqltest"
	"github.com/cosid-go/store/internal/testing/pgtest"
)

// The shared layer's tests run on both databases, through adapters of
// their own as plain as the drivers' (without the drivers' file checks,
// health events and retries).

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(mysqltest.Wrap(pgtest.Wrap(m))) }

// database is one database to test on: the adapter, its dialect, and a
// connection for the test's own statements.
type database struct {
	name string
	db   sqlstore.DB
	d    sqlstore.Dialect
	// exec runs a statement of the test (written with {p} and $n).
	exec func(ctx context.Context, q string, args ...any) error
	// prepare has the database parse q, without running it.
	prepare func(ctx context.Context, q string) error
}

// databases returns a fresh SQLite file and a fresh schema of the shared
// PostgreSQL server, each closed or dropped at the test's end.
func databases(t *testing.T) []database {
	return []database{sqliteDB(t), postgresDB(t)}
}

// eachStore runs test once per database (databases), on a store opened
// there.
func eachStore(t *testing.T, test func(t *testing.T, db database, s *sqlstore.Store)) {
	for _, db := range databases(t) {
		t.Run(db.name, func(t *testing.T) {
			s, err := sqlstore.Open(t.Context(), db.db, db.d)
			if err != nil {
				t.Fatal(err)
			}
			test(t, db, s)
		})
	}
}

func sqliteDB(t *testing.T) database {
	path := filepath.Join(t.TempDir(), "store.db")
	pool, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	pool.SetMaxOpenConns(1)
	t.Cleanup(func() { pool.Close() })
	d := sqlitedialect.New()
	db := sqlDB{q: pool, pool: pool}
	return database{name: "sqlite", db: db, d: d, exec: func(ctx context.Context, q string, args ...any) error {
		_, err := db.Exec(ctx, d.Rewrite(q), args...)
		return err
	}, prepare: func(ctx context.Context, q string) error {
		st, err := pool.PrepareContext(ctx, q)
		if err == nil {
			st.Close()
		}
		return err
	}}
}

var schemas atomic.Int64

func postgresDB(t *testing.T) database {
	srv := pgtest.Shared(t)
	schema := fmt.Sprintf("sqlstore_%d_%d", os.Getpid(), schemas.Add(1))
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, srv.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		pool.Close()
	})
	d := pgdialect.New(schema)
	db := pgDB{q: pool, pool: pool}
	return database{name: "postgres", db: db, d: d, exec: func(ctx context.Context, q string, args ...any) error {
		_, err := db.Exec(ctx, d.Rewrite(q), args...)
		return err
	}, prepare: func(ctx context.Context, q string) error {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return err
		}
		defer c.Release()
		_, err = c.Conn().Prepare(ctx, "", q)
		return err
	}}
}

// sqlDB adapts database/sql.
type sqlDB struct {
	q interface {
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
		QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	}
	pool *sql.DB
}

func (d sqlDB) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := d.q.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (d sqlDB) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return sqlRow{d.q.QueryRowContext(ctx, q, args...)}
}

func (d sqlDB) Query(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	r, err := d.q.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{r}, nil
}

func (d sqlDB) Tx(ctx context.Context, fn func(sqlstore.Querier) error) error {
	tx, err := d.pool.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(sqlDB{q: tx}); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

type sqlRow struct{ r *sql.Row }

func (r sqlRow) Scan(dest ...any) error {
	if err := r.r.Scan(dest...); errors.Is(err, sql.ErrNoRows) {
		return sqlstore.ErrNoRows
	} else {
		return err
	}
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

// pgDB adapts pgx.
type pgDB struct {
	q interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
		QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	}
	pool *pgxpool.Pool
}

func (d pgDB) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := d.q.Exec(ctx, q, args...)
	return tag.RowsAffected(), err
}

func (d pgDB) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	return pgRow{d.q.QueryRow(ctx, q, args...)}
}

func (d pgDB) Query(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	return d.q.Query(ctx, q, args...)
}

func (d pgDB) Tx(ctx context.Context, fn func(sqlstore.Querier) error) error {
	return pgx.BeginTxFunc(ctx, d.pool, pgx.TxOptions{}, func(tx pgx.Tx) error { return fn(pgDB{q: tx}) })
}

type pgRow struct{ r pgx.Row }

func (r pgRow) Scan(dest ...any) error {
	if err := r.r.Scan(dest...); errors.Is(err, pgx.ErrNoRows) {
		return sqlstore.ErrNoRows
	} else {
		return err
	}
}
