package memory

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/cosid-go/store/driver"
)

// ownerIndexLen is how many of an owner's last slots are remembered.
const ownerIndexLen = 8

// namespace holds its fixed settings, its used slots and the owner index.
type namespace struct {
	limit     int
	tolerance time.Duration
	slots     map[int]*slot
	owners    map[string][]int // owner key -> slots held last, most recent first
}

// slot keeps exactly the fields the ZooKeeper driver stores in a slot node,
// plus the node's mtime, so both drivers compute the same lease times.
// Durations and times are milliseconds.
type slot struct {
	owner       string // empty when released
	incarnation string
	lastOwner   string
	fence       int64
	ttl         int64
	tolerance   int64
	floor       int64
	expiresMin  int64
	ceilingMin  int64
	nextFloor   int64
	mtime       int64
}

func (sl *slot) expiresAt() int64 { return driver.TermExpiresAt(sl.expiresMin, sl.mtime, sl.ttl) }
func (sl *slot) ceiling() int64 {
	return driver.TermCeiling(sl.ceilingMin, sl.expiresAt(), sl.tolerance)
}

// holds reports whether the slot's current term is the one l describes.
func (sl *slot) holds(l driver.Lease) bool {
	return sl != nil && sl.owner != "" && sl.owner == l.Owner &&
		sl.incarnation == l.Incarnation && sl.fence == l.Fence
}

func (sl *slot) lease(ns string, n int) driver.Lease {
	return driver.Lease{
		Namespace:   ns,
		Slot:        n,
		Owner:       sl.owner,
		Incarnation: sl.incarnation,
		Fence:       sl.fence,
		TTL:         time.Duration(sl.ttl) * time.Millisecond,
		Tolerance:   time.Duration(sl.tolerance) * time.Millisecond,
		Floor:       sl.floor,
		ExpiresAt:   sl.expiresAt(),
		Ceiling:     sl.ceiling(),
	}
}

// verdict is what an acquire may do with one slot.
type verdict int

const (
	busy     verdict = iota // live term of someone else
	newTerm                 // free, or a live term the request may reclaim
	liveTerm                // the requester's own live term: return it as it is
)

func judge(sl *slot, req driver.AcquireRequest, now int64) verdict {
	switch {
	case sl == nil || sl.owner == "" || now >= sl.expiresAt():
		return newTerm
	case sl.owner != req.Owner:
		return busy
	case sl.incarnation == req.Incarnation:
		return liveTerm
	case req.Reclaim:
		return newTerm
	}
	return busy
}

// Acquire leases a slot: the owner's last slots first, then the preferred
// slot, then the lowest free one.
func (s *Store) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	if err := s.begin(ctx); err != nil {
		return driver.Lease{}, err
	}
	defer s.st.mu.Unlock()
	ns, err := s.st.namespace(req.Namespace)
	if err != nil {
		return driver.Lease{}, err
	}
	now := s.st.clock()
	try := func(n int) (driver.Lease, bool) {
		sl := ns.slots[n]
		switch judge(sl, req, now) {
		case liveTerm:
			return sl.lease(req.Namespace.Name, n), true
		case newTerm:
			sl = startTerm(sl, req, ns.tolerance, now)
			ns.slots[n] = sl
			ns.remember(req.Owner, n)
			return sl.lease(req.Namespace.Name, n), true
		}
		return driver.Lease{}, false
	}
	first := append(slices.Clone(ns.owners[req.Owner]), req.Preferred)
	// A live term of this owner and incarnation is returned as it is, even
	// when the owner's index lists a free slot before it.
	for _, n := range first {
		if sl := ns.slots[n]; judge(sl, req, now) == liveTerm {
			return sl.lease(req.Namespace.Name, n), nil
		}
	}
	for _, n := range first {
		if l, ok := try(n); ok {
			return l, nil
		}
	}
	for n := range ns.limit {
		if l, ok := try(n); ok {
			return l, nil
		}
	}
	return driver.Lease{}, fmt.Errorf("all %d slots are held: %w", ns.limit, driver.ErrExhausted)
}

// startTerm returns the slot holding a new term for req. old is the slot
// as it was (nil when never used); its term, if still set, expired or is
// being reclaimed.
func startTerm(old *slot, req driver.AcquireRequest, tolerance time.Duration, now int64) *slot {
	sl := &slot{fence: 1}
	if old != nil {
		sl.fence = old.fence + 1
		sl.floor = old.nextFloor
		sl.lastOwner = old.lastOwner
		if old.owner != "" {
			// Not released: the old holder may have issued anything below
			// its ceiling.
			sl.floor = max(sl.floor, old.ceiling())
			sl.lastOwner = old.owner
		}
	}
	sl.owner = req.Owner
	sl.incarnation = req.Incarnation
	sl.ttl = req.TTL.Milliseconds()
	sl.tolerance = tolerance.Milliseconds()
	sl.expiresMin = 0
	sl.ceilingMin = sl.floor
	sl.nextFloor = sl.floor // until the term ends, the next one starts no lower
	sl.mtime = now
	return sl
}

// namespace returns the namespace, creating it with want's settings.
func (st *state) namespace(want driver.Namespace) (*namespace, error) {
	ns := st.spaces[want.Name]
	if ns == nil {
		ns = &namespace{
			limit:     want.Limit,
			tolerance: want.Tolerance,
			slots:     map[int]*slot{},
			owners:    map[string][]int{},
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

// remember puts n first in owner's index, without duplicates, keeping at
// most ownerIndexLen slots.
func (ns *namespace) remember(owner string, n int) {
	idx := []int{n}
	for _, m := range ns.owners[owner] {
		if m != n && len(idx) < ownerIndexLen {
			idx = append(idx, m)
		}
	}
	ns.owners[owner] = idx
}

// current returns the slot if it still holds l's term.
func (st *state) current(l driver.Lease) (*slot, error) {
	if ns := st.spaces[l.Namespace]; ns != nil {
		if sl := ns.slots[l.Slot]; sl.holds(l) {
			return sl, nil
		}
	}
	return nil, fmt.Errorf("slot no longer holds fence %d of %s/%s: %w",
		l.Fence, l.Owner, l.Incarnation, driver.ErrLeaseLost)
}

// Renew continues l's term, even after its expiry if nobody took the slot.
// The current times become lower bounds, so they never go back.
func (s *Store) Renew(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	if err := s.begin(ctx); err != nil {
		return l, err
	}
	defer s.st.mu.Unlock()
	sl, err := s.st.current(l)
	if err != nil {
		return l, err
	}
	sl.expiresMin = sl.expiresAt()
	sl.ceilingMin = sl.ceiling()
	sl.mtime = s.st.clock()
	return sl.lease(l.Namespace, l.Slot), nil
}

// Release ends l's term; used < 0 means unknown.
func (s *Store) Release(ctx context.Context, l driver.Lease, used int64) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.st.mu.Unlock()
	sl, err := s.st.current(l)
	if err != nil {
		return err
	}
	sl.nextFloor = driver.ReleasedFloor(used, sl.floor, sl.ceiling())
	sl.lastOwner = sl.owner
	sl.owner = ""
	sl.incarnation = ""
	sl.mtime = s.st.clock()
	return nil
}

// Namespaces lists every namespace, sorted by name.
func (s *Store) Namespaces(ctx context.Context) ([]driver.Namespace, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.st.mu.Unlock()
	out := make([]driver.Namespace, 0, len(s.st.spaces))
	for name, ns := range s.st.spaces {
		out = append(out, driver.Namespace{Name: name, Limit: ns.limit, Tolerance: ns.tolerance})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Slots lists the used slots of a namespace by slot number.
func (s *Store) Slots(ctx context.Context, name string) ([]driver.SlotInfo, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.st.mu.Unlock()
	ns := s.st.spaces[name]
	if ns == nil {
		return nil, fmt.Errorf("no namespace %q: %w", name, driver.ErrNotFound)
	}
	out := make([]driver.SlotInfo, 0, len(ns.slots))
	for n, sl := range ns.slots {
		out = append(out, driver.SlotInfo{
			Slot:        n,
			Owner:       sl.owner,
			Incarnation: sl.incarnation,
			LastOwner:   sl.lastOwner,
			Fence:       sl.fence,
			TTL:         time.Duration(sl.ttl) * time.Millisecond,
			Tolerance:   time.Duration(sl.tolerance) * time.Millisecond,
			Floor:       sl.floor,
			ExpiresAt:   sl.expiresAt(),
			Ceiling:     sl.ceiling(),
			NextFloor:   sl.nextFloor,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slot < out[j].Slot })
	return out, nil
}

// SeedSlot raises slot n's history for a migration (see driver.SlotSeeder).
// A slot never used here becomes a released slot with the given fence and
// next floor, so its next term gets fence+1 and a floor of at least
// nextFloor, as after a release. A term that expired without a release is
// ended, as a takeover would end it: its next floor takes in its ceiling,
// and a late Renew of it fails instead of continuing below the seeded floor.
func (s *Store) SeedSlot(ctx context.Context, want driver.Namespace, n int, fence, nextFloor int64) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.st.mu.Unlock()
	ns, err := s.st.namespace(want)
	if err != nil {
		return err
	}
	now := s.st.clock()
	sl := ns.slots[n]
	if sl == nil {
		ns.slots[n] = &slot{fence: fence, nextFloor: nextFloor, mtime: now}
		return nil
	}
	if sl.owner != "" && now < sl.expiresAt() {
		return fmt.Errorf("slot %d has a live term of %s (fence %d) until %d: %w",
			n, sl.owner, sl.fence, sl.expiresAt(), driver.ErrLocked)
	}
	changed := false
	if sl.owner != "" {
		sl.nextFloor = max(sl.nextFloor, sl.ceiling())
		sl.lastOwner = sl.owner
		sl.owner = ""
		sl.incarnation = ""
		changed = true
	}
	if fence > sl.fence {
		sl.fence = fence
		changed = true
	}
	if nextFloor > sl.nextFloor {
		sl.nextFloor = nextFloor
		changed = true
	}
	if changed {
		// A write, like the ZooKeeper driver's set-data, which stamps mtime.
		sl.mtime = now
	}
	return nil
}
