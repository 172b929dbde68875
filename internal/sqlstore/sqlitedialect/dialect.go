// Package sqlitedialect is SQLite's sqlstore.Dialect, on modernc.org/sqlite.
package sqlitedialect

import (
	"context"
	"errors"
	"strconv"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/cosid-go/store/internal/sqlstore"
)

// New returns SQLite's dialect: numbered ?N placeholders, the host's
// clock, and no row locks, since a write transaction holds the whole file:
// the free-slot search needs one pass. The store has the file to itself,
// so a file with others' tables is refused.
func New() sqlstore.Dialect {
	return sqlstore.Dialect{
		Name:       "sqlite",
		Now:        "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
		Numbered:   func(n int) string { return "?" + strconv.Itoa(n) },
		FreeSearch: []string{""},
		HasMeta:    "SELECT count(*) > 0 FROM sqlite_schema WHERE type = 'table' AND name = 'cosid_meta'",
		ListTables: listTables,
		Classify:   Classify,
	}
}

// listTables lists the file's tables.
func listTables(ctx context.Context, tx sqlstore.Querier) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table'`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		names = append(names, n)
	}
	return names, rows.Err()
}

// Classify reads SQLite's result code (its primary code: the low byte of
// an extended one).
func Classify(err error) sqlstore.Kind {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return sqlstore.Other
	}
	if e.Code()&0xff == sqlite3.SQLITE_NOTADB {
		return sqlstore.NotADatabase
	}
	return sqlstore.Other
}
