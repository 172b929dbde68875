package memory

// Broken variants for the checks of sound listings, slot rules, options and
// capabilities (declared in brokenVariants, broken_test.go), each with a probe: a direct scenario whose outcome on the
// variant differs from the sound store's, so each variant is shown to have
// its bug, not only to fail the TCK. The lock variants are in
// broken_locks_test.go.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/cosid-go/store/driver"
)

// currentCreates creates a missing key at 0 when Current reads it.
type currentCreates struct{ *driverStore }

func (s currentCreates) Current(ctx context.Context, key string) (int64, bool, error) {
	next, sealed, err := s.driverStore.Current(ctx, key)
	if err == nil && next == 0 && !sealed {
		err = s.driverStore.Init(ctx, key, 0)
	}
	return next, sealed, err
}

// keysSkipSealed leaves sealed keys out of Keys.
type keysSkipSealed struct{ *driverStore }

func (s keysSkipSealed) Keys(ctx context.Context) ([]string, error) {
	keys, err := s.driverStore.Keys(ctx)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, k := range keys {
		if _, sealed, err := s.driverStore.Current(ctx, k); err != nil {
			return nil, err
		} else if !sealed {
			out = append(out, k)
		}
	}
	return out, nil
}

// ListRanges has the same bug: the portable layer lists a driver that
// pages (driver.RangeLister) through it, not Keys.
func (s keysSkipSealed) ListRanges(ctx context.Context, after string, limit int) ([]driver.KeyState, error) {
	page, err := s.driverStore.ListRanges(ctx, after, limit)
	out := []driver.KeyState{}
	for _, k := range page {
		if !k.Sealed {
			out = append(out, k)
		}
	}
	return out, err
}

// acquireBug is the memory driver's Acquire with one of three bugs.
type acquireBug struct {
	*driverStore
	oldestFirst        bool // tries the owner's last slots oldest first
	searchSkipsExpired bool // the lowest-free search takes only released or never-used slots
	early              bool // judges a term expired a tolerance before its ExpiresAt
	ownExpired         bool // returns the owner's own expired term as it is, as a live one
	byIncarnation      bool // keeps the owner index per incarnation: a restarted owner has none
	lateExpiry         bool // judges a term live at its ExpiresAt (now > ExpiresAt to expire)
	reclaimOwn         bool // with Reclaim, takes over the caller's own live term too
	highestFirst       bool // tries the owner's last slots highest number first
}

func (b acquireBug) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	if err := b.begin(ctx); err != nil {
		return driver.Lease{}, err
	}
	defer b.st.mu.Unlock()
	ns, err := b.st.namespace(req.Namespace)
	if err != nil {
		return driver.Lease{}, err
	}
	now := b.st.clock()
	judgeNow := now
	if b.early {
		judgeNow += ns.tolerance.Milliseconds()
	}
	if b.lateExpiry {
		judgeNow--
	}
	indexKey := req.Owner
	if b.byIncarnation {
		indexKey += "/" + req.Incarnation
	}
	index := ns.owners[indexKey]
	if b.oldestFirst {
		index = slices.Clone(index)
		slices.Reverse(index)
	}
	if b.highestFirst {
		index = slices.Clone(index)
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
	first := driver.FirstSlots(index, req.Preferred, ns.limit)
	for _, n := range first {
		if v, _ := judge(ns.slot(n)); v == driver.SlotOwn {
			return ns.slots[n].Lease(req.Namespace.Name, n), nil
		}
	}
	try := func(n int, search bool) (driver.Lease, bool) {
		r := ns.slot(n)
		if search && b.searchSkipsExpired && r.Owner != "" {
			return driver.Lease{}, false
		}
		switch v, _ := judge(r); v {
		case driver.SlotOwn:
			return r.Lease(req.Namespace.Name, n), true
		case driver.SlotFree:
			r = r.NewTerm(req, now)
			ns.slots[n] = r
			ns.owners[indexKey] = driver.RememberSlot(ns.owners[indexKey], n)
			return r.Lease(req.Namespace.Name, n), true
		}
		return driver.Lease{}, false
	}
	for _, n := range first {
		if l, ok := try(n, false); ok {
			return l, nil
		}
	}
	for n := range ns.limit {
		if l, ok := try(n, true); ok {
			return l, nil
		}
	}
	return driver.Lease{}, fmt.Errorf("all %d slots are held: %w", ns.limit, driver.ErrExhausted)
}

// releaseExpiredNoop answers a release of an expired term with success but
// writes nothing: the term stays on the slot.
type releaseExpiredNoop struct{ *driverStore }

func (s releaseExpiredNoop) Release(ctx context.Context, l driver.Lease, used int64) error {
	s.st.mu.Lock()
	expired := false
	if ns := s.st.spaces[l.Namespace]; ns != nil {
		r := ns.slots[l.Slot]
		expired = r.Holds(l) && !r.Live(s.st.clock())
	}
	s.st.mu.Unlock()
	if expired {
		return nil
	}
	return s.driverStore.Release(ctx, l, used)
}

// ceilingBelowFloor starts each term with no lower bound on its ceiling, so
// a floor above now+ttl+tolerance ends up above the ceiling.
type ceilingBelowFloor struct{ *driverStore }

func (s ceilingBelowFloor) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	l, err := s.driverStore.Acquire(ctx, req)
	if err != nil {
		return l, err
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	ns := s.st.spaces[l.Namespace]
	r := ns.slots[l.Slot]
	if r.ExpiresMin == 0 { // a term never renewed
		r.CeilingMin = 0
		ns.slots[l.Slot] = r
	}
	return r.Lease(l.Namespace, l.Slot), nil
}

// leaseTimesTrusted renews as the slot rules once did: the lease's own
// ExpiresAt and Ceiling, when higher, become the term's lower bounds, so a
// lease with a time in microseconds holds the slot for centuries.
type leaseTimesTrusted struct{ *driverStore }

func (s leaseTimesTrusted) Renew(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	if err := s.begin(ctx); err != nil {
		return l, err
	}
	defer s.st.mu.Unlock()
	now := s.st.clock()
	r, err := s.st.rewrite(l, func(r driver.SlotRecord) (driver.SlotRecord, error) {
		if !r.Holds(l) {
			return r.Renewed(l, now) // ErrLeaseLost
		}
		n := r
		n.ExpiresMin, n.CeilingMin, n.Written = max(r.ExpiresAt(), l.ExpiresAt), max(r.Ceiling(), l.Ceiling), now
		return n, nil
	})
	if err != nil {
		return l, err
	}
	return r.Lease(l.Namespace, l.Slot), nil
}

// renewNoBounds renews from the clock alone, recording no lower bounds.
type renewNoBounds struct{ *driverStore }

func (s renewNoBounds) Renew(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	if err := s.begin(ctx); err != nil {
		return l, err
	}
	defer s.st.mu.Unlock()
	now := s.st.clock()
	r, err := s.st.rewrite(l, func(r driver.SlotRecord) (driver.SlotRecord, error) {
		n, err := r.Renewed(l, now)
		n.ExpiresMin, n.CeilingMin = 0, n.Floor
		return n, err
	})
	if err != nil {
		return l, err
	}
	return r.Lease(l.Namespace, l.Slot), nil
}

// acceptUnknownBesideName checks unknown keys only when no name is given.
func acceptUnknownBesideName(options map[string]string) (driver.Store, error) {
	if name, ok := options["name"]; ok {
		return newDriver(name), nil
	}
	return fromOptions(options)
}

// Probes. Each returns what it observed, as text; TestBroken wants the
// sound store's answer and the variant's to differ.

var probeNames sync.Map

// probeStore opens a store on a private state, wrapped by wrap.
func probeStore(wrap func(*driverStore) driver.Store) (driver.Store, *driverStore) {
	s := newDriver("")
	return wrap(s), s
}

func freshName(what string) string {
	n := 0
	for {
		n++
		name := fmt.Sprintf("probe-%s-%d", what, n)
		if _, dup := probeNames.LoadOrStore(name, true); !dup {
			return name
		}
	}
}

func probeCurrentCreates(ctx context.Context, wrap func(*driverStore) driver.Store, _ driver.Factory) (string, error) {
	d, _ := probeStore(wrap)
	defer d.Close()
	r := d.(driver.RangeStore)
	if _, _, err := r.Current(ctx, "k"); err != nil {
		return "", err
	}
	keys, err := r.Keys(ctx)
	return fmt.Sprintf("Keys after Current of a missing key: %q", keys), err
}

func probeKeysSkipSealed(ctx context.Context, wrap func(*driverStore) driver.Store, _ driver.Factory) (string, error) {
	d, _ := probeStore(wrap)
	defer d.Close()
	r := d.(driver.RangeStore)
	if _, err := r.Seal(ctx, "k"); err != nil {
		return "", err
	}
	keys, err := r.Keys(ctx)
	return fmt.Sprintf("Keys with k sealed: %q", keys), err
}

func probeNS(limit int, tol time.Duration) driver.Namespace {
	return driver.Namespace{Name: "probe", Limit: limit, Tolerance: tol}
}

func req(ns driver.Namespace, owner, inc string, ttl time.Duration, pref int) driver.AcquireRequest {
	return driver.AcquireRequest{Namespace: ns, Owner: owner, Incarnation: inc, TTL: ttl, Preferred: pref}
}

// probeOldestFirst: an owner held slots 0 then 1 (two runs at once); which
// does it get back, preferring slot 2?
func probeOldestFirst(ctx context.Context, wrap func(*driverStore) driver.Store, _ driver.Factory) (string, error) {
	d, _ := probeStore(wrap)
	defer d.Close()
	s := d.(driver.SlotLeaseStore)
	ns := probeNS(3, 0)
	var held []driver.Lease
	for i := range 2 {
		l, err := s.Acquire(ctx, req(ns, "a", fmt.Sprint(i), time.Hour, 0))
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
	l, err := s.Acquire(ctx, req(ns, "a", "2", time.Hour, 2))
	return fmt.Sprintf("the owner of slots 0 then 1 gets slot %d back", l.Slot), err
}

// probeSearchSkipsExpired: slot 0 expired, slot 1 held; a newcomer
// prefers 1.
func probeSearchSkipsExpired(ctx context.Context, wrap func(*driverStore) driver.Store, _ driver.Factory) (string, error) {
	d, raw := probeStore(wrap)
	defer d.Close()
	s := d.(driver.SlotLeaseStore)
	ns := probeNS(2, 0)
	if _, err := s.Acquire(ctx, req(ns, "a", "a", time.Second, 0)); err != nil {
		return "", err
	}
	if _, err := s.Acquire(ctx, req(ns, "b", "b", time.Hour, 1)); err != nil {
		return "", err
	}
	raw.st.stepClock(2 * time.Second)
	l, err := s.Acquire(ctx, req(ns, "c", "c", time.Hour, 1))
	return fmt.Sprintf("newcomer: slot %d, error %v", l.Slot, err), nil
}

// probeEarly: another owner tries a live term at once, with a tolerance as
// long as the ttl.
func probeEarly(ctx context.Context, wrap func(*driverStore) driver.Store, _ driver.Factory) (string, error) {
	d, _ := probeStore(wrap)
	defer d.Close()
	s := d.(driver.SlotLeaseStore)
	ns := probeNS(1, time.Hour)
	if _, err := s.Acquire(ctx, req(ns, "a", "a", time.Hour, 0)); err != nil {
		return "", err
	}
	l, err := s.Acquire(ctx, req(ns, "b", "b", time.Hour, 0))
	return fmt.Sprintf("another owner at once: fence %d, error %v", l.Fence, err), nil
}

// probeReleaseExpired: release a term past its expiry; who owns the slot?
func probeReleaseExpired(ctx context.Context, wrap func(*driverStore) driver.Store, _ driver.Factory) (string, error) {
	d, raw := probeStore(wrap)
	defer d.Close()
	s := d.(driver.SlotLeaseStore)
	ns := probeNS(1, 0)
	l, err := s.Acquire(ctx, req(ns, "a", "a", time.Second, 0))
	if err != nil {
		return "", err
	}
	raw.st.stepClock(2 * time.Second)
	if err := s.Release(ctx, l, l.Floor); err != nil {
		return "", err
	}
	infos, err := s.Slots(ctx, ns.Name)
	return fmt.Sprintf("slot 0 after a late release: owner %q", infos[0].Owner), err
}

// probeHighFloor: a short term after a long one released.
func probeHighFloor(ctx context.Context, wrap func(*driverStore) driver.Store, _ driver.Factory) (string, error) {
	d, _ := probeStore(wrap)
	defer d.Close()
	s := d.(driver.SlotLeaseStore)
	ns := probeNS(1, 0)
	l, err := s.Acquire(ctx, req(ns, "a", "a", time.Hour, 0))
	if err != nil {
		return "", err
	}
	if err := s.Release(ctx, l, -1); err != nil {
		return "", err
	}
	l, err = s.Acquire(ctx, req(ns, "a", "a", time.Second, 0))
	return fmt.Sprintf("short term after a long one: ceiling >= floor: %v", l.Ceiling >= l.Floor), err
}

// probeRenewClockBack: renew after the clock stepped back an hour.
func probeRenewClockBack(ctx context.Context, wrap func(*driverStore) driver.Store, _ driver.Factory) (string, error) {
	d, raw := probeStore(wrap)
	defer d.Close()
	s := d.(driver.SlotLeaseStore)
	l, err := s.Acquire(ctx, req(probeNS(1, 0), "a", "a", time.Second, 0))
	if err != nil {
		return "", err
	}
	raw.st.stepClock(-time.Hour)
	r, err := s.Renew(ctx, l)
	return fmt.Sprintf("renewal after the clock stepped back: expiresAt kept: %v", r.ExpiresAt >= l.ExpiresAt), err
}

// probeUnknownBesideName: the factory with a valid and an unknown key.
func probeUnknownBesideName(_ context.Context, _ func(*driverStore) driver.Store, factory driver.Factory) (string, error) {
	d, err := factory(map[string]string{"name": freshName("options"), "bogus": "1"})
	if err == nil {
		d.Close()
		return "accepted", nil
	}
	if !errors.Is(err, driver.ErrInvalidArgument) {
		return "", err
	}
	return "refused", nil
}

// bareStore implements no capability: only Close.
type bareStore struct{ s *driverStore }

func (b bareStore) Close() error { return b.s.Close() }

// pingIgnoresContext answers Ping whatever its context.
type pingIgnoresContext struct{ *driverStore }

func (pingIgnoresContext) Ping(context.Context) error { return nil }

func probePingIgnoresContext(ctx context.Context, wrap func(*driverStore) driver.Store, _ driver.Factory) (string, error) {
	d, _ := probeStore(wrap)
	defer d.Close()
	ended, cancel := context.WithCancel(ctx)
	cancel()
	return fmt.Sprintf("Ping with a cancelled context: %v", d.(driver.Pinger).Ping(ended)), nil
}

// typedFactory opens a memory store and reads one more option, tck.count,
// a count; a lax factory accepts any value of it.
func typedFactory(lax bool) driver.Factory {
	return func(options map[string]string) (driver.Store, error) {
		o := driver.NewOptions(options)
		name := o.String("name", "")
		if lax {
			o.String("tck.count", "0")
		} else {
			o.Int("tck.count", 0, 0, math.MaxInt)
		}
		if err := o.Err(); err != nil {
			return nil, err
		}
		return newDriver(name), nil
	}
}

func probeBare(_ context.Context, wrap func(*driverStore) driver.Store, _ driver.Factory) (string, error) {
	d, _ := probeStore(wrap)
	defer d.Close()
	_, r := d.(driver.RangeStore)
	_, s := d.(driver.SlotLeaseStore)
	_, k := d.(driver.Locker)
	return fmt.Sprintf("capabilities: ranges %v, slots %v, locks %v", r, s, k), nil
}

func probeMalformed(_ context.Context, _ func(*driverStore) driver.Store, factory driver.Factory) (string, error) {
	d, err := factory(map[string]string{"name": freshName("malformed"), "tck.count": "many"})
	if err == nil {
		d.Close()
		return "tck.count=many accepted", nil
	}
	return fmt.Sprintf("refused: %v", err), nil
}
