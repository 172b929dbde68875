package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/driver"
)

// The operator's hooks of the TCK harness (tck.Snapshotter,
// tck.HandDeleter, tck.SessionEnder), done as an operator would, through a
// connection of their own to the schema the running stores use.

var snapshots atomic.Int64

// superConn connects as the harness's server user (a superuser).
func (h harness) superConn(ctx context.Context) (*pgx.Conn, error) {
	return pgx.Connect(ctx, h.srv.ConnString())
}

func (h harness) ident(name string) string { return pgx.Identifier{h.schema, name}.Sanitize() }

// Snapshot copies every table of the schema into a schema of its own and
// notes its sequences (lock tickets); the restore writes them back in one
// transaction, foreign keys off as pg_restore --disable-triggers does, with
// the stores running (tck.Snapshotter).
func (h harness) Snapshot(ctx context.Context) (func(context.Context) error, error) {
	c, err := h.superConn(ctx)
	if err != nil {
		return nil, err
	}
	defer c.Close(context.Background())
	snap := fmt.Sprintf("%s_snap%d", h.schema, snapshots.Add(1))
	tables, err := names(ctx, c, `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE'`, h.schema)
	if err != nil {
		return nil, err
	}
	seqs, err := names(ctx, c, `SELECT sequence_name FROM information_schema.sequences WHERE sequence_schema = $1`, h.schema)
	if err != nil {
		return nil, err
	}
	tx, err := c.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead}) // one instant for every table
	if err != nil {
		return nil, err
	}
	defer tx.Rollback(context.Background())
	stmts := []string{"CREATE SCHEMA " + pgx.Identifier{snap}.Sanitize()}
	for _, t := range tables {
		stmts = append(stmts, "CREATE TABLE "+pgx.Identifier{snap, t}.Sanitize()+" AS TABLE "+h.ident(t))
	}
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return nil, fmt.Errorf("%s: %w", s, err)
		}
	}
	restore := []string{"SET LOCAL session_replication_role = replica"}
	for _, t := range tables {
		restore = append(restore, "DELETE FROM "+h.ident(t), "INSERT INTO "+h.ident(t)+" SELECT * FROM "+pgx.Identifier{snap, t}.Sanitize())
	}
	for _, s := range seqs {
		var last int64
		var called bool
		if err := tx.QueryRow(ctx, "SELECT last_value, is_called FROM "+h.ident(s)).Scan(&last, &called); err != nil {
			return nil, err
		}
		restore = append(restore, fmt.Sprintf("SELECT setval('%s', %d, %t)", strings.ReplaceAll(h.ident(s), "'", "''"), last, called))
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		c, err := h.superConn(ctx)
		if err != nil {
			return err
		}
		defer c.Close(context.Background())
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			for _, s := range restore {
				if _, err := tx.Exec(ctx, s); err != nil {
					return fmt.Errorf("%s: %w", s, err)
				}
			}
			_, err := tx.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{snap}.Sanitize()+" CASCADE")
			return err
		})
	}, nil
}

// names returns the first column of a query's rows.
func names(ctx context.Context, c *pgx.Conn, query string, args ...any) ([]string, error) {
	rows, err := c.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// DeleteRangeKey deletes key's row (tck.HandDeleter).
func (h harness) DeleteRangeKey(ctx context.Context, key string) error {
	return h.editOne(ctx, "DELETE FROM "+h.ident("cosid_range")+" WHERE key = $1", key)
}

// DeleteSlot deletes slot's row, leaving its namespace's (tck.HandDeleter).
func (h harness) DeleteSlot(ctx context.Context, ns string, slot int) error {
	return h.editOne(ctx, "DELETE FROM "+h.ident("cosid_slot")+" WHERE namespace = $1 AND slot = $2", ns, slot)
}

func (h harness) editOne(ctx context.Context, stmt string, args ...any) error {
	c, err := h.superConn(ctx)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	tag, err := c.Exec(ctx, stmt, args...)
	if err == nil && tag.RowsAffected() != 1 {
		err = fmt.Errorf("%s %v: %d rows, want one", stmt, args, tag.RowsAffected())
	}
	return err
}

// EndSession terminates the backend of d's lock session, as an operator's
// pg_terminate_backend does (tck.SessionEnder).
func (h harness) EndSession(ctx context.Context, d driver.Store) error {
	s, ok := d.(*driverStore)
	if !ok {
		return fmt.Errorf("EndSession of %T, not a store of this harness", d)
	}
	cur := s.locks.Current()
	if cur == nil {
		return fmt.Errorf("the store has no lock session to end")
	}
	c, err := h.superConn(ctx)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	var n int
	err = c.QueryRow(ctx, "SELECT count(pg_terminate_backend(pid)) FROM "+h.ident("cosid_lock_session")+" WHERE id = $1", cur.id).Scan(&n)
	if err == nil && n != 1 {
		err = fmt.Errorf("pg_terminate_backend ended %d backends of session %d, want one", n, cur.id)
	}
	return err
}

// DeleteNamespace deletes ns's row, leaving its slots' rows (tck.NamespaceDeleter).
func (h harness) DeleteNamespace(ctx context.Context, ns string) error {
	return h.editOne(ctx, "DELETE FROM "+h.ident("cosid_namespace")+" WHERE name = $1", ns)
}

// CorruptSlot writes slot's stored expiry wrong (tck.SlotCorrupter): form
// 0 sets expires_at, which the free-slot search reads, to 0 beside fields
// that say the term is live, as a hand edit of the column would.
func (h harness) CorruptSlot(ctx context.Context, ns string, slot, form int) (bool, error) {
	if form > 0 {
		return false, nil
	}
	return true, h.editOne(ctx, "UPDATE "+h.ident("cosid_slot")+" SET expires_at = 0 WHERE namespace = $1 AND slot = $2", ns, slot)
}
