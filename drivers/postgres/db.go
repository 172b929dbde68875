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

// db adapts pgx to sqlstore.DB.
type db struct{ q querier }

func (d db) Exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := d.q.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

func (d db) QueryRow(ctx context.Context, sql string, args ...any) sqlstore.Row {
	return row{d.q.QueryRow(ctx, sql, args...)}
}

func (d db) Query(ctx context.Context, sql string, args ...any) (sqlstore.Rows, error) {
	return d.q.Query(ctx, sql, args...)
}

func (d db) Tx(ctx context.Context, fn func(sqlstore.Querier) error) error {
	pool, ok := d.q.(*pgxpool.Pool)
	if !ok {
		return errors.New("postgres: nested transaction")
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return fn(db{tx}) })
}

type row struct{ r pgx.Row }

func (r row) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return sqlstore.ErrNoRows
	}
	return err
}
