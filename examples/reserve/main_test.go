package main

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/cosid-go/store"
)

// Run twice on one SQLite file, the example continues above every value of
// the first run (on a fresh memory store it would start again at 0).
func TestSecondRunContinues(t *testing.T) {
	opts := map[string]string{"path": filepath.Join(t.TempDir(), "reserve.db")}
	ns := store.Namespace{Name: "workers", Limit: 8, Tolerance: time.Second}
	current := func() int64 {
		st, err := store.Open("sqlite", opts)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		next, _, err := st.Ranges().Current(context.Background(), "orders")
		if err != nil {
			t.Fatal(err)
		}
		return next
	}
	if err := reserve("sqlite", opts, "orders", 100, 2, 2, ns, "host"); err != nil {
		t.Fatal(err)
	}
	first := current()
	if err := reserve("sqlite", opts, "orders", 100, 2, 2, ns, "host"); err != nil {
		t.Fatal(err)
	}
	if second := current(); second < 2*first || first == 0 {
		t.Fatalf("after two runs the key is at %d, after one at %d: the second run did not continue above the first", second, first)
	}
}
