package sqlstore_test

import (
	"database/sql"
	"regexp"
	"strings"
	"testing"

	"github.com/cosid-go/store/internal/sqlstore"
	"github.com/cosid-go/store/internal/sqlstore/mysqldialect"
	"github.com/cosid-go/store/internal/testing/mysqltest"
)

// placeholder is a statement's $n, which the MySQL driver sends as ?.
var placeholder = regexp.MustCompile(`\$[0-9]+`)

// Every shared statement, as the MySQL dialect writes it, parses on a real
// MariaDB (a server-side PREPARE, which runs nothing) against the tables:
// a statement added to the shared logic in a syntax MySQL lacks (ON
// CONFLICT, RETURNING, the reserved word key unquoted) fails here, naming
// it, until the dialect replaces it (Dialect.Statements).
func TestMySQLStatementsParse(t *testing.T) {
	srv := mysqltest.Shared(t)
	name := srv.NewDatabase(t)
	d := mysqldialect.New(name)
	stmts, err := sqlstore.Statements(d)
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", srv.DSN(name)) // no interpolation: PREPARE on the server
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := t.Context()
	for n, q := range stmts {
		if strings.HasPrefix(n, "Create[") {
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v\n%s", n, err, q)
			}
			delete(stmts, n)
		}
	}
	for _, tail := range []string{"SlotsTail", "SlotsTailSkip", "SlotsTailRead", "SlotsTailLast"} {
		stmts["SlotsHead+"+tail] = stmts["SlotsHead"] + "$2" + stmts[tail]
		delete(stmts, tail)
	}
	delete(stmts, "SlotsHead")
	delete(stmts, "Upgrade1") // for tables of version 1 only
	for n, q := range stmts {
		st, err := db.PrepareContext(ctx, placeholder.ReplaceAllString(q, "?"))
		if err != nil {
			t.Errorf("%s does not parse on MariaDB: %v\n%s", n, err, q)
			continue
		}
		st.Close()
	}
}
