package tck_test

// The variants of the Interleave checks: the memory driver, whose every
// read-modify-write is atomic (its mutex), and wrappers of it that read,
// wait a little and then write what they read, as a driver without a
// compare-and-set would: the other store's write lands in the wait.

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/tck"
)

func init() {
	all := []string{
		"Interleave/NextSeal", "Interleave/NextInit", "Interleave/AcquireAcquire", "Interleave/RenewTakeover",
		"Interleave/ReleaseAcquire", "Interleave/ReleaseRenew", "Interleave/SealNamespace", "Interleave/SeedAcquire",
		"Interleave/SeedRenew", "Interleave/PurgeAcquire", "Interleave/PurgeLock", "Interleave/ReleaseTakeover",
	}
	variants = append(variants,
		variant{name: "interleave-memory", checks: all, suite: racySuite("")},
		variant{name: "next-over-seal", checks: all[0:1], broken: true, suite: racySuite("next")},
		variant{name: "init-over-next", checks: all[1:2], broken: true, suite: racySuite("init")},
		variant{name: "acquire-stale-read", checks: []string{all[2], all[4]}, broken: true, suite: racySuite("acquire")},
		variant{name: "renew-writes-back", checks: []string{all[3], all[5]}, broken: true, suite: racySuite("renew")},
		variant{name: "seal-read-first", checks: all[6:7], broken: true, suite: racySuite("seal")},
		variant{name: "seed-over-term", checks: all[7:9], broken: true, suite: racySuite("seed")},
		variant{name: "purge-deletes-live", checks: all[9:11], broken: true, suite: racySuite("purge")},
		variant{name: "release-over-takeover", checks: all[11:12], broken: true, suite: racySuite("release")},
	)
}

// racyWait is the wait between a broken wrapper's read and its write: the
// window in which the other store's write lands.
const racyWait = 2 * time.Millisecond

// racyHarness opens memory stores wrapped for one bug (mode), and keeps
// them for the purge that ends other stores' holds.
type racyHarness struct {
	memHarness
	mode   string
	mu     sync.Mutex
	stores []*racyStore
}

func racySuite(mode string) func(*testing.T) tck.Suite {
	return harnessSuite(func(h memHarness) tck.Harness { return &racyHarness{memHarness: h, mode: mode} })
}

func (h *racyHarness) NewStore(ctx context.Context) (driver.Store, error) {
	d, err := h.memHarness.NewStore(ctx)
	if err != nil || h.mode == "" {
		return d, err
	}
	s := &racyStore{
		inner: d, RangeStore: d.(driver.RangeStore), SlotLeaseStore: d.(driver.SlotLeaseStore),
		SlotSeeder: d.(driver.SlotSeeder), Purger: d.(driver.Purger), Locker: d.(driver.Locker), h: h,
	}
	h.mu.Lock()
	h.stores = append(h.stores, s)
	h.mu.Unlock()
	return s, nil
}

type racyStore struct {
	driver.RangeStore
	driver.SlotLeaseStore
	driver.SlotSeeder
	driver.Purger
	driver.Locker
	inner driver.Store
	h     *racyHarness
	once  sync.Once
	err   error
}

func (s *racyStore) Close() error {
	s.once.Do(func() { s.err = s.inner.Close() })
	return s.err
}

func (s *racyStore) Next(ctx context.Context, key string, step int64) (int64, error) {
	if s.h.mode != "next" {
		return s.RangeStore.Next(ctx, key, step)
	}
	cur, sealed, err := s.Current(ctx, key)
	if err != nil || sealed {
		return s.RangeStore.Next(ctx, key, step)
	}
	time.Sleep(racyWait)
	start, err := s.RangeStore.Next(ctx, key, step)
	if errors.Is(err, driver.ErrSealed) {
		return cur, nil // written over the seal, as read
	}
	return start, err
}

func (s *racyStore) Init(ctx context.Context, key string, next int64) error {
	if s.h.mode != "init" {
		return s.RangeStore.Init(ctx, key, next)
	}
	keys, err := s.Keys(ctx)
	if err != nil || slices.Contains(keys, key) {
		return s.RangeStore.Init(ctx, key, next)
	}
	time.Sleep(racyWait)
	if err := s.RangeStore.Init(ctx, key, next); !errors.Is(err, driver.ErrConfigMismatch) {
		return err
	}
	return nil // written over the key made meanwhile, as read (missing)
}

// slot0 reads slot 0 of ns, if listed.
func (s *racyStore) slot0(ctx context.Context, ns string) (driver.SlotInfo, bool) {
	infos, _ := s.Slots(ctx, ns) // a missing namespace: nothing listed
	for _, in := range infos {
		if in.Slot == 0 {
			return in, true
		}
	}
	return driver.SlotInfo{}, false
}

// sealed reads whether ns is sealed.
func (s *racyStore) sealed(ctx context.Context, ns string) bool {
	nss, _ := s.Namespaces(ctx)
	for _, n := range nss {
		if n.Name == ns {
			return n.Sealed
		}
	}
	return false
}

// fake is the lease a broken Acquire believes it wrote.
func fake(req driver.AcquireRequest, slot int, fence, floor int64) driver.Lease {
	expires := time.Now().UnixMilli() + req.TTL.Milliseconds()
	return driver.Lease{
		Namespace: req.Namespace.Name, Slot: slot, Owner: req.Owner, Incarnation: req.Incarnation, Fence: fence,
		TTL: req.TTL, Tolerance: req.Namespace.Tolerance, Floor: floor, ExpiresAt: expires,
		Ceiling: max(floor, expires+req.Namespace.Tolerance.Milliseconds()),
	}
}

func (s *racyStore) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	switch s.h.mode {
	case "acquire":
		pre, seen := s.slot0(ctx, req.Namespace.Name)
		time.Sleep(racyWait)
		l, err := s.SlotLeaseStore.Acquire(ctx, req)
		switch {
		case errors.Is(err, driver.ErrExhausted) && (!seen || pre.Owner == ""):
			return fake(req, 0, pre.Fence+1, pre.NextFloor), nil // slot 0 was free when read
		case err == nil && seen:
			l.Floor = pre.NextFloor // the term computed from the read
		}
		return l, err
	case "seal":
		if s.sealed(ctx, req.Namespace.Name) {
			break
		}
		time.Sleep(racyWait)
		l, err := s.SlotLeaseStore.Acquire(ctx, req)
		if errors.Is(err, driver.ErrSealed) {
			return fake(req, 1, 1, 0), nil // not sealed when read
		}
		return l, err
	}
	return s.SlotLeaseStore.Acquire(ctx, req)
}

func (s *racyStore) Renew(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	renewed := func() driver.Lease {
		r := l
		r.ExpiresAt = time.Now().UnixMilli() + l.TTL.Milliseconds()
		r.Ceiling = max(r.Ceiling, r.ExpiresAt+l.Tolerance.Milliseconds()) + 1000
		return r
	}
	switch s.h.mode {
	case "renew":
		time.Sleep(racyWait)
		r, err := s.SlotLeaseStore.Renew(ctx, l)
		if !errors.Is(err, driver.ErrLeaseLost) {
			return r, err
		}
		// The term as read, written back: a new term of the owner if
		// the slot is free, else believed.
		req := driver.AcquireRequest{Owner: l.Owner, Incarnation: l.Incarnation, TTL: l.TTL}
		nss, _ := s.Namespaces(ctx)
		for _, n := range nss {
			if n.Name == l.Namespace {
				req.Namespace = n
			}
		}
		if back, err := s.SlotLeaseStore.Acquire(ctx, req); err == nil {
			return back, nil
		}
		return renewed(), nil
	case "seal":
		if s.sealed(ctx, l.Namespace) {
			break
		}
		time.Sleep(racyWait)
		r, err := s.SlotLeaseStore.Renew(ctx, l)
		if errors.Is(err, driver.ErrSealed) {
			return renewed(), nil // not sealed when read
		}
		return r, err
	}
	return s.SlotLeaseStore.Renew(ctx, l)
}

func (s *racyStore) SeedSlot(ctx context.Context, ns driver.Namespace, slot int, fence, nextFloor int64) error {
	if s.h.mode != "seed" {
		return s.SlotSeeder.SeedSlot(ctx, ns, slot, fence, nextFloor)
	}
	time.Sleep(racyWait)
	if err := s.SlotSeeder.SeedSlot(ctx, ns, slot, fence, nextFloor); !errors.Is(err, driver.ErrLocked) {
		return err
	}
	return nil // the slot was free when read
}

func (s *racyStore) Purge(ctx context.Context) ([]string, error) {
	if s.h.mode != "purge" {
		return s.Purger.Purge(ctx)
	}
	time.Sleep(racyWait)
	deleted, err := s.Purger.Purge(ctx)
	if !errors.Is(err, driver.ErrLocked) {
		return deleted, err
	}
	// Nothing was live when read: end what is now, and purge.
	nss, _ := s.Namespaces(ctx)
	for _, n := range nss {
		infos, _ := s.Slots(ctx, n.Name)
		for _, in := range infos {
			if in.Owner != "" {
				_ = s.Release(ctx, driver.Lease{Namespace: n.Name, Slot: in.Slot, Owner: in.Owner, Incarnation: in.Incarnation,
					Fence: in.Fence, TTL: in.TTL, Tolerance: in.Tolerance, Floor: in.Floor, ExpiresAt: in.ExpiresAt, Ceiling: in.Ceiling}, -1)
			}
		}
	}
	s.h.mu.Lock()
	others := slices.Clone(s.h.stores)
	s.h.mu.Unlock()
	for _, o := range others {
		if o != s {
			_ = o.Close() // its holds end
		}
	}
	return s.Purger.Purge(ctx)
}

func (s *racyStore) Release(ctx context.Context, l driver.Lease, used int64) error {
	if s.h.mode != "release" {
		return s.SlotLeaseStore.Release(ctx, l, used)
	}
	pre, _ := s.slot0(ctx, l.Namespace)
	time.Sleep(racyWait)
	err := s.SlotLeaseStore.Release(ctx, l, used)
	if !errors.Is(err, driver.ErrLeaseLost) || pre.Owner != l.Owner || pre.Fence != l.Fence {
		return err
	}
	// The term was l's when read: the release is written over what the
	// slot holds now, as a write without a compare-and-set would.
	if now, ok := s.slot0(ctx, l.Namespace); ok && now.Owner != "" {
		_ = s.SlotLeaseStore.Release(ctx, driver.Lease{Namespace: l.Namespace, Slot: now.Slot, Owner: now.Owner,
			Incarnation: now.Incarnation, Fence: now.Fence, TTL: now.TTL, Tolerance: now.Tolerance, Floor: now.Floor,
			ExpiresAt: now.ExpiresAt, Ceiling: now.Ceiling}, used)
	}
	return nil
}
