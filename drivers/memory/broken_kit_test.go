package memory

// Broken variants for the checks of a slot's history and of a restart: each
// is a bug the TCK once accepted. They are declared in brokenVariants
// (broken_test.go) with the others; TestBrokenKitDiffers shows that each
// really behaves differently from the sound driver.

import (
	"context"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"
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

var kitStates atomic.Int64

// TestBrokenKitDiffers: each variant above, driven directly, does what the
// sound driver does not.
func TestBrokenKitDiffers(t *testing.T) {
	ctx := t.Context()
	ns := driver.Namespace{Name: "kit", Limit: 1, Tolerance: 50 * time.Millisecond}
	req := func(owner string) driver.AcquireRequest {
		return driver.AcquireRequest{Namespace: ns, Owner: owner, Incarnation: "1", TTL: 100 * time.Millisecond}
	}
	fresh2 := func(name string) *driverStore {
		s := newDriver(name)
		t.Cleanup(func() { s.Close() })
		return s
	}
	fresh := func() *driverStore { return fresh2(fmt.Sprintf("kit-%d", kitStates.Add(1))) }
	listed := func(s driver.SlotStore) driver.SlotInfo {
		infos, err := s.Slots(ctx, ns.Name)
		if err != nil || len(infos) != 1 {
			t.Fatalf("Slots = %v, %v; want one slot", infos, err)
		}
		return infos[0]
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	t.Run("seed-lowers", func(t *testing.T) {
		for _, c := range []struct {
			s         driver.SlotStore
			wantFence int64
		}{{fresh(), 10}, {seedLowers{fresh()}, 3}} {
			d := c.s.(driver.SlotSeeder)
			must(d.SeedSlot(ctx, ns, 0, 10, 5000))
			must(d.SeedSlot(ctx, ns, 0, 3, 100))
			if in := listed(c.s); in.Fence != c.wantFence {
				t.Errorf("%T: fence %d after seeds 10 then 3, want %d", c.s, in.Fence, c.wantFence)
			}
		}
	})
	t.Run("seed-floor-ignored", func(t *testing.T) {
		const seeded = 1_000_000_000
		for _, c := range []struct {
			wrap      func(*driverStore) driver.SlotStore
			wantFloor int64
		}{
			{func(s *driverStore) driver.SlotStore { return s }, seeded},
			{func(s *driverStore) driver.SlotStore { return seedFloorIgnored{s} }, 1150},
		} {
			base := fresh()
			now := int64(1000)
			SetClock(base, func() int64 { return now })
			s := c.wrap(base)
			_, err := s.Acquire(ctx, req("a")) // expires at 1100, ceiling 1150
			must(err)
			now = 2000
			must(s.(driver.SlotSeeder).SeedSlot(ctx, ns, 0, 0, seeded))
			l, err := s.Acquire(ctx, req("b"))
			must(err)
			if l.Floor != c.wantFloor {
				t.Errorf("%T: floor %d after a seed of next floor %d over an expired term, want %d", s, l.Floor, seeded, c.wantFloor)
			}
		}
	})
	t.Run("takeover-keeps-last-owner", func(t *testing.T) {
		for _, c := range []struct {
			wrap func(*driverStore) driver.SlotStore
			want string
		}{
			{func(s *driverStore) driver.SlotStore { return s }, "a"},
			{func(s *driverStore) driver.SlotStore { return takeoverKeepsLastOwner{s} }, ""},
		} {
			base := fresh()
			now := int64(1000)
			SetClock(base, func() int64 { return now })
			s := c.wrap(base)
			_, err := s.Acquire(ctx, req("a"))
			must(err)
			now = 2000
			_, err = s.Acquire(ctx, req("b"))
			must(err)
			if in := listed(s); in.LastOwner != c.want {
				t.Errorf("%T: last owner %q after b took over a's expired term, want %q", s, in.LastOwner, c.want)
			}
		}
	})
	t.Run("purge-forgets-fences", func(t *testing.T) {
		for _, c := range []struct {
			s         driver.SlotStore
			wantFence int64
		}{{fresh(), 2}, {purgeForgetsFences{fresh()}, 1}} {
			l, err := c.s.Acquire(ctx, req("a"))
			must(err)
			must(c.s.Release(ctx, l, -1))
			_, err = c.s.(driver.Purger).Purge(ctx)
			must(err)
			l, err = c.s.Acquire(ctx, req("a"))
			must(err)
			if l.Fence != c.wantFence {
				t.Errorf("%T: fence %d after a purge of fence 1, want %d", c.s, l.Fence, c.wantFence)
			}
		}
	})
	t.Run("forgets-on-restart", func(t *testing.T) {
		h := forgetfulHarness{tckHarness{name: fmt.Sprintf("kit-%d", kitStates.Add(1))}}
		s := fresh2(h.name)
		_, err := s.Next(ctx, "k", 10)
		must(err)
		must(s.Close())
		if next, _, err := fresh2(h.name).Current(ctx, "k"); err != nil || next != 10 {
			t.Errorf("a store reopened without a restart: Current = %d, %v; want 10", next, err)
		}
		must(h.Restart(ctx))
		if next, _, err := fresh2(h.name).Current(ctx, "k"); err != nil || next != 0 {
			t.Errorf("after the forgetful restart: Current = %d, %v; want 0", next, err)
		}
	})
}
