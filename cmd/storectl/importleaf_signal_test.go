package main

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cosid-go/store/internal/testing/mysqltest"
)

// TestImportLeafInterrupted: import-leaf of 3,000 biz_tags, SIGINT after
// the 100th: exit code 4, the biz_tags printed are the keys imported and
// no other key exists, the message says how many of how many, and its
// command, run as printed, imports the rest. The signal lands mid-import
// as in TestSealInterrupted: the test stops reading, and import-leaf
// blocks on its full output pipe.
func TestImportLeafInterrupted(t *testing.T) {
	const tags = 3000
	srv := mysqltest.Shared(t)
	dsn := srv.DSN(srv.NewDatabase(t))
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows []string
	for i := range tags {
		rows = append(rows, fmt.Sprintf("('k%06d', %d, 1000)", i, 10*(i+1)))
	}
	for _, q := range []string{
		"CREATE TABLE leaf_alloc (biz_tag varchar(128) NOT NULL, max_id bigint NOT NULL DEFAULT 1, step int NOT NULL, PRIMARY KEY (biz_tag))",
		"INSERT INTO leaf_alloc (biz_tag, max_id, step) VALUES " + strings.Join(rows, ","),
	} {
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	dst := storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(t.TempDir(), "ids.db")}}
	printed, stderr := interruptAt(t, with(args("import-leaf", "--leaf", dsn, "--leaf-stopped"), dst.flags()), "k000100:", "k")
	if want := fmt.Sprintf("stopped after %d of %d biz_tags", printed, tags); !strings.Contains(stderr, want) || printed >= tags {
		t.Fatalf("import-leaf's message lacks %q:\n%s", want, stderr)
	}
	if got := len(keysOf(t, dst.open(t))); got != printed {
		t.Fatalf("%d keys in the store after the interrupted import; %d biz_tags were printed", got, printed)
	}
	i := strings.Index(stderr, "\n  storectl import-leaf ")
	if i < 0 {
		t.Fatalf("no command to run next:\n%s", stderr)
	}
	// As an operator pastes it into a shell: the DSN is quoted.
	line, _, _ := strings.Cut(stderr[i+3:], "\n")
	newOperator(t).run(line).want(t, exitOK,
		"k000000: already at 10", "k002999: initialised at 30000", "3000 biz_tags read from leaf_alloc, 0 refused")
	if got := len(keysOf(t, dst.open(t))); got != tags {
		t.Fatalf("%d keys after the rerun, want %d", got, tags)
	}
}
