package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync/atomic"
)

// The operator's hooks of the TCK harness (tck.Snapshotter,
// tck.HandDeleter), done as an operator would, with a SQLite connection of
// their own beside the running stores. SQLite has no sessions (and the
// driver no locks), so there is no tck.SessionEnder.

var snapshots atomic.Int64

// raw opens a connection of the operator's own to the harness's file.
func (h harness) raw() (*sql.DB, error) {
	db, err := sql.Open("sqlite", h.path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1) // ATTACH and a transaction belong to one connection
	return db, nil
}

// Snapshot copies the file with VACUUM INTO, as a backup does; the
// restore writes every table of the copy back into the file in one
// transaction, so the running stores keep their file (the same inode and
// -wal) and only what it holds goes back (tck.Snapshotter).
func (h harness) Snapshot(ctx context.Context) (func(context.Context) error, error) {
	snap := filepath.Join(filepath.Dir(h.path), fmt.Sprintf("snapshot-%d.db", snapshots.Add(1)))
	db, err := h.raw()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", snap); err != nil {
		return nil, fmt.Errorf("VACUUM INTO %s: %w", snap, err)
	}
	return func(ctx context.Context) error { return h.restore(ctx, snap) }, nil
}

func (h harness) restore(ctx context.Context, snap string) (err error) {
	db, err := h.raw()
	if err != nil {
		return err
	}
	defer db.Close()
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "ATTACH DATABASE ? AS snap", snap); err != nil {
		return err
	}
	defer func() {
		if _, derr := c.ExecContext(context.Background(), "DETACH DATABASE snap"); err == nil {
			err = derr
		}
	}()
	tables, err := tableNames(ctx, c, "main")
	if err != nil {
		return err
	}
	copied, err := tableNames(ctx, c, "snap")
	if err != nil {
		return err
	}
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	for t := range tables {
		stmts := []string{"DELETE FROM main." + t}
		if copied[t] {
			stmts = append(stmts, "INSERT INTO main."+t+" SELECT * FROM snap."+t)
		}
		for _, s := range stmts {
			if _, err := c.ExecContext(ctx, s); err != nil {
				_, _ = c.ExecContext(context.Background(), "ROLLBACK") // the error to report is s's
				return fmt.Errorf("%s: %w", s, err)
			}
		}
	}
	_, err = c.ExecContext(ctx, "COMMIT")
	return err
}

// tableNames returns the store's tables in schema (main or snap), as a
// list for main and a set for snap.
func tableNames(ctx context.Context, c *sql.Conn, schema string) (map[string]bool, error) {
	rows, err := c.QueryContext(ctx, "SELECT name FROM "+schema+".sqlite_master WHERE type = 'table' AND name LIKE 'cosid\\_%' ESCAPE '\\'")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	names := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names[n] = true
	}
	return names, rows.Err()
}

// DeleteRangeKey deletes key's row (tck.HandDeleter).
func (h harness) DeleteRangeKey(ctx context.Context, key string) error {
	return h.exec(ctx, "DELETE FROM cosid_range WHERE key = ?", key)
}

// DeleteSlot deletes slot's row, leaving its namespace's (tck.HandDeleter).
func (h harness) DeleteSlot(ctx context.Context, ns string, slot int) error {
	return h.exec(ctx, "DELETE FROM cosid_slot WHERE namespace = ? AND slot = ?", ns, slot)
}

// exec runs one statement that must change one row.
func (h harness) exec(ctx context.Context, stmt string, args ...any) error {
	db, err := h.raw()
	if err != nil {
		return err
	}
	defer db.Close()
	r, err := db.ExecContext(ctx, stmt, args...)
	if err != nil {
		return err
	}
	if n, err := r.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("%s %v: %d rows, %v; want one", stmt, args, n, err)
	}
	return nil
}

// DeleteNamespace deletes ns's row, leaving its slots' rows (tck.NamespaceDeleter).
func (h harness) DeleteNamespace(ctx context.Context, ns string) error {
	return h.exec(ctx, "DELETE FROM cosid_namespace WHERE name = ?", ns)
}

// CorruptSlot writes slot's stored expiry wrong (tck.SlotCorrupter): form
// 0 sets expires_at, which the free-slot search reads, to 0 beside fields
// that say the term is live, as a hand edit of the column would.
func (h harness) CorruptSlot(ctx context.Context, ns string, slot, form int) (bool, error) {
	if form > 0 {
		return false, nil
	}
	return true, h.exec(ctx, "UPDATE cosid_slot SET expires_at = 0 WHERE namespace = ? AND slot = ?", ns, slot)
}
