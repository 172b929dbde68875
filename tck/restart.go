package tck

import (
	"context"
	"slices"

	"github.com/google/go-cmp/cmp"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// Restarter is an optional Harness capability for a persistent driver: a
// harness that implements it lets the TCK check that what a store keeps
// survives a restart of its storage.
type Restarter interface {
	// Restart is called once every store the harness opened is closed. It
	// stops the storage and starts it again as a machine restart would (a
	// server stopped and started on the same data, a database file closed
	// and opened again), and returns once stores can be opened on it.
	Restart(ctx context.Context) error
}

func restartChecks() []check {
	return []check{{"Survives", needNothing, checkRestart}}
}

// checkRestart: ranges, slot histories (fences, floors, live terms, the
// owner index) and lock fences survive closing every store and restarting
// the storage. A driver whose Suite.NotPersistent says why it keeps nothing
// across a restart skips it; any other must give the harness a Restart.
//
// It is a group of its own, so that it runs alone: a harness may restart a
// server that other checks share.
func checkRestart(e *env) {
	if why := e.suite.NotPersistent; why != "" {
		e.t.Skip("the driver is not persistent (Suite.NotPersistent): " + why)
	}
	r, ok := e.h.(Restarter)
	if !ok {
		e.t.Fatalf("the harness %T has no Restart method (tck.Restarter) and Suite.NotPersistent is empty: "+
			"a persistent driver must let the TCK restart its storage; a driver that keeps nothing across a restart must say so", e.h)
	}
	a, b := e.open(), e.open()
	var before restartState
	before.record(e, a, b)
	e.fatalIf(a.Close(), "Close")
	e.fatalIf(b.Close(), "Close")
	e.fatalIf(r.Restart(e.ctx), "Harness.Restart")
	before.verify(e, e.open())
}

// restartState is what a check writes before the restart, to find after it.
type restartState struct {
	ns        store.Namespace
	live      store.Lease // slot 0: held by b's store when it closed
	released  store.Lease // slot 1: released, used = its floor
	slots     []store.SlotInfo
	lockFence int64
}

func (s *restartState) record(e *env, a, b *store.Store) {
	if e.suite.Ranges {
		e.next(a, "restart/key", 10)
		e.next(a, "restart/sealed", 3)
		_, err := a.Ranges().Seal(e.ctx, "restart/sealed")
		e.fatalIf(err, "Seal")
	}
	if e.suite.Slots {
		s.ns = e.namespace("restart", 3)
		s.live = e.acquire(b, s.ns, "b", store.AcquireOptions{TTL: e.longTTL, Preferred: new(0)})
		s.released = e.acquire(a, s.ns, "a", store.AcquireOptions{TTL: e.longTTL, Preferred: new(1)})
		e.fatalIf(a.Slots().ReleaseUsed(e.ctx, s.released, s.released.Floor), "ReleaseUsed")
		if has[driver.SlotSeeder](a) {
			e.fatalIf(a.Slots().Seed(e.ctx, s.ns, 2, 7, 5000), "Seed")
		}
		var err error
		s.slots, err = a.Slots().List(e.ctx, s.ns.Name)
		e.fatalIf(err, "Slots before the restart")
	}
	if e.suite.Locks {
		l := e.lock(a, "restart")
		s.lockFence = l.Fence()
		e.unlock(l)
	}
}

func (s *restartState) verify(e *env, st *store.Store) {
	if e.suite.Ranges {
		e.wantCurrent(st, "restart/key", 10, false)
		e.wantRange(e.next(st, "restart/key", 1), 10, 11, "Next of a key after the restart")
		e.wantCurrent(st, "restart/sealed", 3, true)
		_, err := st.Ranges().Next(e.ctx, "restart/sealed", 1)
		e.wantIs(err, store.ErrSealed, "Next of a sealed key after the restart")
	}
	if e.suite.Slots {
		nss, err := st.Slots().Namespaces(e.ctx)
		e.fatalIf(err, "Namespaces after the restart")
		if !slices.Contains(nss, s.ns) {
			e.t.Errorf("Namespaces after the restart = %+v, want it to hold %+v", nss, s.ns)
		}
		after, err := st.Slots().List(e.ctx, s.ns.Name)
		e.fatalIf(err, "Slots after the restart")
		if diff := cmp.Diff(s.slots, after); diff != "" {
			e.t.Errorf("Slots changed across the restart: -before +after:\n%s", diff)
		}
		// Owner a finds its last slot again (the owner index survived),
		// with the next fence and the floor its release set.
		l := e.acquire(st, s.ns, "a", e.long())
		if l.Slot != 1 || l.Fence != s.released.Fence+1 || l.Floor != s.released.Floor+1 {
			e.t.Errorf("after the restart owner a got slot %d fence %d floor %d, want slot 1 fence %d floor %d",
				l.Slot, l.Fence, l.Floor, s.released.Fence+1, s.released.Floor+1)
		}
		// b's term is still live: b, restarted (another incarnation), gets
		// another slot; slot 1 is a's again, so the one left is 2.
		l = e.acquire(st, s.ns, "b", e.long())
		if l.Slot == 0 {
			e.t.Errorf("after the restart a new incarnation of b took slot 0, whose term (fence %d) is live until %d",
				s.live.Fence, s.live.ExpiresAt)
		}
		if has[driver.SlotSeeder](st) && (l.Slot != 2 || l.Fence != 8 || l.Floor < 5000) {
			e.t.Errorf("after the restart the seeded slot 2 gave slot %d fence %d floor %d, want slot 2 fence 8 floor at least 5000",
				l.Slot, l.Fence, l.Floor)
		}
	}
	if e.suite.Locks {
		l := e.lock(st, "restart")
		if l.Fence() <= s.lockFence {
			e.t.Errorf("lock fence %d after the restart is not above %d from before: fences must never repeat", l.Fence(), s.lockFence)
		}
		e.unlock(l)
	}
}
