//go:build holes

// Open holes, for the lead: these tests fail and are kept out of the
// default build until the design decision they need is made. Run them
// with: go test -tags holes -run 'TestMigrateLeavesSource' ./cmd/storectl/

package main

import (
	"testing"

	"github.com/cosid-go/store/internal/zktest"
)

// TestMigrateLeavesSourceLocksOpen: locks are not moved and the source's
// lock names are not closed, so after a migration an instance left on the
// source and one on the target both hold one lock name. (Across backends
// the target's fences may also be below the source's: a PostgreSQL target
// counts from 1, so a resource that keeps the highest fence it saw refuses
// the target's holder and accepts a stale one.) Wanted: the source refuses locks once migrated out of (a seal of
// its lock names), and the target's lock fences start above the source's
// (migrate carrying a lock fence floor, as purge keeps one for slots).
func TestMigrateLeavesSourceLocksOpen(t *testing.T) {
	addr := servers.addr(t, zktest.Versions()[0])
	src, dst := zkSpec(t, addr, nil), zkSpec(t, addr, nil)
	ctx := t.Context()
	for range 3 { // fences grow in the source
		l, err := src.open(t).Locks().Lock(ctx, "jobs")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	next(t, src.open(t), "orders", 100)
	created(t, dst)
	exe(t, "migrate", "--from", src.spec(), "--to", dst.spec()).want(t, exitOK, "key orders: sealed in source at 100")
	a, err := src.open(t).Locks().Lock(ctx, "jobs")
	if err != nil {
		t.Logf("the source refuses the lock after the migration: %v", err)
		return
	}
	b, err := dst.open(t).Locks().TryLock(ctx, "jobs")
	if err != nil {
		t.Fatalf("the target refuses the lock: %v", err)
	}
	t.Fatalf("two holders of lock jobs after the migration: the source's (fence %d) and the target's (fence %d)", a.Fence(), b.Fence())
}
