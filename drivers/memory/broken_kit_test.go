package memory

// Broken variants for the checks of a slot's history and of a restart: each
// is a bug the TCK once accepted. They are declared in brokenVariants
// (broken_test.go) with the others, and the probes below show that each
// really behaves differently from the sound driver.

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/cosid-go/store/driver"
)

// seedLowers sets a seeded slot's fence and next floor as given, lowering
// them, where the sound driver only raises them.
type seedLowers struct{ *driverStore }

func (s seedLowers) SeedSlot(ctx context.Context, want driver.Namespace, n int, fence, nextFloor int64) error {
	if err := s.driverStore.SeedSlot(ctx, want, n, fence, nextFloor); err != nil {
		return err
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	r := s.st.spaces[want.Name].slots[n]
	r.Fence, r.NextFloor = fence, nextFloor
	s.st.spaces[want.Name].slots[n] = r
	return nil
}

// seedFloorIgnored leaves an expired term in place when seeding (raising
// only its next floor), and starts the term that takes it over at the old
// ceiling, ignoring the next floor.
type seedFloorIgnored struct{ *driverStore }

func (s seedFloorIgnored) SeedSlot(ctx context.Context, want driver.Namespace, n int, fence, nextFloor int64) error {
	s.st.mu.Lock()
	if ns := s.st.spaces[want.Name]; ns != nil {
		if r, ok := ns.slots[n]; ok && r.Owner != "" && !r.Live(s.st.clock()) {
			r.Fence, r.NextFloor = max(r.Fence, fence), max(r.NextFloor, nextFloor)
			ns.slots[n] = r
			s.st.mu.Unlock()
			return nil
		}
	}
	s.st.mu.Unlock()
	return s.driverStore.SeedSlot(ctx, want, n, fence, nextFloor)
}

func (s seedFloorIgnored) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	s.st.mu.Lock()
	var before map[int]driver.SlotRecord
	if ns := s.st.spaces[req.Namespace.Name]; ns != nil {
		before = maps.Clone(ns.slots)
	}
	s.st.mu.Unlock()
	l, err := s.driverStore.Acquire(ctx, req)
	if err != nil {
		return l, err
	}
	old, ok := before[l.Slot]
	if !ok || old.Owner == "" || old.Fence+1 != l.Fence {
		return l, nil
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	ns := s.st.spaces[req.Namespace.Name]
	r := ns.slots[l.Slot]
	r.Floor, r.CeilingMin, r.NextFloor = old.Ceiling(), old.Ceiling(), old.Ceiling()
	ns.slots[l.Slot] = r
	return r.Lease(l.Namespace, l.Slot), nil
}

// takeoverKeepsLastOwner leaves LastOwner as it was when a term is taken
// over, so a tool never learns whose term ended.
type takeoverKeepsLastOwner struct{ *driverStore }

func (s takeoverKeepsLastOwner) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	s.st.mu.Lock()
	var before map[int]driver.SlotRecord
	if ns := s.st.spaces[req.Namespace.Name]; ns != nil {
		before = maps.Clone(ns.slots)
	}
	s.st.mu.Unlock()
	l, err := s.driverStore.Acquire(ctx, req)
	if old, ok := before[l.Slot]; err == nil && ok && old.Fence+1 == l.Fence {
		s.st.mu.Lock()
		ns := s.st.spaces[req.Namespace.Name]
		r := ns.slots[l.Slot]
		r.LastOwner = old.LastOwner
		ns.slots[l.Slot] = r
		s.st.mu.Unlock()
	}
	return l, err
}

// purgeForgetsFences purges slot fences with everything else, so that a
// slot's fences start again at 1.
type purgeForgetsFences struct{ *driverStore }

func (s purgeForgetsFences) Purge(ctx context.Context) ([]string, error) {
	deleted, err := s.driverStore.Purge(ctx)
	s.st.mu.Lock()
	s.st.slotFenceFloor = 0
	s.st.mu.Unlock()
	return deleted, err
}

// forgetfulHarness restarts its storage empty: a driver that says it is
// persistent and keeps nothing.
type forgetfulHarness struct{ tckHarness }

func (h forgetfulHarness) Restart(context.Context) error {
	registry.Lock()
	defer registry.Unlock()
	registry.m[h.name] = newState()
	return nil
}

// Probes (see checkProbe): each drives the variant and the sound store
// directly; the outcomes differ. forgets-on-restart has none: its bug is
// its harness's Restart, which TestBroken's Restart/Survives runs.

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
func probeSeedLowers(ctx context.Context, wrap func(*driverStore) driver.Store, _ driver.Factory) (string, error) {
	d, _ := probeStore(wrap)
	defer d.Close()
	for _, f := range []int64{10, 3} {
		if err := d.(driver.SlotSeeder).SeedSlot(ctx, kitNS, 0, f, 5000); err != nil {
			return "", err
		}
	}
	in, err := kitListed(ctx, d.(driver.SlotLeaseStore))
	return fmt.Sprintf("fence %d after seeds 10 then 3", in.Fence), err
}

// probeSeedFloorIgnored: the floor of the term after a seed of a high next
// floor over an expired term.
func probeSeedFloorIgnored(ctx context.Context, wrap func(*driverStore) driver.Store, _ driver.Factory) (string, error) {
	d, base := probeStore(wrap)
	defer d.Close()
	now := int64(1000)
	SetClock(base, func() int64 { return now })
	s := d.(driver.SlotLeaseStore)
	if _, err := s.Acquire(ctx, kitReq("a")); err != nil { // expires at 1100, ceiling 1150
		return "", err
	}
	now = 2000
	if err := d.(driver.SlotSeeder).SeedSlot(ctx, kitNS, 0, 0, 1_000_000_000); err != nil {
		return "", err
	}
	l, err := s.Acquire(ctx, kitReq("b"))
	return fmt.Sprintf("floor %d after a seed of next floor 1e9 over an expired term", l.Floor), err
}

// probeTakeoverLastOwner: LastOwner after b took over a's expired term.
func probeTakeoverLastOwner(ctx context.Context, wrap func(*driverStore) driver.Store, _ driver.Factory) (string, error) {
	d, base := probeStore(wrap)
	defer d.Close()
	now := int64(1000)
	SetClock(base, func() int64 { return now })
	s := d.(driver.SlotLeaseStore)
	if _, err := s.Acquire(ctx, kitReq("a")); err != nil {
		return "", err
	}
	now = 2000
	if _, err := s.Acquire(ctx, kitReq("b")); err != nil {
		return "", err
	}
	in, err := kitListed(ctx, s)
	return fmt.Sprintf("last owner %q", in.LastOwner), err
}

// probePurgeFences: the fence of the first term after a purge of fence 1.
func probePurgeFences(ctx context.Context, wrap func(*driverStore) driver.Store, _ driver.Factory) (string, error) {
	d, _ := probeStore(wrap)
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
