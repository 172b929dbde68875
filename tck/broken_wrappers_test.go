package tck_test

// Broken variants over the memory driver: each wraps the memory driver's
// store and overrides one method with one bug, and the check meant to
// catch it must fail (TestBroken in broken_test.go runs them). They use
// only the driver's interfaces, so they live here, beside the kit they
// prove; variants that need more than the interfaces are in
// broken_fault_test.go.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/tck"
)

func init() {
	wrapped := func(name, catch string, wrap func(memDriver) driver.Store) variant {
		return variant{name: name, checks: []string{catch}, broken: true, suite: wrapSuite(wrap)}
	}
	variants = append(variants,
		wrapped("dup-range", "Ranges/NeverTwice", func(s memDriver) driver.Store { return &dupRange{memDriver: s} }),
		wrapped("forget-seal", "Ranges/Seal", func(s memDriver) driver.Store { return forgetSeal{s} }),
		wrapped("init-overwrite", "Ranges/Init", func(s memDriver) driver.Store { return initOverwrite{s} }),
		wrapped("overflow-pretend", "Ranges/Overflow", func(s memDriver) driver.Store { return overflowPretend{s} }),
		wrapped("keys-parents", "Ranges/Keys", func(s memDriver) driver.Store { return keysParents{s} }),
		wrapped("paged-keys-nil", "Ranges/Keys", func(s memDriver) driver.Store { return pagedKeysNil{s} }),
		wrapped("renew-purged-not-found", "Purge/Everything", func(s memDriver) driver.Store { return renewPurgedNotFound{s} }),
		wrapped("config-ignored", "Slots/ConfigMismatch", func(s memDriver) driver.Store { return configIgnored{s} }),
		wrapped("ignore-floor", "Slots/Takeover", func(s memDriver) driver.Store { return ignoreFloor{s} }),
		wrapped("ignore-used", "Slots/ReleaseFloor", func(s memDriver) driver.Store { return ignoreUsed{s} }),
		wrapped("static-fence", "Slots/Fence", func(s memDriver) driver.Store { return staticFence{s} }),
		wrapped("ignore-expiry", "Slots/Takeover", func(s memDriver) driver.Store { return ignoreExpiry{s} }),
		wrapped("early-exhausted", "Slots/Exhaustion", func(s memDriver) driver.Store { return earlyExhausted{s} }),
		wrapped("ignore-preferred", "Slots/ChoiceOrder", func(s memDriver) driver.Store { return ignorePreferred{s} }),
		wrapped("renew-back", "Slots/Renew", func(s memDriver) driver.Store { return renewBack{s} }),
		wrapped("lock-fence", "Locks/Exclusion", func(s memDriver) driver.Store { return lockFence{s} }),
		wrapped("spin-lock", "Locks/FIFO", func(s memDriver) driver.Store { return spinLock{s} }),
		wrapped("cancel-trace", "Locks/Cancel", func(s memDriver) driver.Store { return cancelTrace{s} }),
		wrapped("reentrant", "Locks/NotReentrant", func(s memDriver) driver.Store { return &reentrant{memDriver: s} }),
		wrapped("forget-close", "Locks/LostOnClose", func(s memDriver) driver.Store { return forgetClose{s} }),
		wrapped("exhausted-at-max", "Ranges/Overflow", func(s memDriver) driver.Store { return exhaustedAtMax{s} }),
		wrapped("exhausted-at-max-unseen", "Ranges/Overflow", func(s memDriver) driver.Store {
			return &exhaustedAtMaxUnseen{memDriver: s, seen: map[string]bool{}}
		}),
		wrapped("overflow-invalid", "Ranges/Overflow", func(s memDriver) driver.Store { return overflowInvalid{s} }),
		wrapped("init-max-refused", "Ranges/Overflow", func(s memDriver) driver.Store { return initMaxRefused{s} }),
		wrapped("init-sealed-refused", "Ranges/Seal", func(s memDriver) driver.Store { return initSealedRefused{s} }),
		wrapped("seal-exhausted", "Ranges/Overflow", func(s memDriver) driver.Store { return sealExhausted{s} }),
		wrapped("slots-by-fence", "Slots/Listing", func(s memDriver) driver.Store { return slotsByFence{s} }),
		wrapped("waiters-no-holder", "Locks/FIFO", func(s memDriver) driver.Store { return waitersNoHolder{s} }),
		wrapped("waiters-fence-unset", "Locks/WaiterFences", func(s memDriver) driver.Store { return waitersFenceUnset{s} }),
		variant{name: "fold-option-keys", checks: []string{"Options/KeysExact"}, broken: true,
			suite: func(*testing.T) tck.Suite { s := memSuite(); s.Factory = foldOptionKeys; return s }},
		variant{name: "ignore-options", checks: []string{"Options/UnknownKey"}, broken: true,
			suite: func(*testing.T) tck.Suite {
				s := memSuite()
				s.Factory = func(options map[string]string) (driver.Store, error) {
					return openMemory(map[string]string{"name": options["name"]}) // every other key ignored
				}
				return s
			}},
	)
}

// memDriver is what the memory driver's store implements, but for the
// paged listings; a wrapper embeds it and overrides the method with the bug.
type memDriver interface {
	driver.Store
	driver.RangeStore
	driver.SlotLeaseStore
	driver.Locker
	driver.SlotSeeder
	driver.LayoutKeeper
	driver.Purger
	driver.LockSealer
	driver.RangeAdvancer
	driver.Identifier
	driver.Pinger
	// Not the listers (driver.RangeLister, LockLister): the portable layer
	// would list through them, past a wrapper's Keys.
}

// wrapSuite is the memory driver's suite with every store wrapped.
func wrapSuite(wrap func(memDriver) driver.Store) func(*testing.T) tck.Suite {
	return func(*testing.T) tck.Suite {
		s := memSuite()
		s.NewHarness = func(context.Context, *testing.T) (tck.Harness, error) {
			return wrapHarness{name: fmt.Sprintf("tck-wrapped-%d", wrapStates.Add(1)), wrap: wrap}, nil
		}
		return s
	}
}

var wrapStates atomic.Int64

// wrapHarness opens memory stores on one named state, each wrapped.
type wrapHarness struct {
	name string
	wrap func(memDriver) driver.Store
}

func (h wrapHarness) NewStore(context.Context) (driver.Store, error) {
	d, err := openMemory(map[string]string{"name": h.name})
	if err != nil {
		return nil, err
	}
	return h.wrap(d.(memDriver)), nil
}

func (wrapHarness) Close() error { return nil }

// dupRange hands every seventh range out at the start of the previous one.
type dupRange struct {
	memDriver
	mu    sync.Mutex
	calls int
	last  map[string]int64
}

func (d *dupRange) Next(ctx context.Context, key string, step int64) (int64, error) {
	d.mu.Lock()
	d.calls++
	last, seen := d.last[key]
	again := seen && d.calls%7 == 0
	d.mu.Unlock()
	if again {
		return last, nil
	}
	start, err := d.memDriver.Next(ctx, key, step)
	if err == nil {
		d.mu.Lock()
		if d.last == nil {
			d.last = map[string]int64{}
		}
		d.last[key] = start
		d.mu.Unlock()
	}
	return start, err
}

// forgetSeal reports the value Seal would return, but seals nothing.
type forgetSeal struct{ memDriver }

func (f forgetSeal) Seal(ctx context.Context, key string) (int64, error) {
	next, _, err := f.memDriver.Current(ctx, key)
	return next, err
}

// initOverwrite accepts Init at any value of an existing key, changing
// nothing.
type initOverwrite struct{ memDriver }

func (s initOverwrite) Init(ctx context.Context, key string, next int64) error {
	if err := s.memDriver.Init(ctx, key, next); !errors.Is(err, driver.ErrConfigMismatch) {
		return err
	}
	return nil
}

// overflowPretend answers an allocation past MaxInt64 with the current
// value instead of ErrExhausted.
type overflowPretend struct{ memDriver }

func (s overflowPretend) Next(ctx context.Context, key string, step int64) (int64, error) {
	start, err := s.memDriver.Next(ctx, key, step)
	if errors.Is(err, driver.ErrExhausted) {
		start, _, err = s.memDriver.Current(ctx, key)
	}
	return start, err
}

// keysParents lists the parents of nested keys as keys too, as a listing
// of every node under a root would.
type keysParents struct{ memDriver }

func (s keysParents) Keys(ctx context.Context) ([]string, error) {
	keys, err := s.memDriver.Keys(ctx)
	if err != nil {
		return nil, err
	}
	all := map[string]bool{}
	for _, k := range keys {
		all[k] = true
		for i := range k {
			if k[i] == '/' {
				all[k[:i]] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(all)), nil
}

// configIgnored uses a namespace with whatever settings it was created
// with.
type configIgnored struct{ memDriver }

func (s configIgnored) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	l, err := s.memDriver.Acquire(ctx, req)
	if !errors.Is(err, driver.ErrConfigMismatch) {
		return l, err
	}
	nss, nerr := s.memDriver.Namespaces(ctx)
	if nerr != nil {
		return l, err
	}
	for _, ns := range nss {
		if ns.Name == req.Namespace.Name {
			req.Namespace = ns
		}
	}
	return s.memDriver.Acquire(ctx, req)
}

// ignoreFloor starts every term after the first at floor 0.
type ignoreFloor struct{ memDriver }

func (f ignoreFloor) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	l, err := f.memDriver.Acquire(ctx, req)
	if l.Fence > 1 {
		l.Floor = 0
	}
	return l, err
}

// ignoreUsed releases as if used were never given: safe, but not what
// docs/design.md (Slot leases) says the next floor is.
type ignoreUsed struct{ memDriver }

func (u ignoreUsed) Release(ctx context.Context, l driver.Lease, _ int64) error {
	return u.memDriver.Release(ctx, l, -1)
}

// staticFence reports fence 1 for every term, keeping the real one in
// State so that renewals and releases still work.
type staticFence struct{ memDriver }

type realFence struct {
	fence int64
	state any
}

func (s staticFence) hide(l driver.Lease) driver.Lease {
	l.State = realFence{l.Fence, l.State}
	l.Fence = 1
	return l
}

func (s staticFence) restore(l driver.Lease) driver.Lease {
	if r, ok := l.State.(realFence); ok {
		l.Fence, l.State = r.fence, r.state
	}
	return l
}

func (s staticFence) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	l, err := s.memDriver.Acquire(ctx, req)
	if err != nil {
		return l, err
	}
	return s.hide(l), nil
}

func (s staticFence) Renew(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	r, err := s.memDriver.Renew(ctx, s.restore(l))
	if err != nil {
		return l, err
	}
	return s.hide(r), nil
}

func (s staticFence) Release(ctx context.Context, l driver.Lease, used int64) error {
	return s.memDriver.Release(ctx, s.restore(l), used)
}

// heldSlots counts the slots of ns with a term, ignoring expiry when live
// is false, and reports whether the requester could keep or reclaim one.
func heldSlots(ctx context.Context, s memDriver, req driver.AcquireRequest, live bool) (held int, own bool) {
	infos, err := s.Slots(ctx, req.Namespace.Name)
	if err != nil {
		return 0, false
	}
	now := time.Now().UnixMilli()
	for _, in := range infos {
		if in.Owner == "" || (live && now >= in.ExpiresAt) {
			continue
		}
		held++
		if in.Owner == req.Owner && (in.Incarnation == req.Incarnation || req.Reclaim) {
			own = true
		}
	}
	return held, own
}

// ignoreExpiry treats expired terms as live: no takeover after a crash.
type ignoreExpiry struct{ memDriver }

func (s ignoreExpiry) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	if held, own := heldSlots(ctx, s.memDriver, req, false); held == req.Namespace.Limit && !own {
		return driver.Lease{}, fmt.Errorf("every slot has a term: %w", driver.ErrExhausted)
	}
	return s.memDriver.Acquire(ctx, req)
}

// earlyExhausted gives up when a single slot is left.
type earlyExhausted struct{ memDriver }

func (s earlyExhausted) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	if held, own := heldSlots(ctx, s.memDriver, req, true); held >= req.Namespace.Limit-1 && held > 0 && !own {
		return driver.Lease{}, fmt.Errorf("one slot left: %w", driver.ErrExhausted)
	}
	return s.memDriver.Acquire(ctx, req)
}

// ignorePreferred drops the preferred slot (0 is always tried anyway).
type ignorePreferred struct{ memDriver }

func (s ignorePreferred) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	req.Preferred = 0
	return s.memDriver.Acquire(ctx, req)
}

// renewBack reports renewed times just below the ones it was given.
type renewBack struct{ memDriver }

func (s renewBack) Renew(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	r, err := s.memDriver.Renew(ctx, l)
	if err == nil {
		r.ExpiresAt, r.Ceiling = l.ExpiresAt-1, l.Ceiling-1
	}
	return r, err
}

// exhaustedAtMax refuses an allocation ending exactly at math.MaxInt64.
type exhaustedAtMax struct{ memDriver }

func (s exhaustedAtMax) Next(ctx context.Context, key string, step int64) (int64, error) {
	next, _, err := s.memDriver.Current(ctx, key)
	if err == nil && next == math.MaxInt64-step {
		return 0, fmt.Errorf("next %d plus step %d: %w", next, step, driver.ErrExhausted)
	}
	return s.memDriver.Next(ctx, key, step)
}

// exhaustedAtMaxUnseen refuses an allocation ending exactly at
// math.MaxInt64 at its first Next of a key it has not written (the SQL
// drivers' upsert path, with an off-by-one of its own), and is right for
// the keys it has.
type exhaustedAtMaxUnseen struct {
	memDriver
	mu   sync.Mutex
	seen map[string]bool
}

func (s *exhaustedAtMaxUnseen) saw(key string) (seen bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen, s.seen[key] = s.seen[key], true
	return seen
}

func (s *exhaustedAtMaxUnseen) Init(ctx context.Context, key string, next int64) error {
	s.saw(key)
	return s.memDriver.Init(ctx, key, next)
}

func (s *exhaustedAtMaxUnseen) Next(ctx context.Context, key string, step int64) (int64, error) {
	if !s.saw(key) {
		next, _, err := s.memDriver.Current(ctx, key)
		if err == nil && next > 0 && next == math.MaxInt64-step { // a new key is inserted, not compared
			return 0, fmt.Errorf("next %d plus step %d: %w", next, step, driver.ErrExhausted)
		}
	}
	return s.memDriver.Next(ctx, key, step)
}

// overflowInvalid reports an allocation past math.MaxInt64 as a bad step.
type overflowInvalid struct{ memDriver }

func (s overflowInvalid) Next(ctx context.Context, key string, step int64) (int64, error) {
	start, err := s.memDriver.Next(ctx, key, step)
	if errors.Is(err, driver.ErrExhausted) {
		return 0, fmt.Errorf("step %d too large: %w", step, driver.ErrInvalidArgument)
	}
	return start, err
}

// initMaxRefused takes math.MaxInt64 for an invalid next value.
type initMaxRefused struct{ memDriver }

func (s initMaxRefused) Init(ctx context.Context, key string, next int64) error {
	if next == math.MaxInt64 {
		return fmt.Errorf("next %d out of range: %w", next, driver.ErrInvalidArgument)
	}
	return s.memDriver.Init(ctx, key, next)
}

// initSealedRefused refuses Init of a sealed key, even at its value.
type initSealedRefused struct{ memDriver }

func (s initSealedRefused) Init(ctx context.Context, key string, next int64) error {
	if _, sealed, err := s.memDriver.Current(ctx, key); err == nil && sealed {
		return fmt.Errorf("key is sealed: %w", driver.ErrSealed)
	}
	return s.memDriver.Init(ctx, key, next)
}

// sealExhausted seals through "Next of 0": a key at math.MaxInt64 (all
// handed out) gives ErrExhausted and stays unsealed.
type sealExhausted struct{ memDriver }

func (s sealExhausted) Seal(ctx context.Context, key string) (int64, error) {
	if next, _, err := s.memDriver.Current(ctx, key); err == nil && next == math.MaxInt64 {
		return 0, fmt.Errorf("key at %d: %w", next, driver.ErrExhausted)
	}
	return s.memDriver.Seal(ctx, key)
}

// slotsByFence lists a namespace's slots by fence, not by slot number.
type slotsByFence struct{ memDriver }

func (s slotsByFence) Slots(ctx context.Context, ns string) ([]driver.SlotInfo, error) {
	out, err := s.memDriver.Slots(ctx, ns)
	slices.SortStableFunc(out, func(a, b driver.SlotInfo) int { return cmp.Compare(b.Fence, a.Fence) })
	return out, err
}

// foldOptionKeys matches option keys whatever their case and spaces.
func foldOptionKeys(options map[string]string) (driver.Store, error) {
	folded := map[string]string{}
	for k, v := range options {
		folded[strings.ToLower(strings.TrimSpace(k))] = v
	}
	return openMemory(folded)
}
