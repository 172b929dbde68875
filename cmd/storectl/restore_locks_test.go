package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/pgtest"
)

// pgTool finds a PostgreSQL client program (pg_dump, pg_restore) where
// pgtest finds the server's.
func pgTool(t *testing.T, name string) string {
	t.Helper()
	dirs := []string{os.Getenv("COSID_PG_BIN")}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(found) - 1; i >= 0; i-- {
		dirs = append(dirs, found[i])
	}
	for _, d := range dirs {
		if p := filepath.Join(d, name); d != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	t.Fatalf("%s not found (COSID_PG_BIN, /usr/lib/postgresql/*/bin): run scripts/install-postgres.sh", name)
	return ""
}

// TestRestoreRaisesLockFences: a PostgreSQL store put back with pg_dump and
// pg_restore, then storectl restore as documented. The backup's lock ticket
// sequence is behind the fences handed out after it; restore must raise
// them as it raises keys and slot fences, or the next holders get fences
// that earlier holders had (a resource that keeps the highest fence seen
// would take a stale holder's writes as current).
func TestRestoreRaisesLockFences(t *testing.T) {
	srv := pgtest.Shared(t)
	spec := storeSpec{driver: "postgres", options: map[string]string{
		"connString": srv.ConnString(), "schema": "restore_locks", "poolSize": "2"}}
	ctx := t.Context()
	seen := map[int64]int{}
	lockThrice := func() {
		t.Helper()
		st := spec.open(t)
		for range 3 {
			l, err := st.Locks().Lock(ctx, "jobs")
			if err != nil {
				t.Fatal(err)
			}
			seen[l.Fence()]++
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
		st.Close()
	}
	lockThrice()
	dump := filepath.Join(t.TempDir(), "ids.dump")
	pg := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.CommandContext(ctx, pgTool(t, name), args...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
	}
	pg("pg_dump", "-d", srv.ConnString(), "-n", "restore_locks", "-Fc", "-f", dump)
	lockThrice() // after the backup: lost with the database
	pg("psql", "-d", srv.ConnString(), "-q", "-c", "DROP SCHEMA restore_locks CASCADE")
	pg("pg_restore", "-d", srv.ConnString(), dump)
	exe(t, with(args("restore", "--raise", "1000", "--no-moves"), spec.flags())...).want(t, exitOK, "the store may be used again")
	lockThrice()
	twice := 0
	for _, n := range seen {
		twice += n - 1
	}
	if twice > 0 {
		t.Fatalf("%d of 9 lock fences handed out twice across the restore: %v", twice, seen)
	}
}

// TestRestoreLockHeldInBackup: a PostgreSQL backup taken while a lock was
// held (a leader's lock is held all the time) carries the hold. After
// pg_restore, with every instance stopped, restore refused for good ("stop
// every instance first"), so an operator could only start an instance on
// the store not yet raised. Now the refusal says to run again with --force
// once every instance is stopped, and that run raises the store.
func TestRestoreLockHeldInBackup(t *testing.T) {
	srv := pgtest.Shared(t)
	spec := storeSpec{driver: "postgres", options: map[string]string{
		"connString": srv.ConnString(), "schema": "restore_held", "poolSize": "2"}}
	ctx := t.Context()
	pg := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.CommandContext(ctx, pgTool(t, name), args...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
	}
	st := spec.open(t)
	next(t, st, "orders", 30)
	l, err := st.Locks().Lock(ctx, "leader")
	if err != nil {
		t.Fatal(err)
	}
	held := l.Fence()
	dump := filepath.Join(t.TempDir(), "ids.dump")
	pg("pg_dump", "-d", srv.ConnString(), "-n", "restore_held", "-Fc", "-f", dump)
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	st.Close() // every instance stopped
	pg("psql", "-d", srv.ConnString(), "-q", "-c", "DROP SCHEMA restore_held CASCADE")
	pg("pg_restore", "-d", srv.ConnString(), dump)

	restore := with(args("restore", "--raise", "1000", "--no-moves"), spec.flags())
	exe(t, restore...).want(t, exitRefused, "lock leader held by ", "run the same command again with --force")
	exe(t, with(restore, args("--force"))...).want(t, exitOK, "key orders: raised from 30 to 1030", "locks: fences raised")
	if r := next(t, spec.open(t), "orders", 1); r.Start != 1030 {
		t.Fatalf("orders after the restore: %v, want from 1030", r)
	}
	// The hold from the backup is taken over in time; the fence is above
	// every fence the store handed out before.
	lctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	l2, err := spec.open(t).Locks().Lock(lctx, "leader")
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Unlock(ctx)
	if l2.Fence() <= held+1000 {
		t.Fatalf("fence %d after the restore, want above %d (the held fence %d raised by 1000)", l2.Fence(), held+1000, held)
	}
}
