package main

import (
	"fmt"
	"path/filepath"
	"testing"
)

// storectl works on a SQLite file (which has no locks): inspect, seal,
// and migrate out of it and back, Next continuing above every value.
func TestSQLite(t *testing.T) {
	dir := t.TempDir()
	file := func(name string) storeSpec {
		return storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(dir, name)}}
	}
	a, b := file("a.db"), file("b.db")
	s := a.open(t)
	next(t, s, "orders", 100)
	next(t, s, "orders", 100)
	l := acquire(t, s, workers, "host-a", 2, 60_000_000_000)
	if err := s.Slots().Release(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	ctl(with(args("inspect"), a.flags())...).want(t, exitOK, "RANGES (1 key)", "namespace workers: limit 8")
	mem := freshMemory(t)
	migrate(a, mem).want(t, exitOK, "key orders: sealed in source at 200; initialised in target at 200")
	migrate(mem, b).want(t, exitOK, "key orders: sealed in source at 200; initialised in target at 200",
		fmt.Sprintf("slot workers/2: seeded fence %d", l.Fence))
	if r := next(t, b.open(t), "orders", 1); r.Start != 200 {
		t.Fatalf("first range in the second file %v, want it to start at 200", r)
	}
	if l2 := acquire(t, b.open(t), workers, "host-b", 2, 60_000_000_000); l2.Fence != l.Fence+1 || l2.Floor < l.Ceiling {
		t.Fatalf("slot 2 in the second file: fence %d floor %d; want fence %d, floor >= %d", l2.Fence, l2.Floor, l.Fence+1, l.Ceiling)
	}
	ctl(with(args("seal", "orders"), b.flags())...).want(t, exitOK, "201")
}
