package tck_test

// Broken slot variants over the memory driver's state (see
// broken_fault_test.go): Acquire, Renew and Release each with one bug of
// the slot rules, with their probes.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/memfault"
)

func init() {
	acquire := func(b acquireBug) faultWrap {
		return func(d memDriver, _ *shared) driver.Store { b.memDriver = d; return b }
	}
	variants = append(variants,
		faulty("index-oldest-first", "Slots/MostRecentFirst", acquire(acquireBug{oldestFirst: true}), probeOldestFirst),
		faulty("search-skips-expired", "Slots/ExpiredFoundBySearch", acquire(acquireBug{searchSkipsExpired: true}), probeSearchSkipsExpired),
		faulty("early-takeover", "Slots/NoEarlyTakeover", acquire(acquireBug{early: true}), probeEarly),
		faulty("own-expired-returned", "Slots/OwnExpired", acquire(acquireBug{ownExpired: true}), nil),
		faulty("index-by-incarnation", "Slots/MostRecentFirst", acquire(acquireBug{byIncarnation: true}), nil),
		faulty("late-expiry", "Slots/ExpiryBoundary", acquire(acquireBug{lateExpiry: true}), nil),
		faulty("edge-early", "Slots/ExpiryEdge", acquire(acquireBug{edgeEarly: true}), nil),
		faulty("reclaim-own", "Slots/SameIncarnation", acquire(acquireBug{reclaimOwn: true}), nil),
		faulty("index-highest-first", "Slots/MostRecentFirst", acquire(acquireBug{highestFirst: true}), nil),
		faulty("release-expired-noop", "Slots/ReleaseExpired",
			func(d memDriver, _ *shared) driver.Store { return releaseExpiredNoop{d} }, probeReleaseExpired),
		faulty("ceiling-below-floor", "Slots/HighFloor",
			func(d memDriver, _ *shared) driver.Store { return ceilingBelowFloor{d} }, probeHighFloor),
		faulty("renew-no-bounds", "Slots/RenewClockBack",
			func(d memDriver, _ *shared) driver.Store { return renewNoBounds{d} }, probeRenewClockBack),
		faulty("lease-times-trusted", "Slots/ForgedLease",
			func(d memDriver, _ *shared) driver.Store { return leaseTimesTrusted{d} }, nil),
		faulty("seal-renews", "Slots/Seal",
			func(d memDriver, _ *shared) driver.Store { return sealRenews{d} }, nil),
	)
}

// acquireBug is the memory driver's Acquire with one of its bugs.
type acquireBug struct {
	memDriver
	oldestFirst        bool // tries the owner's last slots oldest first
	searchSkipsExpired bool // the lowest-free search takes only released or never-used slots
	early              bool // judges a term expired a tolerance before its ExpiresAt
	ownExpired         bool // returns the owner's own expired term as it is, as a live one
	byIncarnation      bool // keeps the owner index per incarnation: a restarted owner has none
	lateExpiry         bool // judges a term live at its ExpiresAt (now > ExpiresAt to expire)
	edgeEarly          bool // judges a term expired at ExpiresAt - 1 (now + 1 >= ExpiresAt)
	reclaimOwn         bool // with Reclaim, takes over the caller's own live term too
	highestFirst       bool // tries the owner's last slots highest number first
}

func (b acquireBug) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	var lease driver.Lease
	err := memfault.Edit(ctx, b.memDriver, func(st memfault.State) error {
		ns, err := st.Namespace(req.Namespace)
		if err != nil {
			return err
		}
		now := st.Now()
		judgeNow := now
		if b.early {
			judgeNow += ns.Tolerance().Milliseconds()
		}
		if b.lateExpiry {
			judgeNow--
		}
		if b.edgeEarly {
			judgeNow++
		}
		indexKey := req.Owner
		if b.byIncarnation {
			indexKey += "/" + req.Incarnation
		}
		index := slices.Clone(ns.Owners(indexKey))
		if b.oldestFirst {
			slices.Reverse(index)
		}
		if b.highestFirst {
			slices.Sort(index)
			slices.Reverse(index)
		}
		judge := func(r driver.SlotRecord) (driver.SlotVerdict, error) {
			if b.ownExpired && r.Owner == req.Owner && r.Incarnation == req.Incarnation {
				return driver.SlotOwn, nil
			}
			if b.reclaimOwn && req.Reclaim && r.Live(judgeNow) && r.Owner == req.Owner {
				return driver.SlotFree, nil
			}
			return r.Judge(req, judgeNow)
		}
		first := driver.FirstSlots(index, req.Preferred, ns.Limit())
		for _, n := range first {
			if v, _ := judge(ns.Slot(n)); v == driver.SlotOwn {
				lease = ns.Slot(n).Lease(req.Namespace.Name, n)
				return nil
			}
		}
		try := func(n int, search bool) bool {
			r := ns.Slot(n)
			if search && b.searchSkipsExpired && r.Owner != "" {
				return false
			}
			switch v, _ := judge(r); v {
			case driver.SlotOwn:
				lease = r.Lease(req.Namespace.Name, n)
				return true
			case driver.SlotFree:
				r = r.NewTerm(req, now)
				ns.SetSlot(n, r)
				ns.SetOwners(indexKey, driver.RememberSlot(ns.Owners(indexKey), n))
				lease = r.Lease(req.Namespace.Name, n)
				return true
			}
			return false
		}
		for _, n := range first {
			if try(n, false) {
				return nil
			}
		}
		for n := range ns.Limit() {
			if try(n, true) {
				return nil
			}
		}
		return fmt.Errorf("all %d slots are held: %w", ns.Limit(), driver.ErrExhausted)
	})
	return lease, err
}

// releaseExpiredNoop answers a release of an expired term with success but
// writes nothing: the term stays on the slot.
type releaseExpiredNoop struct{ memDriver }

func (s releaseExpiredNoop) Release(ctx context.Context, l driver.Lease, used int64) error {
	expired := false
	if err := memfault.Edit(ctx, s.memDriver, func(st memfault.State) error {
		if ns, ok := st.Space(l.Namespace); ok {
			r := ns.Slot(l.Slot)
			expired = r.Holds(l) && !r.Live(st.Now())
		}
		return nil
	}); err != nil {
		return err
	}
	if expired {
		return nil
	}
	return s.memDriver.Release(ctx, l, used)
}

// ceilingBelowFloor starts each term with no lower bound on its ceiling, so
// a floor above now+ttl+tolerance ends up above the ceiling.
type ceilingBelowFloor struct{ memDriver }

func (s ceilingBelowFloor) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	l, err := s.memDriver.Acquire(ctx, req)
	if err != nil {
		return l, err
	}
	err = memfault.Edit(ctx, s.memDriver, func(st memfault.State) error {
		ns, _ := st.Space(l.Namespace)
		r := ns.Slot(l.Slot)
		if r.ExpiresMin == 0 { // a term never renewed
			r.CeilingMin = 0
			ns.SetSlot(l.Slot, r)
		}
		l = r.Lease(l.Namespace, l.Slot)
		return nil
	})
	return l, err
}

// renewWith is the memory driver's Renew with change in place of the slot
// rules' Renewed, and no look at the namespace's seal.
func renewWith(ctx context.Context, d memDriver, l driver.Lease, change func(r driver.SlotRecord, now int64) (driver.SlotRecord, error)) (driver.Lease, error) {
	out := l
	err := memfault.Edit(ctx, d, func(st memfault.State) error {
		ns, ok := st.Space(l.Namespace)
		var r driver.SlotRecord
		if ok {
			r = ns.Slot(l.Slot)
		}
		r, err := change(r, st.Now())
		if err != nil {
			return err
		}
		ns.SetSlot(l.Slot, r) // change succeeds only on a record that holds l's term
		out = r.Lease(l.Namespace, l.Slot)
		return nil
	})
	return out, err
}

// leaseTimesTrusted renews as the slot rules once did: the lease's own
// ExpiresAt and Ceiling, when higher, become the term's lower bounds, so a
// lease with a time in microseconds holds the slot for centuries.
type leaseTimesTrusted struct{ memDriver }

func (s leaseTimesTrusted) Renew(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	return renewWith(ctx, s.memDriver, l, func(r driver.SlotRecord, now int64) (driver.SlotRecord, error) {
		if !r.Holds(l) {
			return r.Renewed(l, now) // ErrLeaseLost
		}
		n := r
		n.ExpiresMin, n.CeilingMin, n.Written = max(r.ExpiresAt(), l.ExpiresAt), max(r.Ceiling(), l.Ceiling), now
		return n, nil
	})
}

// renewNoBounds renews from the clock alone, recording no lower bounds.
type renewNoBounds struct{ memDriver }

func (s renewNoBounds) Renew(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	return renewWith(ctx, s.memDriver, l, func(r driver.SlotRecord, now int64) (driver.SlotRecord, error) {
		n, err := r.Renewed(l, now)
		n.ExpiresMin, n.CeilingMin = 0, n.Floor
		return n, err
	})
}

// sealRenews forgets the namespace seal in Renew: a holder's ceiling grows
// past what a migration read after the seal.
type sealRenews struct{ memDriver }

func (s sealRenews) Renew(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	sealed := false
	if err := memfault.Edit(ctx, s.memDriver, func(st memfault.State) error {
		if ns, ok := st.Space(l.Namespace); ok && ns.Sealed() {
			sealed = true
			ns.SetSealed(false)
		}
		return nil
	}); err != nil {
		return l, err
	}
	r, err := s.memDriver.Renew(ctx, l)
	if sealed {
		_ = memfault.Edit(context.WithoutCancel(ctx), s.memDriver, func(st memfault.State) error {
			if ns, ok := st.Space(l.Namespace); ok {
				ns.SetSealed(true)
			}
			return nil
		})
	}
	return r, err
}

// Probes (see checkProbe).

func probeNS(limit int, tol time.Duration) driver.Namespace {
	return driver.Namespace{Name: "probe", Limit: limit, Tolerance: tol}
}

func acquireReq(ns driver.Namespace, owner, inc string, ttl time.Duration, pref int) driver.AcquireRequest {
	return driver.AcquireRequest{Namespace: ns, Owner: owner, Incarnation: inc, TTL: ttl, Preferred: pref}
}

// probeOldestFirst: an owner held slots 0 then 1 (two runs at once); which
// does it get back, preferring slot 2?
func probeOldestFirst(ctx context.Context, tg target) (string, error) {
	d, _ := tg.open()
	defer d.Close()
	s := d.(driver.SlotLeaseStore)
	ns := probeNS(3, 0)
	var held []driver.Lease
	for i := range 2 {
		l, err := s.Acquire(ctx, acquireReq(ns, "a", fmt.Sprint(i), time.Hour, 0))
		if err != nil {
			return "", err
		}
		held = append(held, l)
	}
	for _, l := range held {
		if err := s.Release(ctx, l, -1); err != nil {
			return "", err
		}
	}
	l, err := s.Acquire(ctx, acquireReq(ns, "a", "2", time.Hour, 2))
	return fmt.Sprintf("the owner of slots 0 then 1 gets slot %d back", l.Slot), err
}

// probeSearchSkipsExpired: slot 0 expired, slot 1 held; a newcomer
// prefers 1.
func probeSearchSkipsExpired(ctx context.Context, tg target) (string, error) {
	d, base := tg.open()
	defer d.Close()
	s := d.(driver.SlotLeaseStore)
	ns := probeNS(2, 0)
	if _, err := s.Acquire(ctx, acquireReq(ns, "a", "a", time.Second, 0)); err != nil {
		return "", err
	}
	if _, err := s.Acquire(ctx, acquireReq(ns, "b", "b", time.Hour, 1)); err != nil {
		return "", err
	}
	if err := stepClock(ctx, base, 2*time.Second); err != nil {
		return "", err
	}
	l, err := s.Acquire(ctx, acquireReq(ns, "c", "c", time.Hour, 1))
	return fmt.Sprintf("newcomer: slot %d, error %v", l.Slot, err), nil
}

// probeEarly: another owner tries a live term at once, with a tolerance as
// long as the ttl.
func probeEarly(ctx context.Context, tg target) (string, error) {
	d, _ := tg.open()
	defer d.Close()
	s := d.(driver.SlotLeaseStore)
	ns := probeNS(1, time.Hour)
	if _, err := s.Acquire(ctx, acquireReq(ns, "a", "a", time.Hour, 0)); err != nil {
		return "", err
	}
	l, err := s.Acquire(ctx, acquireReq(ns, "b", "b", time.Hour, 0))
	return fmt.Sprintf("another owner at once: fence %d, error %v", l.Fence, err), nil
}

// probeReleaseExpired: release a term past its expiry; who owns the slot?
func probeReleaseExpired(ctx context.Context, tg target) (string, error) {
	d, base := tg.open()
	defer d.Close()
	s := d.(driver.SlotLeaseStore)
	ns := probeNS(1, 0)
	l, err := s.Acquire(ctx, acquireReq(ns, "a", "a", time.Second, 0))
	if err != nil {
		return "", err
	}
	if err := stepClock(ctx, base, 2*time.Second); err != nil {
		return "", err
	}
	if err := s.Release(ctx, l, l.Floor); err != nil {
		return "", err
	}
	infos, err := s.Slots(ctx, ns.Name)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("slot 0 after a late release: owner %q", infos[0].Owner), nil
}

// probeHighFloor: a short term after a long one released.
func probeHighFloor(ctx context.Context, tg target) (string, error) {
	d, _ := tg.open()
	defer d.Close()
	s := d.(driver.SlotLeaseStore)
	ns := probeNS(1, 0)
	l, err := s.Acquire(ctx, acquireReq(ns, "a", "a", time.Hour, 0))
	if err != nil {
		return "", err
	}
	if err := s.Release(ctx, l, -1); err != nil {
		return "", err
	}
	l, err = s.Acquire(ctx, acquireReq(ns, "a", "a", time.Second, 0))
	return fmt.Sprintf("short term after a long one: ceiling >= floor: %v", l.Ceiling >= l.Floor), err
}

// probeRenewClockBack: renew after the clock stepped back an hour.
func probeRenewClockBack(ctx context.Context, tg target) (string, error) {
	d, base := tg.open()
	defer d.Close()
	s := d.(driver.SlotLeaseStore)
	l, err := s.Acquire(ctx, acquireReq(probeNS(1, 0), "a", "a", time.Second, 0))
	if err != nil {
		return "", err
	}
	if err := stepClock(ctx, base, -time.Hour); err != nil {
		return "", err
	}
	r, err := s.Renew(ctx, l)
	return fmt.Sprintf("renewal after the clock stepped back: expiresAt kept: %v", r.ExpiresAt >= l.ExpiresAt), err
}
