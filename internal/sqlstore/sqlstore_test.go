package sqlstore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"database/sql"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
	"github.com/cosid-go/store/internal/sqlstore/pgdialect"
	"github.com/cosid-go/store/internal/sqlstore/sqlitedialect"
)

// Every shared statement, written for each database, parses there against
// the tables (the fragments SlotsHead and SlotsTail as one statement).
func TestStatementsParse(t *testing.T) {
	for _, db := range databases(t) {
		t.Run(db.name, func(t *testing.T) {
			ctx := t.Context()
			if _, err := sqlstore.Open(ctx, db.db, db.d); err != nil {
				t.Fatal(err)
			}
			stmts, err := sqlstore.Statements(db.d)
			if err != nil {
				t.Fatal(err)
			}
			for _, tail := range []string{"SlotsTail", "SlotsTailSkip", "SlotsTailRead", "SlotsTailLast"} {
				stmts["SlotsHead+"+tail] = stmts["SlotsHead"] + db.d.Placeholder(2) + stmts[tail]
				delete(stmts, tail)
			}
			delete(stmts, "SlotsHead")
			// It runs on tables of version 1 only (the drivers'
			// TestUpgradeFromVersion1), so it cannot parse against these.
			delete(stmts, "Upgrade1")
			for name, q := range stmts {
				if err := db.prepare(ctx, q); err != nil {
					t.Errorf("%s does not parse: %v\n%s", name, err, q)
				}
			}
		})
	}
}

// The rewriter's placeholders bind the arguments by number on each
// database, in any order and past 9.
func TestPlaceholders(t *testing.T) {
	for _, db := range databases(t) {
		t.Run(db.name, func(t *testing.T) {
			args := []any{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"}
			q := db.d.Rewrite(`SELECT CAST($2 AS TEXT) || CAST($1 AS TEXT) || CAST($11 AS TEXT) || CAST($10 AS TEXT) || CAST($2 AS TEXT)
				WHERE CAST($3 AS TEXT) <> CAST($4 AS TEXT) AND CAST($5 AS TEXT) <> CAST($6 AS TEXT)
				AND CAST($7 AS TEXT) <> CAST($8 AS TEXT) AND CAST($9 AS TEXT) <> ''`)
			var got string
			if err := db.db.QueryRow(t.Context(), q, args...).Scan(&got); err != nil {
				t.Fatalf("%v\n%s", err, q)
			}
			if got != "bakjb" {
				t.Errorf("got %q, want bakjb", got)
			}
		})
	}
}

// The regression guard: a key's next value or a slot's fence below what
// the store saw before, or a key it saw gone, is ErrCorrupt, on each
// database.
func TestGuards(t *testing.T) {
	eachStore(t, func(t *testing.T, db database, s *sqlstore.Store) {
		ctx := t.Context()
		if _, err := s.Next(ctx, "k", 10); err != nil {
			t.Fatal(err)
		}
		if err := db.exec(ctx, `UPDATE {p}cosid_range SET next = 5 WHERE key = 'k'`); err != nil {
			t.Fatal(err)
		}
		if start, err := s.Next(ctx, "k", 1); !errors.Is(err, driver.ErrCorrupt) {
			t.Errorf("Next after the key went back from 10 to 5 = %d, %v; want ErrCorrupt", start, err)
		}
		if _, _, err := s.Current(ctx, "k"); !errors.Is(err, driver.ErrCorrupt) {
			t.Errorf("Current after the key went back: %v; want ErrCorrupt", err)
		}
		if err := db.exec(ctx, `DELETE FROM {p}cosid_range WHERE key = 'k'`); err != nil {
			t.Fatal(err)
		}
		if start, err := s.Next(ctx, "k", 1); !errors.Is(err, driver.ErrCorrupt) {
			t.Errorf("Next after the key's row was deleted = %d, %v; want ErrCorrupt", start, err)
		}

		ns := driver.Namespace{Name: "w", Limit: 2, Tolerance: time.Second}
		l, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "1", TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.exec(ctx, `UPDATE {p}cosid_slot SET fence = fence - 1 WHERE slot = $1`, l.Slot); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Renew(ctx, l); !errors.Is(err, driver.ErrCorrupt) {
			t.Errorf("Renew after the slot's fence went back: %v; want ErrCorrupt", err)
		}
	})
}

// The free-slot search runs one pass per ending of the dialect, and no
// more: on SQLite, whose write transaction holds the file, one; on
// PostgreSQL, a pass skipping locked rows, then one not waiting for them.
// Counted when every slot is held, the case that runs every pass.
func TestFreeSearchPasses(t *testing.T) {
	want := map[string]int{"sqlite": 1, "postgres": 2}
	for _, db := range databases(t) {
		t.Run(db.name, func(t *testing.T) {
			ctx := t.Context()
			var n atomic.Int64
			var free atomic.Int64
			rec := &recording{DB: db.db, n: &n, free: &free}
			s, err := sqlstore.Open(ctx, rec, db.d)
			if err != nil {
				t.Fatal(err)
			}
			ns := driver.Namespace{Name: "w", Limit: 2, Tolerance: time.Second}
			req := func(owner string) driver.AcquireRequest {
				return driver.AcquireRequest{Namespace: ns, Owner: owner, Incarnation: "1", TTL: time.Minute}
			}
			for _, o := range []string{"a", "b"} {
				if _, err := s.Acquire(ctx, req(o)); err != nil {
					t.Fatal(err)
				}
			}
			n.Store(0)
			free.Store(0)
			if _, err := s.Acquire(ctx, req("c")); !errors.Is(err, driver.ErrExhausted) {
				t.Fatalf("Acquire with every slot held: %v, want ErrExhausted", err)
			}
			t.Logf("%s: an Acquire refused with every slot held ran %d statements, %d of them the free-slot search", db.name, n.Load(), free.Load())
			if got := free.Load(); got != int64(want[db.name]) {
				t.Errorf("the free-slot search ran %d times, want %d (one per ending of the dialect)", got, want[db.name])
			}
		})
	}
}

// recording counts statements, and those of the free-slot search and
// those outside a transaction.
type recording struct {
	sqlstore.DB
	n, free *atomic.Int64
	out     *atomic.Int64 // if set, the statements run outside a transaction
}

func (r *recording) count(q string) {
	r.n.Add(1)
	if r.out != nil {
		r.out.Add(1)
	}
	// The free-slot search (slotFree), not the read of the gap that says
	// whether a row before it is free (SlotGapFree).
	if strings.Contains(q, "expires_at <=") && !strings.Contains(q, "free_before") {
		r.free.Add(1)
	}
}

func (r *recording) Exec(ctx context.Context, q string, args ...any) (int64, error) {
	r.count(q)
	return r.DB.Exec(ctx, q, args...)
}

func (r *recording) QueryRow(ctx context.Context, q string, args ...any) sqlstore.Row {
	r.count(q)
	return r.DB.QueryRow(ctx, q, args...)
}

func (r *recording) Query(ctx context.Context, q string, args ...any) (sqlstore.Rows, error) {
	r.count(q)
	return r.DB.Query(ctx, q, args...)
}

func (r *recording) Tx(ctx context.Context, fn func(sqlstore.Querier) error) error {
	return r.DB.Tx(ctx, func(tx sqlstore.Querier) error {
		return fn(&recording{DB: txDB{tx}, n: r.n, free: r.free})
	})
}

// txDB is a transaction as a DB, for recording (never nested).
type txDB struct{ sqlstore.Querier }

func (txDB) Tx(context.Context, func(sqlstore.Querier) error) error {
	return errors.New("nested transaction")
}

// A SQLite database with others' tables is refused and left unchanged; a
// PostgreSQL schema is the store's own namespace, whatever else the
// database holds.
func TestForeignTables(t *testing.T) {
	for _, db := range databases(t) {
		t.Run(db.name, func(t *testing.T) {
			ctx := t.Context()
			if err := db.exec(ctx, `CREATE TABLE invoices (id INT)`); err != nil {
				t.Fatal(err)
			}
			_, err := sqlstore.Open(ctx, db.db, db.d)
			switch db.name {
			case "sqlite":
				if !errors.Is(err, driver.ErrConfigMismatch) || !strings.Contains(err.Error(), "tables (invoices) but no cosid_meta") {
					t.Errorf("Open of a file with another's table: %v; want ErrConfigMismatch naming it", err)
				}
				var n int
				if err := db.db.QueryRow(ctx, `SELECT count(*) FROM sqlite_schema`).Scan(&n); err != nil || n != 1 {
					t.Errorf("the refused file has %d objects (%v), want its 1 table only", n, err)
				}
			default:
				if err != nil {
					t.Errorf("Open of a schema beside another's table: %v", err)
				}
			}
		})
	}
}

// Each dialect classifies its database's errors by code: provoked for
// real, not built by hand.
func TestClassify(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		ctx := t.Context()
		path := filepath.Join(t.TempDir(), "text.db")
		if err := os.WriteFile(path, []byte(strings.Repeat("not a database, just text\n", 200)), 0o600); err != nil {
			t.Fatal(err)
		}
		pool, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		d := sqlitedialect.New()
		err = sqlstore.Check(ctx, sqlDB{q: pool, pool: pool}, d)
		if k := d.Kind(err); k != sqlstore.NotADatabase {
			t.Errorf("Check of a text file: %v, classified %v; want %v", err, k, sqlstore.NotADatabase)
		}
		_, err = pool.ExecContext(ctx, "SELEC 1")
		if k := d.Kind(err); err == nil || k != sqlstore.Other {
			t.Errorf("a syntax error (%v) classified %v; want %v", err, k, sqlstore.Other)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		db := postgresDB(t)
		ctx := t.Context()
		if err := db.exec(ctx, `CREATE SCHEMA `+strings.TrimSuffix(db.d.Prefix, ".")); err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{
			`CREATE TABLE {p}parent (id INT PRIMARY KEY)`,
			`CREATE TABLE {p}child (parent INT REFERENCES {p}parent (id))`,
			`INSERT INTO {p}parent VALUES (1)`,
		} {
			if err := db.exec(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		err := db.exec(ctx, `INSERT INTO {p}child VALUES (2)`)
		if k := pgdialect.Classify(err); k != sqlstore.MissingParent {
			t.Errorf("a foreign key violation (%v) classified %v; want %v", err, k, sqlstore.MissingParent)
		}
		// A row lock another transaction holds, taken with NOWAIT.
		err = db.db.Tx(ctx, func(tx sqlstore.Querier) error {
			if _, err := tx.Exec(ctx, db.d.Rewrite(`SELECT id FROM {p}parent FOR UPDATE`)); err != nil {
				return err
			}
			return db.exec(ctx, `SELECT id FROM {p}parent FOR UPDATE NOWAIT`)
		})
		if k := pgdialect.Classify(err); k != sqlstore.Aborted {
			t.Errorf("a row lock not available (%v) classified %v; want %v", err, k, sqlstore.Aborted)
		}
		err = db.exec(ctx, `SELEC 1`)
		if k := pgdialect.Classify(err); err == nil || k != sqlstore.Other {
			t.Errorf("a syntax error (%v) classified %v; want %v", err, k, sqlstore.Other)
		}
		if k := pgdialect.Classify(context.Canceled); k != sqlstore.Other {
			t.Errorf("context.Canceled classified %v", k)
		}
	})
}
