package sqlite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The -wal emptied in place (it keeps its identity, and still exists)
// after a crash, or under a running store: a process opening the file is
// refused, where SQLite would take the empty -wal for the whole WAL and
// start below values handed out.
func TestWALEmptied(t *testing.T) {
	if serveChild() {
		return
	}
	t.Run("after a crash", func(t *testing.T) { walEmptied(t, true) })
	t.Run("while running", func(t *testing.T) { walEmptied(t, false) })
}

func walEmptied(t *testing.T, crash bool) {
	path := filepath.Join(t.TempDir(), "ids.db")
	h := &handedOut{t: t}
	p1, _ := spawn(t, path)
	h.mustNext("first process", p1, 5)
	if crash {
		p1.kill()
	}
	if err := os.Truncate(path+"-wal", 0); err != nil {
		t.Fatal(err)
	}
	want := "ids.db-wal is shorter than its index says"
	p2, msg := spawn(t, path)
	if p2 != nil {
		h.mustNext("second process", p2, 5)
		p2.close()
	}
	if p2 != nil || !strings.Contains(msg, want) {
		t.Errorf("opening the file after its -wal was emptied: %q; want it refused, saying %q", msg, want)
	}
}
