package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cosid-go/store"
)

// TestMigrateTargetUsedMeanwhile: an instance started on the target before
// the migration is done (a new deployment rolled out early) takes a key the
// migration has not reached yet: the target creates it at 0, and the range
// it hands out repeats the source's values. migrate cannot undo that, but
// it must not report the key as carried: it says values repeated and fails.
// The migrate process is stopped (SIGSTOP) after its first key, so the
// instance's Next lands between the plan and the move of the last key.
func TestMigrateTargetUsedMeanwhile(t *testing.T) {
	src, dst := sqlitePair(t)
	// Many keys, so that a loaded machine, where the stop often lands
	// inside a write of the target, still stops migrate before the last.
	const keys = 200
	srcStore, err := store.Open(src.driver, src.options)
	if err != nil {
		t.Fatal(err)
	}
	for i := range keys {
		if err := srcStore.Ranges().Init(t.Context(), fmt.Sprintf("k%d", i), 100); err != nil {
			t.Fatal(err)
		}
	}
	if err := srcStore.Close(); err != nil {
		t.Fatal(err)
	}
	m := startMigrate(t, src, dst, 2*time.Minute, "key k0:")
	// The stop may land inside migrate's write of the next key, with the
	// target's file locked: then the instance's open or Next finds it busy,
	// and the test lets migrate finish that key and stops it after it,
	// until the instance's call lands between two keys (migrate has 199 more).
	last := fmt.Sprintf("k%d", keys-1)
	var r store.Range
	for attempt := 1; ; attempt++ {
		if err := m.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		var err error
		r, err = nextOnce(t, dst, last, 1000)
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "SQLITE_BUSY") || attempt == keys/2 {
			t.Fatalf("the instance on the target (attempt %d): %v", attempt, err)
		}
		t.Logf("the target was busy (attempt %d, migrate stopped inside a write): %v", attempt, err)
		if err := m.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		if !m.scan() {
			t.Fatalf("migrate ended before the instance's call:\n%s%s", m.out.String(), m.stderr.String())
		}
	}
	if err := m.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	err = m.finish()
	if r.Start >= 100 {
		t.Fatalf("the instance on the target got %v for %s: the move of %s came first (the stop was too late)\n%s", r, last, last, m.out.String())
	}
	if err == nil {
		t.Fatalf("migrate reported success after the target handed out %v of %s, below 100 where the source stopped:\nstdout:\n%s\nstderr:\n%s",
			r, last, m.out.String(), m.stderr.String())
	}
	for _, want := range []string{"key " + last + ":", "created in the target during the migration", "repeat"} {
		if !strings.Contains(m.stderr.String(), want) {
			t.Fatalf("migrate's errors lack %q:\nstdout:\n%s\nstderr:\n%s", want, m.out.String(), m.stderr.String())
		}
	}
}

// TestMigrateTargetUsedBefore: the target already hands out a key the
// source never moved (the source has it unsealed, and migrate seals the
// source before it writes the target): an instance used the target's key
// on its own, from 0. Its future values are above the source's, so migrate
// goes on, but it says the values below the source's may have repeated
// instead of passing the key as carried.
func TestMigrateTargetUsedBefore(t *testing.T) {
	dir := t.TempDir()
	src := storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(dir, "src.db")}}
	dst := storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(dir, "dst.db")}}
	next(t, src.open(t), "orders", 100)
	next(t, dst.open(t), "orders", 1000)
	migrate(src, dst).want(t, exitOK, "warning: key orders: the target has it at 1000, though the source never moved it",
		"values below 100 were handed out by both stores", "key orders: sealed in source at 100; already in target, used since: at 1000")
	// A rerun (the source sealed now) has nothing to say about it.
	r := migrate(src, dst)
	r.want(t, exitOK, "key orders: already sealed in source at 100")
	if strings.Contains(r.stderr, "warning") {
		t.Fatalf("the rerun warns:\n%s", r.stderr)
	}
}

// nextOnce opens spec's store with a short busy timeout, takes one range
// of key and closes the store.
func nextOnce(t *testing.T, spec storeSpec, key string, step int64) (store.Range, error) {
	t.Helper()
	opts := maps.Clone(spec.options)
	opts["busyTimeout"] = "2s"
	st, err := store.Open(spec.driver, opts)
	if err != nil {
		return store.Range{}, err
	}
	defer st.Close()
	return st.Ranges().Next(t.Context(), key, step)
}
