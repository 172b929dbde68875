package memory

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cosid-go/store/driver"
)

// namespace holds its fixed settings, its used slots and the owner index.
// A slot is a driver.SlotRecord, the fields the ZooKeeper driver stores in
// a slot node plus the node's mtime, so both drivers apply the same rules
// (package driver's) to the same data.
type namespace struct {
	limit      int
	tolerance  time.Duration
	slots      map[int]driver.SlotRecord
	owners     map[string][]int // owner key -> slots held last, most recent first
	fenceFloor int64            // fences of this namespace start above it (see Purge)
	sealed     bool             // SealNamespace: no new term, no renewal
	layout     string           // KeepLayout's, "" until recorded
}

// slot returns slot n's record; a slot never used has only the fence floor.
func (ns *namespace) slot(n int) driver.SlotRecord {
	if r, ok := ns.slots[n]; ok {
		return r
	}
	return driver.SlotRecord{Fence: ns.fenceFloor}
}

// Acquire leases a slot: the owner's last slots first, then the preferred
// slot (driver.FirstSlots), then the first free one from the acquire's own
// point (driver.SearchStart).
func (s *driverStore) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	if err := s.begin(ctx); err != nil {
		return driver.Lease{}, err
	}
	defer s.st.mu.Unlock()
	ns, err := s.st.namespace(req.Namespace)
	if err != nil {
		return driver.Lease{}, err
	}
	now := s.st.clock()
	first := driver.FirstSlots(ns.owners[req.Owner], req.Preferred, ns.limit)
	passed := map[int]error{} // slots passed over as unusable, and why
	// judge judges slot n; each slot is judged once.
	judge := func(n int) driver.SlotVerdict {
		v, err := ns.slot(n).Judge(req, now)
		if err != nil {
			passed[n] = err
		}
		return v
	}
	take := -1
	for _, n := range first {
		switch judge(n) {
		case driver.SlotOwn:
			// A live term of this owner and incarnation is returned as it
			// is, even when the owner's index lists a free slot before it.
			return ns.slot(n).Lease(req.Namespace.Name, n), nil
		case driver.SlotFree:
			if take < 0 {
				take = n
			}
		}
	}
	// One at a time under the mutex, this driver never loses a race; it
	// searches from the acquire's own point as every driver does.
	for n := range driver.SearchOrder(driver.SearchStart(req.Owner, req.Incarnation, ns.limit), ns.limit) {
		if take >= 0 {
			break
		}
		if slices.Contains(first, n) {
			continue
		}
		if v := judge(n); v == driver.SlotOwn {
			return ns.slot(n).Lease(req.Namespace.Name, n), nil
		} else if v == driver.SlotFree {
			take = n
		}
	}
	if take >= 0 {
		r := ns.slot(take).NewTerm(req, now)
		ns.slots[take] = r
		ns.owners[req.Owner] = driver.RememberSlot(ns.owners[req.Owner], take)
		return r.Lease(req.Namespace.Name, take), nil
	}
	if len(passed) > 0 {
		var why []string
		for _, n := range slices.Sorted(maps.Keys(passed)) {
			why = append(why, fmt.Sprintf("slot %d: %v", n, passed[n]))
		}
		return driver.Lease{}, fmt.Errorf("no free slot among %d; passed over %s: %w", ns.limit, strings.Join(why, "; "), driver.ErrExhausted)
	}
	return driver.Lease{}, fmt.Errorf("all %d slots are held: %w", ns.limit, driver.ErrExhausted)
}

// namespace returns the namespace, creating it with want's settings. A
// sealed one gives ErrSealed, before its settings are compared.
func (st *state) namespace(want driver.Namespace) (*namespace, error) {
	ns := st.spaces[want.Name]
	if ns != nil && ns.sealed {
		return nil, sealedErr(want.Name)
	}
	if ns == nil {
		ns = &namespace{
			limit:      want.Limit,
			tolerance:  want.Tolerance,
			slots:      map[int]driver.SlotRecord{},
			owners:     map[string][]int{},
			fenceFloor: st.slotFenceFloor,
		}
		st.spaces[want.Name] = ns
		return ns, nil
	}
	if ns.limit != want.Limit || ns.tolerance != want.Tolerance {
		return nil, fmt.Errorf("namespace has limit %d and tolerance %v, not limit %d and tolerance %v: %w",
			ns.limit, ns.tolerance, want.Limit, want.Tolerance, driver.ErrConfigMismatch)
	}
	return ns, nil
}

func sealedErr(ns string) error {
	return fmt.Errorf("namespace %q is sealed: %w", ns, driver.ErrSealed)
}

// rewrite applies change to l's slot and stores the result: the memory
// driver's atomic read-modify-write (the state's mutex is held).
func (st *state) rewrite(l driver.Lease, change func(r driver.SlotRecord) (driver.SlotRecord, error)) (driver.SlotRecord, error) {
	ns := st.spaces[l.Namespace]
	var r driver.SlotRecord
	if ns != nil {
		r = ns.slots[l.Slot]
	}
	r, err := change(r)
	if err != nil {
		return r, err
	}
	ns.slots[l.Slot] = r // change succeeds only on a record that holds l's term
	return r, nil
}

// Renew continues l's term, even after its expiry if nobody took the slot.
func (s *driverStore) Renew(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	if err := s.begin(ctx); err != nil {
		return l, err
	}
	defer s.st.mu.Unlock()
	// The seal is checked under the mutex that the write holds.
	if ns := s.st.spaces[l.Namespace]; ns != nil && ns.sealed {
		return l, sealedErr(l.Namespace)
	}
	now := s.st.clock()
	r, err := s.st.rewrite(l, func(r driver.SlotRecord) (driver.SlotRecord, error) { return r.Renewed(l, now) })
	if err != nil {
		return l, err
	}
	return r.Lease(l.Namespace, l.Slot), nil
}

// Release ends l's term; used < 0 means unknown.
func (s *driverStore) Release(ctx context.Context, l driver.Lease, used int64) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.st.mu.Unlock()
	now := s.st.clock()
	_, err := s.st.rewrite(l, func(r driver.SlotRecord) (driver.SlotRecord, error) { return r.Released(l, used, now) })
	return err
}

// Namespaces lists every namespace, sorted by name.
func (s *driverStore) Namespaces(ctx context.Context) ([]driver.Namespace, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.st.mu.Unlock()
	out := make([]driver.Namespace, 0, len(s.st.spaces))
	for name, ns := range s.st.spaces {
		out = append(out, driver.Namespace{Name: name, Limit: ns.limit, Tolerance: ns.tolerance, Sealed: ns.sealed})
	}
	slices.SortFunc(out, func(a, b driver.Namespace) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// Slots lists the used slots of a namespace by slot number.
func (s *driverStore) Slots(ctx context.Context, name string) ([]driver.SlotInfo, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.st.mu.Unlock()
	ns := s.st.spaces[name]
	if ns == nil {
		return nil, fmt.Errorf("no namespace %q: %w", name, driver.ErrNotFound)
	}
	out := make([]driver.SlotInfo, 0, len(ns.slots))
	for n, r := range ns.slots {
		out = append(out, r.Info(n))
	}
	slices.SortFunc(out, func(a, b driver.SlotInfo) int { return cmp.Compare(a.Slot, b.Slot) })
	return out, nil
}

// SealNamespace seals namespace name (see driver.SlotLeaseStore): Acquire
// and Renew check the flag under the same mutex as their write. A missing
// namespace is created sealed, with no settings (Limit 0).
func (s *driverStore) SealNamespace(ctx context.Context, name string) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.st.mu.Unlock()
	ns := s.st.spaces[name]
	if ns == nil {
		ns = &namespace{
			slots:      map[int]driver.SlotRecord{},
			owners:     map[string][]int{},
			fenceFloor: s.st.slotFenceFloor,
		}
		s.st.spaces[name] = ns
	}
	ns.sealed = true
	return nil
}

// SeedSlot raises slot n's history for a migration (see driver.SlotSeeder
// and driver.SlotRecord.Seeded).
func (s *driverStore) SeedSlot(ctx context.Context, want driver.Namespace, n int, fence, nextFloor int64) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.st.mu.Unlock()
	ns, err := s.st.namespace(want)
	if err != nil {
		return err
	}
	r, changed, err := ns.slot(n).Seeded(fence, nextFloor, s.st.clock())
	if err != nil {
		return fmt.Errorf("slot %d: %w", n, err)
	}
	if changed {
		ns.slots[n] = r
	}
	return nil
}

// KeepLayout records the namespace's layout if it has none (see
// driver.LayoutKeeper).
func (s *driverStore) KeepLayout(ctx context.Context, want driver.Namespace, layout string) (string, error) {
	if err := s.begin(ctx); err != nil {
		return "", err
	}
	defer s.st.mu.Unlock()
	ns, err := s.st.namespace(want)
	if err != nil {
		return "", err
	}
	if ns.layout == "" {
		ns.layout = layout
	}
	return ns.layout, nil
}

// Layout returns the namespace's layout (see driver.LayoutKeeper).
func (s *driverStore) Layout(ctx context.Context, name string) (string, error) {
	if err := s.begin(ctx); err != nil {
		return "", err
	}
	defer s.st.mu.Unlock()
	if ns := s.st.spaces[name]; ns != nil {
		return ns.layout, nil
	}
	return "", nil
}
