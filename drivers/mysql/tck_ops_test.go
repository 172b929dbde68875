package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/cosid-go/store/internal/sqlstore/mysqldialect"
)

// The operator's hooks of the TCK harness (tck.Snapshotter,
// tck.HandDeleter), done as an operator would, through a connection of
// their own to the database the running stores use.

func (h harness) operator() (*sql.DB, error) { return sql.Open("mysql", h.srv.DSN(h.database)) }

// Snapshot reads every table of the database in one consistent snapshot
// (as mysqldump --single-transaction does); the restore writes the rows
// back in one transaction, with the stores running (tck.Snapshotter).
func (h harness) Snapshot(ctx context.Context) (func(context.Context) error, error) {
	db, err := h.operator()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	tables, err := column(ctx, tx, "SELECT table_name FROM information_schema.tables WHERE table_schema = ? AND table_type = 'BASE TABLE'", h.database)
	if err != nil {
		return nil, err
	}
	saved := map[string][][]any{}
	for _, t := range tables {
		rows, err := tx.QueryContext(ctx, "SELECT * FROM "+mysqldialect.Quote(t))
		if err != nil {
			return nil, err
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]sql.RawBytes, len(cols))
			dest := make([]any, len(cols))
			for i := range vals {
				dest[i] = &vals[i]
			}
			if err := rows.Scan(dest...); err != nil {
				rows.Close()
				return nil, err
			}
			row := make([]any, len(cols))
			for i, v := range vals {
				if v != nil { // NULL stays nil, '' stays empty
					row[i] = append([]byte{}, v...)
				}
			}
			saved[t] = append(saved[t], row)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return func(ctx context.Context) error {
		db, err := h.operator()
		if err != nil {
			return err
		}
		defer db.Close()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		// The waiter rows refer to the session rows: with the checks
		// off (on this connection only, closed after), the tables are
		// written back in any order; the snapshot's rows agree already.
		if _, err := tx.ExecContext(ctx, "SET SESSION foreign_key_checks = 0"); err != nil {
			return err
		}
		for _, t := range tables {
			if _, err := tx.ExecContext(ctx, "DELETE FROM "+mysqldialect.Quote(t)); err != nil {
				return err
			}
			for _, row := range saved[t] {
				q := "INSERT INTO " + mysqldialect.Quote(t) + " VALUES (" + strings.TrimSuffix(strings.Repeat("?, ", len(row)), ", ") + ")"
				if _, err := tx.ExecContext(ctx, q, row...); err != nil {
					return fmt.Errorf("%s: %w", q, err)
				}
			}
		}
		return tx.Commit()
	}, nil
}

// column returns the first column of a query's rows.
func column(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// DeleteRangeKey deletes key's row (tck.HandDeleter).
func (h harness) DeleteRangeKey(ctx context.Context, key string) error {
	return h.editOne(ctx, "DELETE FROM cosid_range WHERE `key` = ?", key)
}

// DeleteSlot deletes slot's row, leaving its namespace's (tck.HandDeleter).
func (h harness) DeleteSlot(ctx context.Context, ns string, slot int) error {
	return h.editOne(ctx, "DELETE FROM cosid_slot WHERE namespace = ? AND slot = ?", ns, slot)
}

func (h harness) editOne(ctx context.Context, stmt string, args ...any) error {
	db, err := h.operator()
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := db.ExecContext(ctx, stmt, args...)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("%s %v: %d rows, want one", stmt, args, n)
	}
	return nil
}

// DeleteNamespace deletes ns's row, leaving its slots' rows (tck.NamespaceDeleter).
func (h harness) DeleteNamespace(ctx context.Context, ns string) error {
	return h.editOne(ctx, "DELETE FROM cosid_namespace WHERE name = ?", ns)
}

// CorruptSlot writes slot's stored expiry wrong (tck.SlotCorrupter): form
// 0 sets expires_at, which the free-slot search reads, to 0 beside fields
// that say the term is live, as a hand edit of the column would.
func (h harness) CorruptSlot(ctx context.Context, ns string, slot, form int) (bool, error) {
	if form > 0 {
		return false, nil
	}
	return true, h.editOne(ctx, "UPDATE cosid_slot SET expires_at = 0 WHERE namespace = ? AND slot = ?", ns, slot)
}
