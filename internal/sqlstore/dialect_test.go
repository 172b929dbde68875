package sqlstore

import (
	"strconv"
	"strings"
	"testing"
)

// testDialect has every field the shared logic needs, with markers in
// the prefix to show they are never replaced twice.
func testDialect() Dialect {
	return Dialect{
		Name:       "test",
		Prefix:     `"s{now}{forupdate}{p}".`,
		Now:        "NOW()",
		ForUpdate:  " FU",
		FreeSearch: []string{" A", " B"},
		Numbered:   func(n int) string { return "?" + strconv.Itoa(n) },
		HasMeta:    "SELECT TRUE",
	}
}

// A marker inside what the rewrite puts in (a schema name in the prefix)
// is left as it is: the text is replaced in one pass.
func TestRewriteOnePass(t *testing.T) {
	got := testDialect().Rewrite("SELECT {now} FROM {p}t WHERE a = $1{forupdate}")
	if want := `SELECT NOW() FROM "s{now}{forupdate}{p}".t WHERE a = ?1 FU`; got != want {
		t.Errorf("Rewrite = %s, want %s", got, want)
	}
}

// $n becomes the dialect's placeholder, whatever its width; a $ not
// followed by a digit stays.
func TestRewriteNumbered(t *testing.T) {
	d := testDialect()
	for q, want := range map[string]string{
		"$1, $2, $12, $100": "?1, ?2, ?12, ?100",
		"a$1b":              "a?1b",
		"$ $a $":            "$ $a $",
		"'$x' $3$4":         "'$x' ?3?4",
	} {
		if got := d.Rewrite(q); got != want {
			t.Errorf("Rewrite(%q) = %q, want %q", q, got, want)
		}
	}
	d.Numbered = nil
	if got := d.Rewrite("$1, $12"); got != "$1, $12" {
		t.Errorf("without Numbered, Rewrite changed $n: %q", got)
	}
	if got := d.Placeholder(7); got != "$7" {
		t.Errorf("Placeholder(7) without Numbered = %q", got)
	}
}

// Every shared statement is set, and the free-slot search has one
// statement per pass of the dialect, each with its ending.
func TestStatementsComplete(t *testing.T) {
	d := testDialect()
	st, err := newStatements(d)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.SlotFree) != 2 || !strings.HasSuffix(st.SlotFree[0], "LIMIT 1 A") || !strings.HasSuffix(st.SlotFree[1], "LIMIT 1 B") {
		t.Errorf("SlotFree = %q, want one statement per FreeSearch ending", st.SlotFree)
	}
	if !strings.Contains(st.SlotFree[0], `FROM "s{now}{forupdate}{p}".cosid_slot`) {
		t.Errorf("SlotFree[0] rewritten: %s", st.SlotFree[0])
	}
	if strings.Contains(st.Next, "$") {
		t.Errorf("Next kept a $n placeholder: %s", st.Next)
	}
}

// Prepare refuses a statement left empty, a marker it does not know (a
// typo would otherwise reach the database as SQL), a field that is not a
// statement, and anything but a pointer to a struct.
func TestPrepareRefuses(t *testing.T) {
	d := testDialect()
	type stmts struct {
		A, Empty, Typo string
		List           []string
		None           []string
	}
	st := &stmts{A: "SELECT 1 FROM {p}t", Empty: " ", Typo: "SELECT {nwo}", List: []string{"SELECT 2", ""}}
	err := d.Prepare(st)
	if err == nil {
		t.Fatal("Prepare accepted an empty statement")
	}
	for _, want := range []string{"stmts.Empty is empty", "stmts.Typo has the unknown marker {nwo}", "stmts.List[1] is empty", "stmts.None is empty"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Prepare error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "stmts.A ") {
		t.Errorf("Prepare error names a good statement: %v", err)
	}
	type bad struct{ N int }
	if err := d.Prepare(&bad{}); err == nil || !strings.Contains(err.Error(), "bad.N is a int, not a statement") {
		t.Errorf("Prepare of a non-statement field: %v", err)
	}
	if err := d.Prepare(stmts{}); err == nil {
		t.Error("Prepare accepted a struct that is not a pointer")
	}
}

// A dialect without what the shared logic needs is refused at open.
func TestDialectCheck(t *testing.T) {
	d := testDialect()
	d.FreeSearch, d.Now = nil, ""
	if _, err := newStore(nil, d); err == nil || !strings.Contains(err.Error(), "has no Now, FreeSearch") {
		t.Errorf("newStore with a dialect lacking Now and FreeSearch: %v", err)
	}
}

// A dialect replaces shared statements by name, a list's element by its
// index; a name that is no statement fails, naming it.
func TestStatementsReplaced(t *testing.T) {
	d := testDialect()
	d.Statements = map[string]string{"Next": "NEXT {p}x $1", "Create[1]": "CREATE r"}
	st, err := newStatements(d)
	if err != nil {
		t.Fatal(err)
	}
	if want := d.Rewrite("NEXT {p}x $1"); st.Next != want || st.Create[1] != "CREATE r" {
		t.Errorf("Next = %q, Create[1] = %q; want %q, CREATE r", st.Next, st.Create[1], want)
	}
	for _, bad := range []string{"Nxt", "Create[99]", "Create[x]", "Next[0]"} {
		d.Statements = map[string]string{bad: "X"}
		if _, err := newStatements(d); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("replacing %q: %v; want an error naming it", bad, err)
		}
	}
}
