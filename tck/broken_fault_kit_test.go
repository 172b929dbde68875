package tck_test

// Broken variants over the memory driver's state (see
// broken_fault_test.go) for a slot's history, a restart, seeds, purges
// and the namespace listing: bugs the kit once accepted.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/memfault"
	"github.com/cosid-go/store/tck"
)

func init() {
	variants = append(variants,
		faulty("seed-lowers", "History/SeedNeverLowers",
			func(d memDriver, _ *shared) driver.Store { return seedLowers{d} }, probeSeedLowers),
		faulty("seed-floor-ignored", "History/SeedAfterExpiry",
			func(d memDriver, _ *shared) driver.Store { return seedFloorIgnored{d} }, probeSeedFloorIgnored),
		faulty("purge-forgets-fences", "History/PurgeKeepsSlotFences",
			func(d memDriver, _ *shared) driver.Store { return purgeForgetsFences{d} }, probePurgeFences),
		faulty("takeover-keeps-last-owner", "History/Listed",
			func(d memDriver, _ *shared) driver.Store { return takeoverKeepsLastOwner{d} }, probeTakeoverLastOwner),
		faulty("namespaces-by-creation", "Slots/Listing",
			func(d memDriver, sh *shared) driver.Store {
				return namespacesByCreation{d, sharedOf[creationOrder](sh)}
			}, nil),
		faulty("purge-forgets-seals", "Purge/Seals",
			func(d memDriver, _ *shared) driver.Store { return purgeForgetsSeals{d} }, nil),
		faulty("purge-forgets-floors", "Purge/FloorAhead",
			func(d memDriver, _ *shared) driver.Store { return purgeForgetsFloors{d} }, nil),
		faulty("seed-live", "Slots/Seed",
			func(d memDriver, _ *shared) driver.Store { return seedLive{d} }, nil),
		faulty("seed-any-settings", "Slots/Seed",
			func(d memDriver, _ *shared) driver.Store { return seedAnySettings{d} }, nil),
		variant{name: "forgets-on-restart", checks: []string{"Restart/Survives"}, broken: true,
			suite: func(t *testing.T) tck.Suite {
				// Claims persistence; its storage starts empty after a restart.
				s := faultSuite(func(d memDriver, _ *shared) driver.Store { return d })(t)
				s.NotPersistent = ""
				newHarness := s.NewHarness
				s.NewHarness = func(ctx context.Context, t *testing.T) (tck.Harness, error) {
					h, err := newHarness(ctx, t)
					return forgetfulHarness{h.(*faultHarness)}, err
				}
				return s
			}},
	)
}

// seedLowers sets a seeded slot's fence and next floor as given, lowering
// them, where the sound driver only raises them.
type seedLowers struct{ memDriver }

func (s seedLowers) SeedSlot(ctx context.Context, want driver.Namespace, n int, fence, nextFloor int64) error {
	if err := s.memDriver.SeedSlot(ctx, want, n, fence, nextFloor); err != nil {
		return err
	}
	return memfault.Edit(ctx, s.memDriver, func(st memfault.State) error {
		ns, _ := st.Space(want.Name)
		r := ns.Slot(n)
		r.Fence, r.NextFloor = fence, nextFloor
		ns.SetSlot(n, r)
		return nil
	})
}

// seedFloorIgnored leaves an expired term in place when seeding (raising
// only its next floor), and starts the term that takes it over at the old
// ceiling, ignoring the next floor.
type seedFloorIgnored struct{ memDriver }

func (s seedFloorIgnored) SeedSlot(ctx context.Context, want driver.Namespace, n int, fence, nextFloor int64) error {
	done := false
	if err := memfault.Edit(ctx, s.memDriver, func(st memfault.State) error {
		if ns, ok := st.Space(want.Name); ok {
			if r := ns.Slot(n); r.Owner != "" && !r.Live(st.Now()) {
				r.Fence, r.NextFloor = max(r.Fence, fence), max(r.NextFloor, nextFloor)
				ns.SetSlot(n, r)
				done = true
			}
		}
		return nil
	}); err != nil || done {
		return err
	}
	return s.memDriver.SeedSlot(ctx, want, n, fence, nextFloor)
}

func (s seedFloorIgnored) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	before, err := slotsOf(ctx, s.memDriver, req.Namespace.Name)
	if err != nil {
		return driver.Lease{}, err
	}
	l, err := s.memDriver.Acquire(ctx, req)
	if err != nil {
		return l, err
	}
	old, ok := before[l.Slot]
	if !ok || old.Owner == "" || old.Fence+1 != l.Fence {
		return l, nil
	}
	err = memfault.Edit(ctx, s.memDriver, func(st memfault.State) error {
		ns, _ := st.Space(req.Namespace.Name)
		r := ns.Slot(l.Slot)
		r.Floor, r.CeilingMin, r.NextFloor = old.Ceiling(), old.Ceiling(), old.Ceiling()
		ns.SetSlot(l.Slot, r)
		l = r.Lease(l.Namespace, l.Slot)
		return nil
	})
	return l, err
}

// slotsOf is a copy of the used slots of namespace name (none if missing).
func slotsOf(ctx context.Context, d memDriver, name string) (map[int]driver.SlotRecord, error) {
	var slots map[int]driver.SlotRecord
	err := memfault.Edit(ctx, d, func(st memfault.State) error {
		if ns, ok := st.Space(name); ok {
			slots = ns.Slots()
		}
		return nil
	})
	return slots, err
}

// takeoverKeepsLastOwner leaves LastOwner as it was when a term is taken
// over, so a tool never learns whose term ended.
type takeoverKeepsLastOwner struct{ memDriver }

func (s takeoverKeepsLastOwner) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	before, err := slotsOf(ctx, s.memDriver, req.Namespace.Name)
	if err != nil {
		return driver.Lease{}, err
	}
	l, err := s.memDriver.Acquire(ctx, req)
	if old, ok := before[l.Slot]; err == nil && ok && old.Fence+1 == l.Fence {
		err = memfault.Edit(ctx, s.memDriver, func(st memfault.State) error {
			ns, _ := st.Space(req.Namespace.Name)
			r := ns.Slot(l.Slot)
			r.LastOwner = old.LastOwner
			ns.SetSlot(l.Slot, r)
			return nil
		})
	}
	return l, err
}

// purgeForgetsFences purges slot fences with everything else, so that a
// slot's fences start again at 1.
type purgeForgetsFences struct{ memDriver }

func (s purgeForgetsFences) Purge(ctx context.Context) ([]string, error) {
	deleted, err := s.memDriver.Purge(ctx)
	if err != nil {
		return deleted, err
	}
	return deleted, memfault.Edit(ctx, s.memDriver, func(st memfault.State) error {
		st.SetSlotFenceFloor(0)
		return nil
	})
}

// forgetfulHarness restarts its storage empty: a driver that says it is
// persistent and keeps nothing.
type forgetfulHarness struct{ *faultHarness }

func (h forgetfulHarness) Restart(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.name = freshName("tck-forgotten")
	return nil
}

// namespacesByCreation lists namespaces in the order they were created.
type namespacesByCreation struct {
	memDriver
	order *creationOrder
}

// creationOrder is namespacesByCreation's record of one state.
type creationOrder struct {
	mu    sync.Mutex
	names []string
}

func (o *creationOrder) saw(name string) {
	if !slices.Contains(o.names, name) {
		o.names = append(o.names, name)
	}
}

func (s namespacesByCreation) Namespaces(ctx context.Context) ([]driver.Namespace, error) {
	out, err := s.memDriver.Namespaces(ctx)
	s.order.mu.Lock()
	defer s.order.mu.Unlock()
	for _, ns := range out {
		s.order.saw(ns.Name)
	}
	slices.SortStableFunc(out, func(a, b driver.Namespace) int {
		return cmp.Compare(slices.Index(s.order.names, a.Name), slices.Index(s.order.names, b.Name))
	})
	return out, err
}

func (s namespacesByCreation) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	s.order.mu.Lock()
	s.order.saw(req.Namespace.Name)
	s.order.mu.Unlock()
	return s.memDriver.Acquire(ctx, req)
}

// purgeForgetsSeals unseals every key and namespace, then purges: the
// contract before purges kept seals, under which an instance still pointed
// at the store handed out the values of a key that had moved away.
type purgeForgetsSeals struct{ memDriver }

func (s purgeForgetsSeals) Purge(ctx context.Context) ([]string, error) {
	if err := memfault.Edit(ctx, s.memDriver, func(st memfault.State) error {
		for _, key := range st.Ranges() {
			st.SetRangeSealed(key, false)
		}
		for _, name := range st.Spaces() {
			ns, _ := st.Space(name)
			ns.SetSealed(false)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return s.memDriver.Purge(ctx)
}

// purgeForgetsFloors lowers every released slot's next floor to the clock
// before it purges: a term released without its last used timestamp no
// longer holds the purge off until its ceiling.
type purgeForgetsFloors struct{ memDriver }

func (s purgeForgetsFloors) Purge(ctx context.Context) ([]string, error) {
	if err := memfault.Edit(ctx, s.memDriver, func(st memfault.State) error {
		now := st.Now()
		for _, name := range st.Spaces() {
			ns, _ := st.Space(name)
			for n, r := range ns.Slots() {
				if r.Owner == "" && r.NextFloor > now {
					r.NextFloor = now
					ns.SetSlot(n, r)
				}
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return s.memDriver.Purge(ctx)
}

// seedLive seeds a slot with a live term, raising its fence and next floor
// under the holder.
type seedLive struct{ memDriver }

func (s seedLive) SeedSlot(ctx context.Context, want driver.Namespace, n int, fence, nextFloor int64) error {
	err := s.memDriver.SeedSlot(ctx, want, n, fence, nextFloor)
	if !errors.Is(err, driver.ErrLocked) {
		return err
	}
	return memfault.Edit(ctx, s.memDriver, func(st memfault.State) error {
		ns, _ := st.Space(want.Name)
		r := ns.Slot(n)
		r.Fence, r.NextFloor = max(r.Fence, fence), max(r.NextFloor, nextFloor)
		ns.SetSlot(n, r)
		return nil
	})
}

// seedAnySettings seeds into an existing namespace whatever settings the
// call names.
type seedAnySettings struct{ memDriver }

func (s seedAnySettings) SeedSlot(ctx context.Context, want driver.Namespace, n int, fence, nextFloor int64) error {
	if err := memfault.Edit(ctx, s.memDriver, func(st memfault.State) error {
		if ns, ok := st.Space(want.Name); ok {
			want.Limit, want.Tolerance = ns.Limit(), ns.Tolerance()
		}
		return nil
	}); err != nil {
		return err
	}
	return s.memDriver.SeedSlot(ctx, want, n, fence, nextFloor)
}

// Probes (see checkProbe).

var kitNS = driver.Namespace{Name: "kit", Limit: 1, Tolerance: 50 * time.Millisecond}

func kitReq(owner string) driver.AcquireRequest {
	return driver.AcquireRequest{Namespace: kitNS, Owner: owner, Incarnation: "1", TTL: 100 * time.Millisecond}
}

func kitListed(ctx context.Context, s driver.SlotLeaseStore) (driver.SlotInfo, error) {
	infos, err := s.Slots(ctx, kitNS.Name)
	if err == nil && len(infos) != 1 {
		err = fmt.Errorf("Slots = %v; want one slot", infos)
	}
	if err != nil {
		return driver.SlotInfo{}, err
	}
	return infos[0], nil
}

// probeSeedLowers: the fence after seeds of fence 10, then 3.
func probeSeedLowers(ctx context.Context, tg target) (string, error) {
	d, _ := tg.open()
	defer d.Close()
	for _, f := range []int64{10, 3} {
		if err := d.(driver.SlotSeeder).SeedSlot(ctx, kitNS, 0, f, 5000); err != nil {
			return "", err
		}
	}
	in, err := kitListed(ctx, d.(driver.SlotLeaseStore))
	return fmt.Sprintf("fence %d after seeds 10 then 3", in.Fence), err
}

// kitExpiredTerm opens tg with its clock at 1000 ms, lets a acquire the
// slot (its term expires at 1100, its ceiling 1150) and moves the clock to
// 2000, past both. The caller closes d.
func kitExpiredTerm(ctx context.Context, tg target) (driver.Store, driver.SlotLeaseStore, error) {
	d, base := tg.open()
	var now atomicMillis
	now.Store(1000)
	if err := setClock(ctx, base, now.Load); err != nil {
		d.Close()
		return nil, nil, err
	}
	s := d.(driver.SlotLeaseStore)
	if _, err := s.Acquire(ctx, kitReq("a")); err != nil {
		d.Close()
		return nil, nil, err
	}
	now.Store(2000)
	return d, s, nil
}

// probeSeedFloorIgnored: the floor of the term after a seed of a high next
// floor over an expired term.
func probeSeedFloorIgnored(ctx context.Context, tg target) (string, error) {
	d, s, err := kitExpiredTerm(ctx, tg)
	if err != nil {
		return "", err
	}
	defer d.Close()
	if err := d.(driver.SlotSeeder).SeedSlot(ctx, kitNS, 0, 0, 1_000_000_000); err != nil {
		return "", err
	}
	l, err := s.Acquire(ctx, kitReq("b"))
	return fmt.Sprintf("floor %d after a seed of next floor 1e9 over an expired term", l.Floor), err
}

// probeTakeoverLastOwner: LastOwner after b took over a's expired term.
func probeTakeoverLastOwner(ctx context.Context, tg target) (string, error) {
	d, s, err := kitExpiredTerm(ctx, tg)
	if err != nil {
		return "", err
	}
	defer d.Close()
	if _, err := s.Acquire(ctx, kitReq("b")); err != nil {
		return "", err
	}
	in, err := kitListed(ctx, s)
	return fmt.Sprintf("last owner %q", in.LastOwner), err
}

// probePurgeFences: the fence of the first term after a purge of fence 1.
func probePurgeFences(ctx context.Context, tg target) (string, error) {
	d, _ := tg.open()
	defer d.Close()
	s := d.(driver.SlotLeaseStore)
	l, err := s.Acquire(ctx, kitReq("a"))
	if err != nil {
		return "", err
	}
	if err := s.Release(ctx, l, l.Floor); err != nil { // its next floor not ahead, which would stop the purge
		return "", err
	}
	if _, err := d.(driver.Purger).Purge(ctx); err != nil {
		return "", err
	}
	l, err = s.Acquire(ctx, kitReq("a"))
	return fmt.Sprintf("fence %d after a purge of fence 1", l.Fence), err
}
