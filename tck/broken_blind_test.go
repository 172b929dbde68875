package tck_test

// Broken variants for the checks that the blind bug sets of issue 39 (bugs
// written from the contract alone, without the kit) showed missing: each
// wraps the memory driver with one such bug.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/memfault"
	"github.com/cosid-go/store/tck"
)

func init() {
	wrapped := func(name, catch string, wrap func(memDriver) driver.Store) variant {
		return variant{name: name, checks: []string{catch}, broken: true, suite: wrapSuite(wrap)}
	}
	variants = append(variants,
		wrapped("purge-report-no-owners", "Purge/Everything", func(s memDriver) driver.Store { return purgeReportNoOwners{s} }),
		wrapped("exhausted-names-only-all", "History/FenceAtMax", func(s memDriver) driver.Store { return exhaustedNamesOnlyAll{s} }),
		wrapped("init-unread-sealed", "Ranges/Seal", func(s memDriver) driver.Store {
			return &initUnreadSealed{memDriver: s, read: map[string]bool{}}
		}),
		wrapped("search-misses-last", "Slots/LastFree", func(s memDriver) driver.Store { return searchMissesLast{s} }),
		variant{name: "corrupt-refused", checks: []string{"Operator/CorruptKey"}, suite: corruptSuite(false)},
		variant{name: "corrupt-repaired", checks: []string{"Operator/CorruptKey"}, broken: true, suite: corruptSuite(true)},
		variant{name: "deleted-lock-told", checks: []string{"Operator/DeletedLock"}, suite: deleteLockSuite(true)},
		variant{name: "deleted-lock-trusted", checks: []string{"Operator/DeletedLock"}, broken: true, suite: deleteLockSuite(false)},
		variant{name: "deleted-ns-refused", checks: []string{"Operator/DeletedNamespace"}, suite: nsDeleteSuite("")},
		variant{name: "deleted-ns-recreated", checks: []string{"Operator/DeletedNamespace"}, broken: true, suite: nsDeleteSuite("recreate")},
		variant{name: "deleted-ns-renewed", checks: []string{"Operator/DeletedNamespace"}, broken: true, suite: nsDeleteSuite("renew")},
		variant{name: "waiters-unraised", checks: []string{"Locks/RaiseFences"}, broken: true, suite: func(*testing.T) tck.Suite {
			raised := &atomic.Int64{} // one per suite: the stores of one state share it
			return wrapSuite(func(s memDriver) driver.Store { return waitersUnraised{s, raised} })(nil)
		}},
		variant{name: "malformed-values-refused", checks: []string{"Options/MalformedValue"}, suite: malformedValuesSuite(false)},
		variant{name: "malformed-value-taken", checks: []string{"Options/MalformedValue"}, broken: true, suite: malformedValuesSuite(true)},
		wrapped("driver-keys-unsealed", "Ranges/KeysSealed", func(s memDriver) driver.Store {
			return driverKeysUnsealed{s, s.(driver.RangeLister)}
		}),
	)
}

// purgeReportNoOwners purges everything but leaves the owner indexes out of
// what it reports deleted.
type purgeReportNoOwners struct{ memDriver }

func (s purgeReportNoOwners) Purge(ctx context.Context) ([]string, error) {
	deleted, err := s.memDriver.Purge(ctx)
	out := []string{}
	for _, d := range deleted {
		if !strings.HasPrefix(d, "owner ") {
			out = append(out, d)
		}
	}
	return out, err
}

// exhaustedNamesOnlyAll names the slots it passed over (a fence at
// MaxInt64) only when it passed over every slot: beside a held slot, its
// ErrExhausted says only that the slots are held.
type exhaustedNamesOnlyAll struct{ memDriver }

func (s exhaustedNamesOnlyAll) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	l, err := s.memDriver.Acquire(ctx, req)
	if !errors.Is(err, driver.ErrExhausted) {
		return l, err
	}
	infos, _ := s.Slots(ctx, req.Namespace.Name)
	for _, in := range infos {
		if in.Owner != "" {
			return l, fmt.Errorf("all %d slots are held: %w", req.Namespace.Limit, driver.ErrExhausted)
		}
	}
	return l, err
}

// driverKeysUnsealed pages its keys right (driver.RangeLister, what the
// store lists with) but its own Keys leaves sealed keys out.
type driverKeysUnsealed struct {
	memDriver
	lister driver.RangeLister
}

func (s driverKeysUnsealed) ListRanges(ctx context.Context, after string, limit int) ([]driver.KeyState, string, error) {
	return s.lister.ListRanges(ctx, after, limit)
}

func (s driverKeysUnsealed) Keys(ctx context.Context) ([]string, error) {
	keys, err := s.memDriver.Keys(ctx)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, k := range keys {
		if _, sealed, err := s.Current(ctx, k); err == nil && !sealed {
			out = append(out, k)
		}
	}
	return out, nil
}

// initUnreadSealed is right about a key it has read (it remembers it) but,
// for a key it has not, takes the stored value with its seal suffix for
// the next value: Init at a sealed key's value is a mismatch.
type initUnreadSealed struct {
	memDriver
	mu   sync.Mutex
	read map[string]bool
}

func (s *initUnreadSealed) saw(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.read[key] = true
}

func (s *initUnreadSealed) Next(ctx context.Context, key string, step int64) (int64, error) {
	s.saw(key)
	return s.memDriver.Next(ctx, key, step)
}

func (s *initUnreadSealed) Current(ctx context.Context, key string) (int64, bool, error) {
	s.saw(key)
	return s.memDriver.Current(ctx, key)
}

func (s *initUnreadSealed) Seal(ctx context.Context, key string) (int64, error) {
	s.saw(key)
	return s.memDriver.Seal(ctx, key)
}

func (s *initUnreadSealed) Init(ctx context.Context, key string, next int64) error {
	s.mu.Lock()
	read := s.read[key]
	s.mu.Unlock()
	if !read {
		if cur, sealed, err := s.memDriver.Current(ctx, key); err == nil && sealed {
			return fmt.Errorf("key holds \"%d:sealed\", not %d: %w", cur, next, driver.ErrConfigMismatch)
		}
	}
	s.saw(key)
	return s.memDriver.Init(ctx, key, next)
}

// searchMissesLast never finds a namespace's last slot by its search (a
// read of the rest of the namespace that stops one short): only as the
// preferred slot or the owner's own.
type searchMissesLast struct{ memDriver }

func (s searchMissesLast) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	l, err := s.memDriver.Acquire(ctx, req)
	last := req.Namespace.Limit - 1
	if err != nil || l.Slot != last || req.Preferred == last || req.Namespace.Limit < 2 {
		return l, err
	}
	if infos, _ := s.Slots(ctx, req.Namespace.Name); len(infos) < req.Namespace.Limit {
		return l, err // only in a namespace whose every slot was used
	}
	if err := s.memDriver.Release(ctx, l, -1); err != nil {
		return driver.Lease{}, err
	}
	return driver.Lease{}, fmt.Errorf("all %d slots are held: %w", req.Namespace.Limit, driver.ErrExhausted)
}

// corruptHarness is a Corrupter over the memory driver, whose state has
// no text to write wrong: a corrupted key is marked, and its stores read
// a marked key as a driver reads a record that does not parse: refused
// (ErrCorrupt), or, with repair, started over at 0.
type corruptHarness struct {
	memHarness
	repair  bool
	corrupt *sync.Map // key -> true
}

func corruptSuite(repair bool) func(*testing.T) tck.Suite {
	return harnessSuite(func(h memHarness) tck.Harness {
		return corruptHarness{memHarness: h, repair: repair, corrupt: &sync.Map{}}
	})
}

func (h corruptHarness) NewStore(ctx context.Context) (driver.Store, error) {
	return h.wrapped(ctx, func(d memDriver) driver.Store { return corruptStore{d, h} })
}

func (h corruptHarness) CorruptRangeKey(_ context.Context, key string, form int) (bool, error) {
	if form > 0 {
		return false, nil
	}
	h.corrupt.Store(key, true)
	return true, nil
}

type corruptStore struct {
	memDriver
	h corruptHarness
}

func (s corruptStore) marked(key string) bool { _, ok := s.h.corrupt.Load(key); return ok }

func (s corruptStore) Next(ctx context.Context, key string, step int64) (int64, error) {
	switch {
	case !s.marked(key):
		return s.memDriver.Next(ctx, key, step)
	case s.h.repair:
		return 0, nil // a record that does not parse taken for a key at 0
	}
	return 0, fmt.Errorf("range key %q does not parse: %w", key, driver.ErrCorrupt)
}

func (s corruptStore) Current(ctx context.Context, key string) (int64, bool, error) {
	switch {
	case !s.marked(key):
		return s.memDriver.Current(ctx, key)
	case s.h.repair:
		return 0, false, nil
	}
	return 0, false, fmt.Errorf("range key %q does not parse: %w", key, driver.ErrCorrupt)
}

// deleteLockHarness is a LockDeleter over the memory driver: its stores'
// holds are kept by name, and a deleted one is unlocked under its holder
// (the record gone, the next waiter granted). With tell, the hold's Lost
// closes then, as a driver watching its record does; without, the holder
// goes on trusting it.
type deleteLockHarness struct {
	memHarness
	tell  bool
	holds *sync.Map // name -> *deletableLock
}

func deleteLockSuite(tell bool) func(*testing.T) tck.Suite {
	return harnessSuite(func(h memHarness) tck.Harness {
		return deleteLockHarness{memHarness: h, tell: tell, holds: &sync.Map{}}
	})
}

func (h deleteLockHarness) NewStore(ctx context.Context) (driver.Store, error) {
	return h.wrapped(ctx, func(d memDriver) driver.Store { return deleteLockStore{d, h} })
}

func (h deleteLockHarness) DeleteLockHolder(ctx context.Context, name string) error {
	v, ok := h.holds.LoadAndDelete(name)
	if !ok {
		return fmt.Errorf("lock %q has no holder", name)
	}
	l := v.(*deletableLock)
	l.deleted.Store(true)
	if h.tell {
		close(l.gone)
	}
	return l.Lock.Unlock(ctx)
}

type deleteLockStore struct {
	memDriver
	h deleteLockHarness
}

func (s deleteLockStore) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	inner, err := s.memDriver.Lock(ctx, name, owner, wait)
	if err != nil {
		return nil, err
	}
	l := &deletableLock{Lock: inner, gone: make(chan struct{}), lost: make(chan struct{})}
	go func() { // ends when the hold is lost, deleted or its store closes
		select {
		case <-inner.Lost():
		case <-l.gone:
		}
		close(l.lost)
	}()
	s.h.holds.Store(name, l)
	return l, nil
}

type deletableLock struct {
	driver.Lock
	deleted atomic.Bool
	gone    chan struct{} // closed by a delete the holder is told of
	lost    chan struct{}
}

func (l *deletableLock) Lost() <-chan struct{} { return l.lost }

func (l *deletableLock) Unlock(ctx context.Context) error {
	if l.deleted.Load() {
		return fmt.Errorf("the lock's record was deleted: %w", driver.ErrLeaseLost)
	}
	return l.Lock.Unlock(ctx)
}

// nsDeleteHarness is a NamespaceDeleter over the memory driver, whose
// namespaces cannot lose their record alone: a deleted one is marked, and
// its stores' Acquire refuses it (ErrCorrupt), or, in mode "recreate",
// makes it again unsealed, as a driver that creates a missing namespace's
// record without looking at its slots does; in mode "renew", Renew takes
// a missing namespace record for an unsealed namespace.
type nsDeleteHarness struct {
	memHarness
	mode    string
	deleted *sync.Map // namespace -> true
}

func nsDeleteSuite(mode string) func(*testing.T) tck.Suite {
	return harnessSuite(func(h memHarness) tck.Harness {
		return nsDeleteHarness{memHarness: h, mode: mode, deleted: &sync.Map{}}
	})
}

func (h nsDeleteHarness) NewStore(ctx context.Context) (driver.Store, error) {
	return h.wrapped(ctx, func(d memDriver) driver.Store { return nsDeleteStore{d, h} })
}

func (h nsDeleteHarness) DeleteNamespace(_ context.Context, ns string) error {
	h.deleted.Store(ns, true)
	return nil
}

type nsDeleteStore struct {
	memDriver
	h nsDeleteHarness
}

func (s nsDeleteStore) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	if _, gone := s.h.deleted.Load(req.Namespace.Name); gone {
		if s.h.mode != "recreate" {
			return driver.Lease{}, fmt.Errorf("namespace %q has no record but slots: %w", req.Namespace.Name, driver.ErrCorrupt)
		}
		err := memfault.Edit(ctx, s.memDriver, func(st memfault.State) error {
			if sp, ok := st.Space(req.Namespace.Name); ok {
				sp.SetSealed(false) // made again, with the request's settings
			}
			return nil
		})
		if err != nil {
			return driver.Lease{}, err
		}
		s.h.deleted.Delete(req.Namespace.Name)
	}
	return s.memDriver.Acquire(ctx, req)
}

func (s nsDeleteStore) Renew(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	if _, gone := s.h.deleted.Load(l.Namespace); !gone {
		return s.memDriver.Renew(ctx, l)
	}
	if s.h.mode != "renew" {
		return l, fmt.Errorf("namespace %q has no record: %w", l.Namespace, driver.ErrLeaseLost)
	}
	seal := func(sealed bool) error {
		return memfault.Edit(ctx, s.memDriver, func(st memfault.State) error {
			if sp, ok := st.Space(l.Namespace); ok {
				sp.SetSealed(sealed)
			}
			return nil
		})
	}
	if err := seal(false); err != nil { // no record, no seal
		return l, err
	}
	defer func() { _ = seal(true) }() // the variant's bug is the renewal
	return s.memDriver.Renew(ctx, l)
}

// waitersUnraised lists each queue entry's fence as it was before any
// RaiseLockFences: the raise reaches the holds but not the listing.
type waitersUnraised struct {
	memDriver
	raised *atomic.Int64
}

func (s waitersUnraised) RaiseLockFences(ctx context.Context, floor int64) error {
	before, err := s.SealLocks(ctx) // the fence counter now; a seal RaiseLockFences undoes
	if err != nil {
		return err
	}
	if err := s.memDriver.RaiseLockFences(ctx, floor); err != nil {
		return err
	}
	if floor > before {
		s.raised.Add(floor - before)
	}
	return nil
}

func (s waitersUnraised) Waiters(ctx context.Context, name string) ([]driver.Waiter, error) {
	ws, err := s.memDriver.Waiters(ctx, name)
	for i := range ws {
		ws[i].Fence -= s.raised.Load()
	}
	return ws, err
}

// malformedValuesSuite names two malformed values of the memory driver's
// create option; lax takes the second, "yes", for "true", as a driver
// that parses booleans its own way would (the first, "maybe", it still
// refuses, so that MalformedOptions alone would not tell).
func malformedValuesSuite(lax bool) func(*testing.T) tck.Suite {
	return func(*testing.T) tck.Suite {
		s := memSuite()
		s.MalformedOptions = map[string]string{"create": "maybe"}
		s.MalformedValues = map[string][]string{"create": {"yes", "01"}}
		if lax {
			s.Factory = func(options map[string]string) (driver.Store, error) {
				if options["create"] == "yes" {
					options = maps.Clone(options)
					options["create"] = "true"
				}
				return openMemory(options)
			}
		}
		return s
	}
}
