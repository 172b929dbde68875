package tck

import (
	"context"

	"github.com/cosid-go/store"
)

// LockDeleter is an optional Harness capability: an operator deleting a
// held lock's record by hand (its etcd key, its ZooKeeper node, its row)
// with the backend's own client, the holder's session left alive and the
// store not told. DeleteLockHolder deletes the record of name's holder.
// An error wrapping store.ErrUnsupported says why the backend has no such
// action; the check skips with it.
type LockDeleter interface {
	DeleteLockHolder(ctx context.Context, name string) error
}

// checkDeletedLock: an operator deletes a held lock's record; the next
// waiter may be granted the lock at once, so the holder can no longer be
// sure it holds it: its Lost closes (driver.Lock.Lost), its Unlock gives
// ErrLeaseLost, and another store then takes the lock with a higher fence.
func checkDeletedLock(e *env) {
	ld := harnessPart[LockDeleter](e, "deletes a held lock's record by hand under running stores")
	a, b := e.open(), e.open()
	const name = "deleted"
	held := e.lock(a, name)
	err := ld.DeleteLockHolder(e.ctx, name)
	e.operatorUnsupported(err, "delete a lock's record by hand")
	e.fatalIf(err, "Harness.DeleteLockHolder(%q)", name)
	select {
	case <-held.Lost():
	case <-e.timeout(e.lockWait).Done():
		e.t.Fatalf("the holder of %q was not told (Lost) within %v that its lock's record was deleted: "+
			"another store may be granted the lock meanwhile", name, e.lockWait)
	}
	e.wantIs(held.Unlock(e.ctx), store.ErrLeaseLost, "Unlock of a hold whose record was deleted by hand")
	next, err := b.Locks().Lock(e.timeout(3*e.lockWait), name)
	e.fatalIf(err, "Lock(%q) once the holder's record was deleted", name)
	if next.Fence() <= held.Fence() {
		e.t.Errorf("the next holder's fence %d is not above %d of the hold whose record was deleted", next.Fence(), held.Fence())
	}
	e.unlock(next)
}
