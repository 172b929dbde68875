//go:build holes

// Open holes, for the lead: these tests fail and are kept out of the
// default build until the design decision they need is made. Run them
// with: go test -tags holes -run 'TestMigrateLeavesSource' ./cmd/storectl/

package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/zktest"
)

// TestMigrateLeavesSourceSlotsOpen: migrate seals every range key in the
// source, so an instance still running on the source gets ErrSealed; slot
// namespaces have no seal, so such an instance acquires a slot in the
// source after the migration, and an instance on the target acquires the
// same slot with the same fence and floor: two live leases of one worker
// ID. Wanted: the source refuses new terms of a carried namespace (a
// namespace seal in the API, which migrate sets).
func TestMigrateLeavesSourceSlotsOpen(t *testing.T) {
	dir := t.TempDir()
	src := storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(dir, "src.db")}}
	dst := storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(dir, "dst.db")}}
	ctx := t.Context()
	old := src.open(t)
	l := acquire(t, old, workers, "host-a", 0, time.Minute)
	if err := old.Slots().Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	next(t, old, "orders", 100)
	exe(t, "migrate", "--from", src.spec(), "--to", dst.spec()).want(t, exitOK, "slot workers/0: seeded fence 1")
	if _, err := src.open(t).Ranges().Next(ctx, "orders", 1); err == nil {
		t.Fatal("the source hands out orders after the migration")
	}
	a, err := src.open(t).Slots().Acquire(ctx, workers, "host-a", store.AcquireOptions{TTL: time.Minute})
	if err != nil {
		t.Logf("the source refuses a new term after the migration: %v", err)
		return
	}
	b := acquire(t, dst.open(t), workers, "host-b", 0, time.Minute)
	if a.Slot == b.Slot && a.Floor < b.Ceiling && b.Floor < a.Ceiling {
		t.Fatalf("two live leases of slot %s/%d: the source's (fence %d, [%d, %d)) and the target's (fence %d, [%d, %d))",
			workers.Name, a.Slot, a.Fence, a.Floor, a.Ceiling, b.Fence, b.Floor, b.Ceiling)
	}
}

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
