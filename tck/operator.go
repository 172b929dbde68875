package tck

import (
	"context"
	"errors"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// Snapshotter is an optional Harness capability: what an operator does
// with a backup. Snapshot copies everything the harness's stores keep, and
// the function it returns writes that copy back while stores stay open on
// the storage, unaware, as a restore under running processes does (a
// database restored from last night's dump, a replica promoted without the
// last commits, nodes or keys written back from a copy). Either may return
// an error wrapping store.ErrUnsupported that says why the backend cannot be
// restored so; the checks needing it then skip with that reason.
type Snapshotter interface {
	Snapshot(ctx context.Context) (restore func(context.Context) error, err error)
}

// HandDeleter is an optional Harness capability: an operator deleting one
// record with the backend's own client (a SQL DELETE, a ZooKeeper or etcd
// delete), stores still open and unaware. DeleteRangeKey deletes range
// key's record; DeleteSlot deletes the record of slot slot of namespace ns
// (the namespace's record stays). An error wrapping store.ErrUnsupported
// says why the backend has no such action; the check skips with it.
type HandDeleter interface {
	DeleteRangeKey(ctx context.Context, key string) error
	DeleteSlot(ctx context.Context, ns string, slot int) error
}

// SessionEnder is an optional Harness capability: EndSession ends the
// backend session of d, an open store the harness's NewStore returned, as
// an operator (or the backend) does: revoking its lease, killing its
// connection, expiring its session. The store is not told. An error
// wrapping store.ErrUnsupported says why the driver has no session to end;
// the check skips with it.
type SessionEnder interface {
	EndSession(ctx context.Context, d driver.Store) error
}

func operatorChecks() []check {
	return []check{
		{"RestoreRanges", needRanges, checkRestoreRanges},
		{"RestoreSlots", needSlots, checkRestoreSlots},
		{"RestoreLocks", needLocks, checkRestoreLocks},
		{"DeletedKey", needRanges, checkDeletedKey},
		{"CorruptKey", needRanges, checkCorruptKey},
		{"CorruptSlot", needSlots, checkCorruptSlot},
		{"DeletedSlot", needSlots, checkDeletedSlot},
		{"DeletedNamespace", needSlots, checkDeletedNamespace},
		{"RevokedSession", needLocks, checkRevokedSession},
		{"DeletedLock", needLocks, checkDeletedLock},
	}
}

// snapshot takes a snapshot through the harness's Snapshotter, or skips
// the check saying why it cannot.
func (e *env) snapshot() func(context.Context) error {
	e.t.Helper()
	s := harnessPart[Snapshotter](e, "restores a snapshot under running stores")
	restore, err := s.Snapshot(e.ctx)
	e.operatorUnsupported(err, "take a snapshot")
	e.fatalIf(err, "Harness.Snapshot")
	return restore
}

// restore puts a snapshot back.
func (e *env) restore(restore func(context.Context) error) {
	e.t.Helper()
	err := restore(e.ctx)
	e.operatorUnsupported(err, "restore a snapshot")
	e.fatalIf(err, "restoring the snapshot")
}

// handDeleter returns the harness's HandDeleter, or skips the check.
func (e *env) handDeleter() HandDeleter {
	e.t.Helper()
	return harnessPart[HandDeleter](e, "deletes a record by hand under running stores")
}

// operatorUnsupported skips the check if err says the harness cannot do
// what an operator would.
func (e *env) operatorUnsupported(err error, what string) {
	e.t.Helper()
	if errors.Is(err, store.ErrUnsupported) {
		e.t.Skipf("the harness cannot %s: %v", what, err)
	}
}

// wentBackErr reports whether err is a refusal of state that went back:
// ErrCorrupt or ErrRecreated.
func wentBackErr(err error) bool {
	return errors.Is(err, store.ErrCorrupt) || errors.Is(err, store.ErrRecreated)
}

// checkRestoreRanges: two stores take ranges of a key after a snapshot;
// the snapshot is restored under them; from then on neither hands out a
// value again: each refuses the key (ErrCorrupt or ErrRecreated: it saw
// the key further ahead) or gives values above every one given before.
func checkRestoreRanges(e *env) {
	a, b := e.open(), e.open()
	const key, sealKey = "restore/key", "restore/seal"
	e.next(a, key, 10)
	e.next(a, sealKey, 10)
	restore := e.snapshot()
	given := []store.Range{e.next(a, key, 10), e.next(b, key, 10)}
	sealGiven := e.next(a, sealKey, 10)
	e.restore(restore)
	// A Seal by the store that saw the key further either goes on above
	// what it handed out (the key's values continue from its final next
	// value elsewhere) or is refused and seals nothing (driver.RangeStore.Seal).
	switch next, err := a.Ranges().Seal(e.ctx, sealKey); {
	case wentBackErr(err):
		_, sealed, err := e.open().Ranges().Current(e.ctx, sealKey)
		e.fatalIf(err, "Current(%q) by a store that never read it, after the restore and a refused Seal", sealKey)
		if sealed {
			e.t.Errorf("Seal(%q) after the restore was refused (ErrCorrupt or ErrRecreated) but sealed the key "+
				"(see driver.RangeStore.Seal: a Seal so refused seals nothing)", sealKey)
		}
	case err != nil:
		e.t.Fatalf("Seal(%q) after the restore: %v; want a final next value, ErrCorrupt or ErrRecreated", sealKey, err)
	case next < sealGiven.End:
		e.t.Errorf("Seal(%q) after the restore, by the store that handed out [%d, %d), returned %d: "+
			"the key's values would continue below what it handed out; it must refuse (ErrCorrupt) or seal above", sealKey,
			sealGiven.Start, sealGiven.End, next)
	}
	for round := range 2 {
		for i, st := range []*store.Store{a, b} {
			r, err := st.Ranges().Next(e.ctx, key, 10)
			switch {
			case wentBackErr(err):
				e.t.Logf("round %d: store %d refused the restored key: %v", round, i, err)
				continue
			case err != nil:
				e.t.Fatalf("Next(%q) after the restore: %v; want a range, ErrCorrupt or ErrRecreated", key, err)
			}
			for _, g := range given {
				if r.Start < g.End && g.Start < r.End {
					e.t.Errorf("after a restore store %d handed out [%d, %d), overlapping [%d, %d) given before: "+
						"a store that saw the key further ahead must refuse it (ErrCorrupt) or skip past", i, r.Start, r.End, g.Start, g.End)
				}
			}
			given = append(given, r)
		}
	}
}

// checkRestoreSlots: a store takes a slot's second term after a snapshot
// (the first released before it), renews it, and the snapshot is
// restored, the term still live. The store then neither repeats the
// fence nor the term's timestamps: another owner's Acquire through it is
// refused (ErrCorrupt, ErrRecreated) or gets a higher fence and a floor at
// or above the live term's ceiling; the live term's Renew fails.
func checkRestoreSlots(e *env) {
	a := e.open()
	ns := e.namespace("restore", 1)
	first := e.acquire(a, ns, "a", e.long())
	e.fatalIf(a.Slots().ReleaseUsed(e.ctx, first, first.Floor), "ReleaseUsed")
	restore := e.snapshot()
	live := e.renew(a, e.acquire(a, ns, "a", e.long()))
	e.restore(restore)
	l, err := a.Slots().Acquire(e.ctx, ns, "c", e.long())
	switch {
	case wentBackErr(err) || errors.Is(err, store.ErrExhausted):
		e.t.Logf("Acquire after the restore: %v", err)
	case err != nil:
		e.t.Fatalf("Acquire after the restore: %v; want a lease, ErrCorrupt or ErrRecreated", err)
	case l.Fence <= live.Fence || l.Floor < live.Ceiling:
		e.t.Errorf("after a restore the store that holds slot %d's term (fence %d, ceiling %d) gave owner c fence %d, floor %d: "+
			"a fence and timestamps again; it must refuse (ErrCorrupt) or start above them", live.Slot, live.Fence, live.Ceiling, l.Fence, l.Floor)
	}
	if _, err := a.Slots().Renew(e.ctx, live); err == nil {
		e.t.Errorf("Renew of a term (fence %d) the restored backend does not hold succeeded; want ErrLeaseLost or ErrCorrupt", live.Fence)
	} else if !wentBackErr(err) && !errors.Is(err, store.ErrLeaseLost) {
		e.t.Errorf("Renew of a term (fence %d) the restored backend does not hold: %v; want ErrLeaseLost or ErrCorrupt", live.Fence, err)
	}
}

// checkRestoreLocks: a store locks a name again and again after a
// snapshot; once the snapshot is restored, its next grant has a fence
// above every one before, or it refuses (ErrCorrupt, ErrRecreated).
func checkRestoreLocks(e *env) {
	a := e.open()
	const name = "restore"
	e.unlock(e.lock(a, name))
	restore := e.snapshot()
	var highest int64
	for range 3 {
		l := e.lock(a, name)
		highest = max(highest, l.Fence())
		e.unlock(l)
	}
	e.restore(restore)
	l, err := a.Locks().Lock(e.timeout(e.lockWait), name)
	switch {
	case wentBackErr(err):
		e.t.Logf("Lock after the restore: %v", err)
	case err != nil:
		e.t.Fatalf("Lock(%q) after the restore: %v; want a hold, ErrCorrupt or ErrRecreated", name, err)
	default:
		if l.Fence() <= highest {
			e.t.Errorf("after a restore Lock(%q) got fence %d, not above %d granted before: fences must never repeat", name, l.Fence(), highest)
		}
		e.unlock(l)
	}
}

// checkDeletedKey: an operator deletes a range key by hand; the store that
// used it does not start it again from zero: it refuses (ErrRecreated,
// ErrCorrupt) or goes on above what it handed out.
func checkDeletedKey(e *env) {
	hd := e.handDeleter()
	a := e.open()
	const key = "deleted/key"
	e.next(a, key, 10)
	seen := e.next(a, key, 10).End
	err := hd.DeleteRangeKey(e.ctx, key)
	e.operatorUnsupported(err, "delete a range key by hand")
	e.fatalIf(err, "Harness.DeleteRangeKey(%q)", key)
	r, err := a.Ranges().Next(e.ctx, key, 10)
	switch {
	case wentBackErr(err):
		e.t.Logf("Next after the delete: %v", err)
	case err != nil:
		e.t.Fatalf("Next(%q) after the key was deleted by hand: %v; want a range, ErrRecreated or ErrCorrupt", key, err)
	case r.Start < seen:
		e.t.Errorf("Next(%q) after the key was deleted by hand gave [%d, %d), below %d the store handed out before: "+
			"a key seen once and gone must be refused (ErrRecreated), never started again", key, r.Start, r.End, seen)
	}
}

// checkDeletedSlot: an operator deletes the record of a slot whose term
// is live; another store's Acquire does not start the slot again from
// zero (fence 1, floor 0) under the live term: it is refused (ErrCorrupt)
// or gets a higher fence and a floor at or above the term's ceiling. The
// holder's Renew fails (ErrLeaseLost), recreating nothing.
func checkDeletedSlot(e *env) {
	hd := e.handDeleter()
	a, b := e.open(), e.open()
	ns := e.namespace("deleted", 1)
	live := e.acquire(a, ns, "a", e.long())
	err := hd.DeleteSlot(e.ctx, ns.Name, live.Slot)
	e.operatorUnsupported(err, "delete a slot by hand")
	e.fatalIf(err, "Harness.DeleteSlot(%q, %d)", ns.Name, live.Slot)
	l, err := b.Slots().Acquire(e.ctx, ns, "b", e.long())
	switch {
	case wentBackErr(err) || errors.Is(err, store.ErrExhausted):
		e.t.Logf("Acquire after the delete: %v", err)
	case err != nil:
		e.t.Fatalf("Acquire after a slot was deleted by hand: %v; want a lease, ErrCorrupt or ErrExhausted", err)
	case l.Fence <= live.Fence || l.Floor < live.Ceiling:
		e.t.Errorf("slot %d deleted by hand under a live term (fence %d, ceiling %d): another store got it at fence %d, floor %d: "+
			"two holders may issue the same worker ID and timestamps", live.Slot, live.Fence, live.Ceiling, l.Fence, l.Floor)
	}
	if _, err := a.Slots().Renew(e.ctx, live); err == nil {
		e.t.Errorf("Renew of a term whose slot was deleted by hand succeeded; want ErrLeaseLost")
	} else if !wentBackErr(err) && !errors.Is(err, store.ErrLeaseLost) {
		e.t.Errorf("Renew of a term whose slot was deleted by hand: %v; want ErrLeaseLost", err)
	}
}

// checkRevokedSession: the backend ends a store's session (a revoke, a
// killed connection) while it holds a lock: the holder learns it (Lost
// closes) within the kit's lock wait, its Unlock reports ErrLeaseLost, and
// another store then takes the lock, with a higher fence.
func checkRevokedSession(e *env) {
	se := harnessPart[SessionEnder](e, "ends a store's backend session under its lock")
	a, b := e.open(), e.open()
	const name = "revoked"
	held := e.lock(a, name)
	err := a.Raw(func(d driver.Store) error { return se.EndSession(e.ctx, d) })
	e.operatorUnsupported(err, "end a store's session")
	e.fatalIf(err, "Harness.EndSession")
	select {
	case <-held.Lost():
	case <-e.timeout(e.lockWait).Done():
		e.t.Fatalf("the holder of %q was not told (Lost) within %v that its session was ended", name, e.lockWait)
	}
	e.wantIs(held.Unlock(e.ctx), store.ErrLeaseLost, "Unlock of a hold whose session was ended")
	// A driver may wait out the ended session's timeout before it grants
	// the lock again (PostgreSQL: lockTimeout, 10s by default): a longer
	// bound than a handover's.
	next, err := b.Locks().Lock(e.timeout(3*e.lockWait), name)
	e.fatalIf(err, "Lock(%q) once the holder's session was ended", name)
	if next.Fence() <= held.Fence() {
		e.t.Errorf("the next holder's fence %d is not above %d of the hold whose session was ended", next.Fence(), held.Fence())
	}
	e.unlock(next)
}
