package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestRestoreInterrupted: restore of a marked SQLite backup copy in place
// (3,000 keys), SIGINT after key k000100: the key in hand is finished,
// restore says how many of how many keys it raised and the command to run
// next, exits 4, and the copy stays marked (it hands out nothing); the
// advice, followed as printed, raises the rest and clears the mark. The
// signal lands mid-restore as in TestMigrateInterrupted: the test stops
// reading, and restore blocks on its full output pipe.
func TestRestoreInterrupted(t *testing.T) {
	const keys = 3000
	backup := filepath.Join(t.TempDir(), "nightly.db")
	exe(t, "backup", populatedSQLite(t, keys), backup).want(t, exitOK, "backed up ")
	flags := storeSpec{driver: "sqlite", options: map[string]string{"path": backup}}.flags()

	raised, stderr := interruptAt(t, with(args("restore", "--raise", "1000", "--no-moves"), flags), "key k000100:", "key ")
	m := regexp.MustCompile(`stopped after raising (\d+) of 3000 keys`).FindStringSubmatch(stderr)
	if m == nil || m[1] != strconv.Itoa(raised) || raised >= keys {
		t.Fatalf("restore printed %d keys raised; its message:\n%s", raised, stderr)
	}
	r := exe(t, with(args("inspect"), flags)...)
	r.want(t, exitOK, "hands out nothing until storectl restore raises it")
	wantRow(t, r.stdout, fmt.Sprintf("k%06d", raised-1), 10*raised+1000) // the last raised
	wantRow(t, r.stdout, fmt.Sprintf("k%06d", raised), 10*(raised+1))    // the first not raised

	i := strings.Index(stderr, "\n  storectl restore ")
	if i < 0 {
		t.Fatalf("no command to run next:\n%s", stderr)
	}
	line, _, _ := strings.Cut(stderr[i+3:], "\n")
	exe(t, strings.Fields(line)[1:]...).want(t, exitOK, "backup mark cleared", "k002999: raised from 30000 to 31000")
	// Raised twice at most: never below what the original may have
	// handed out, and the copy is live again.
	r = exe(t, with(args("inspect"), flags)...)
	wantRow(t, r.stdout, "k000000", 2010)
	wantRow(t, r.stdout, "k002999", 31000)
	if strings.Contains(r.stdout, "hands out nothing") {
		t.Fatalf("the copy is still marked after the rerun:\n%s", r.stdout)
	}
}

// wantRow fails unless inspect's output lists key at next, not sealed.
func wantRow(t *testing.T, out, key string, next int) {
	t.Helper()
	if !regexp.MustCompile(`(?m)^\s*` + key + `\s+` + strconv.Itoa(next) + `\s+no$`).MatchString(out) {
		t.Fatalf("inspect does not list %s at %d:\n%s", key, next, out)
	}
}
