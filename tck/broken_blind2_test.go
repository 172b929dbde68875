package tck_test

// Broken variants for the checks that the second blind bug sets of issue
// 39 (bugs written from the contract and the drivers' code, without the
// kit) showed missing: each wraps the memory driver with one such bug.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/memfault"
	"github.com/cosid-go/store/tck"
)

func init() {
	variants = append(variants,
		variant{name: "create-false-missing-refused", checks: []string{"Options/CreateFalse"}, suite: createFalseSuite(nil)},
		variant{name: "create-false-creates", checks: []string{"Options/CreateFalse"}, broken: true, suite: createFalseSuite(createIgnored)},
		variant{name: "create-false-refusal-creates", checks: []string{"Options/CreateFalse"}, broken: true,
			suite: createFalseSuite(refusedAfterCreating)},
		variant{name: "index-new-slots-only", checks: []string{"Slots/ChoiceOrder"}, broken: true,
			suite: wrapSuite(func(s memDriver) driver.Store { return indexNewSlotsOnly{s} })},
		variant{name: "corrupt-slot-passed-over", checks: []string{"Operator/CorruptSlot"}, suite: slotCorruptSuite(passOver)},
		variant{name: "corrupt-slot-expiry-trusted", checks: []string{"Operator/CorruptSlot"}, broken: true, suite: slotCorruptSuite(trustExpiry)},
		variant{name: "corrupt-slot-refuses-namespace", checks: []string{"Operator/CorruptSlot"}, broken: true, suite: slotCorruptSuite(refuseAll)},
		variant{name: "refused-seal-seals", checks: []string{"Operator/RestoreRanges"}, broken: true, suite: sqliteSuite(refusedSealSealsOf)},
		variant{name: "seal-unguarded", checks: []string{"Operator/RestoreRanges"}, broken: true, suite: sqliteSuite(sealUnguardedOf)},
		variant{name: "namespaces-with-slots", checks: []string{"History/FenceAtMax"}, broken: true,
			suite: wrapSuite(func(s memDriver) driver.Store { return namespacesWithSlots{s} })},
		variant{name: "seed-under-fence-floor", checks: []string{"History/PurgeKeepsSlotFences"}, broken: true,
			suite: wrapSuite(func(s memDriver) driver.Store { return seedUnderFenceFloor{s} })},
	)
}

// createFalseSuite names a missing memory state (Suite.MissingOptions);
// factory, if set, is the suite's factory in the memory driver's place.
func createFalseSuite(factory func(map[string]string) (driver.Store, error)) func(*testing.T) tck.Suite {
	return func(*testing.T) tck.Suite {
		s := memSuite()
		s.MissingOptions = func(*testing.T) map[string]string {
			return map[string]string{"name": fmt.Sprintf("tck-self-missing-%d", memStates.Add(1))}
		}
		if factory != nil {
			s.Factory = factory
		}
		return s
	}
}

// createIgnored opens a missing memory state with create=false all the
// same, creating it.
func createIgnored(options map[string]string) (driver.Store, error) {
	o := maps.Clone(options)
	delete(o, driver.OptionCreate)
	return openMemory(o)
}

// refusedAfterCreating refuses a missing memory state with ErrNotFound,
// having created it first: a second open with create=false finds it.
func refusedAfterCreating(options map[string]string) (driver.Store, error) {
	d, err := openMemory(options)
	if !errors.Is(err, driver.ErrNotFound) {
		return d, err
	}
	made, merr := createIgnored(options)
	if merr != nil {
		return nil, merr
	}
	return nil, errors.Join(err, made.Close())
}

// indexNewSlotsOnly puts a slot in the owner's index only when the term is
// the slot's first: a slot another owner used before is taken without it
// (the SQL drivers write a used slot's row on another path than a new one).
type indexNewSlotsOnly struct{ memDriver }

func (s indexNewSlotsOnly) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	var before []int
	used := map[int]bool{}
	if err := memfault.Edit(ctx, s.memDriver, func(st memfault.State) error {
		if ns, ok := st.Space(req.Namespace.Name); ok {
			before = ns.Owners(req.Owner)
			for n := range ns.Slots() {
				used[n] = true
			}
		}
		return nil
	}); err != nil {
		return driver.Lease{}, err
	}
	l, err := s.memDriver.Acquire(ctx, req)
	if err != nil || !used[l.Slot] {
		return l, err
	}
	return l, memfault.Edit(ctx, s.memDriver, func(st memfault.State) error {
		if ns, ok := st.Space(req.Namespace.Name); ok {
			ns.SetOwners(req.Owner, before)
		}
		return nil
	})
}

// seedUnderFenceFloor seeds a slot never used from a zero record, not from
// the purged fence floor: the seeded fence may be below the purged ones.
type seedUnderFenceFloor struct{ memDriver }

func (s seedUnderFenceFloor) SeedSlot(ctx context.Context, want driver.Namespace, n int, fence, nextFloor int64) error {
	used := false
	if err := memfault.Edit(ctx, s.memDriver, func(st memfault.State) error {
		if ns, ok := st.Space(want.Name); ok {
			_, used = ns.Slots()[n]
		}
		return nil
	}); err != nil {
		return err
	}
	if err := s.memDriver.SeedSlot(ctx, want, n, fence, nextFloor); err != nil || used {
		return err
	}
	return memfault.Edit(ctx, s.memDriver, func(st memfault.State) error {
		if ns, ok := st.Space(want.Name); ok {
			r := ns.Slot(n)
			r.Fence = fence
			ns.SetSlot(n, r)
		}
		return nil
	})
}

// slotCorruptHarness is a SlotCorrupter over the memory driver: a
// corrupted slot is marked, and its stores pass it over (passOver); with
// trustExpiry, they take the stored expiry of form 0 (the term's record
// says expired) at its word instead, and start a term on the slot (the
// SQL drivers' search reads its stored expiry column); with refuseAll,
// one corrupt slot refuses every Acquire of the namespace (ErrCorrupt),
// as the SQL drivers did, against the contract.
type slotCorruptHarness struct {
	memHarness
	mode    corruptMode
	corrupt *sync.Map // "ns/slot" -> true
}

// corruptMode is what a slotCorruptStore does with a corrupted slot.
type corruptMode int

const (
	passOver    corruptMode = iota // passes it over
	trustExpiry                    // takes its stored expiry at its word
	refuseAll                      // refuses every Acquire of its namespace (ErrCorrupt)
)

func slotCorruptSuite(mode corruptMode) func(*testing.T) tck.Suite {
	return harnessSuite(func(h memHarness) tck.Harness {
		return slotCorruptHarness{memHarness: h, mode: mode, corrupt: &sync.Map{}}
	})
}

func (h slotCorruptHarness) NewStore(ctx context.Context) (driver.Store, error) {
	return h.wrapped(ctx, func(d memDriver) driver.Store { return slotCorruptStore{d, h} })
}

func (h slotCorruptHarness) CorruptSlot(_ context.Context, ns string, slot, form int) (bool, error) {
	if form > 0 {
		return false, nil
	}
	h.corrupt.Store(fmt.Sprintf("%s/%d", ns, slot), true)
	return true, nil
}

type slotCorruptStore struct {
	memDriver
	h slotCorruptHarness
}

func (s slotCorruptStore) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	for n := range req.Namespace.Limit {
		if _, ok := s.h.corrupt.Load(fmt.Sprintf("%s/%d", req.Namespace.Name, n)); !ok {
			continue
		}
		switch s.h.mode {
		case passOver:
			continue // held by its live term, which the memory driver passes over
		case refuseAll:
			return driver.Lease{}, fmt.Errorf("slot %d: its record does not parse: %w", n, driver.ErrCorrupt)
		}
		if err := memfault.Edit(ctx, s.memDriver, func(st memfault.State) error {
			if ns, ok := st.Space(req.Namespace.Name); ok {
				r := ns.Slot(n)
				r.ExpiresMin, r.Written = 0, 0 // expired at TTL past the epoch
				ns.SetSlot(n, r)
			}
			return nil
		}); err != nil {
			return driver.Lease{}, err
		}
	}
	return s.memDriver.Acquire(ctx, req)
}

// Renew refuses a corrupted slot's term, as a driver reading the record
// would (ErrCorrupt), whether or not it trusts the stored expiry.
func (s slotCorruptStore) Renew(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	if _, ok := s.h.corrupt.Load(fmt.Sprintf("%s/%d", l.Namespace, l.Slot)); ok {
		return driver.Lease{}, fmt.Errorf("slot %d: its record does not parse: %w", l.Slot, driver.ErrCorrupt)
	}
	return s.memDriver.Renew(ctx, l)
}

// refusedSealSealsStore is the SQLite driver whose Seal, refused by the
// regression guard after a restore (ErrCorrupt), writes the seal all the
// same: its write is an upsert run before the guard's check, not the
// update that only seals a key still where the store saw it.
type refusedSealSealsStore struct {
	driver.Store
	driver.RangeStore
	driver.SlotLeaseStore
	path string
}

func refusedSealSealsOf(path string, d driver.Store) driver.Store {
	return refusedSealSealsStore{Store: d, RangeStore: d.(driver.RangeStore), SlotLeaseStore: d.(driver.SlotLeaseStore), path: path}
}

func (s refusedSealSealsStore) Seal(ctx context.Context, key string) (int64, error) {
	next, err := s.RangeStore.Seal(ctx, key)
	if !errors.Is(err, driver.ErrCorrupt) {
		return next, err
	}
	d, oerr := openSQLite(s.path) // a store with no memory of the key seals it
	if oerr != nil {
		return 0, oerr
	}
	defer d.Close()
	_, _ = d.(driver.RangeStore).Seal(ctx, key)
	return 0, err
}

// sealUnguardedStore is the SQLite driver whose Seal skips the regression
// guard: after a restore it seals a key where the restore put it, below
// what the store handed out before, and returns that value.
type sealUnguardedStore struct{ refusedSealSealsStore }

func sealUnguardedOf(path string, d driver.Store) driver.Store {
	return sealUnguardedStore{refusedSealSealsOf(path, d).(refusedSealSealsStore)}
}

func (s sealUnguardedStore) Seal(ctx context.Context, key string) (int64, error) {
	d, err := openSQLite(s.path) // a store with no memory of the key
	if err != nil {
		return 0, err
	}
	defer d.Close()
	return d.(driver.RangeStore).Seal(ctx, key)
}

// namespacesWithSlots lists only the namespaces that have a used slot: one
// an Acquire created and found no slot to take in is not listed, as if
// the Acquire had not kept it.
type namespacesWithSlots struct{ memDriver }

func (s namespacesWithSlots) Namespaces(ctx context.Context) ([]driver.Namespace, error) {
	all, err := s.memDriver.Namespaces(ctx)
	if err != nil {
		return nil, err
	}
	out := []driver.Namespace{}
	for _, ns := range all {
		if infos, err := s.Slots(ctx, ns.Name); err != nil || len(infos) > 0 {
			out = append(out, ns)
		}
	}
	return out, nil
}
