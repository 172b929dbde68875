package tck

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// model is the contract of package driver as a small single-threaded
// program: what one storage holds, and what each operation must answer.
// It is written from the contract's sentences, not from driver.SlotRecord,
// so that a mistake in the shared slot rules shows as a difference too.
// Errors are returned as the sentinel the contract names; callers compare
// kinds with errors.Is.
type model struct {
	now    int64 // the store's clock, in ms; see clockKnown
	keys   map[string]*modelKey
	spaces map[string]*modelSpace
	locks  map[string]*modelLock

	// clockKnown is false for a driver whose clock the TCK cannot set: now
	// is then learned from each new term's ExpiresAt (see adoptNow).
	clockKnown bool
	// purgedSlotFence is the highest slot fence a purge deleted: slots of
	// namespaces created afterwards start above it.
	purgedSlotFence int64
	// keepSlotFloor is Suite.PurgeKeepsSlotFloor; purgedSlotFloor is then
	// the highest floor the next term of a slot a purge deleted would have
	// had: slots of namespaces created afterwards start there.
	keepSlotFloor   bool
	purgedSlotFloor int64
}

type modelKey struct {
	next   int64
	sealed bool
}

type modelSpace struct {
	ns     store.Namespace
	slots  map[int]*modelSlot
	owners map[string][]int // most recent first
	floor  int64            // fence floor: purgedSlotFence when created
	tfloor int64            // timestamp floor: purgedSlotFloor when created
}

// modelSlot is a used slot. ExpiresAt and Ceiling are kept as they stand;
// the contract speaks of them, not of how a driver stores them.
type modelSlot struct {
	owner, inc, lastOwner string
	fence                 int64
	ttl, tol              time.Duration
	floor                 int64
	expiresAt, ceiling    int64
	nextFloor             int64
}

// modelLock is a lock name's queue: holder first, then waiters in arrival
// order. lastFence is the highest fence any holder of the name got; it
// survives purges, as fences must.
type modelLock struct {
	queue     []*modelHold
	lastFence int64
	used      bool // listed or known since the last purge
}

// modelHold is one Lock call: waiting, holding, or ended.
type modelHold struct {
	id    int // for the script
	name  string
	store int
	owner string
	state holdState
	fence int64 // once known
}

type holdState int

const (
	holdWaiting holdState = iota
	holdHeld
	holdUnlocked
	holdLost     // its store closed while held
	holdReported // a lost hold whose Unlock reported ErrLeaseLost once
	holdFailed   // a wait that ended without the lock
)

func newModel(now int64, clockKnown bool) *model {
	return &model{
		now: now, clockKnown: clockKnown,
		keys: map[string]*modelKey{}, spaces: map[string]*modelSpace{}, locks: map[string]*modelLock{},
	}
}

// ---- Ranges ----

func (m *model) next(key string, step int64) (int64, error) {
	if step < 1 {
		return 0, store.ErrInvalidArgument
	}
	k := m.keys[key]
	if k == nil {
		k = &modelKey{}
	}
	switch {
	case k.sealed:
		return 0, store.ErrSealed
	case k.next > math.MaxInt64-step:
		return 0, store.ErrExhausted
	}
	m.keys[key] = k
	start := k.next
	k.next += step
	return start, nil
}

func (m *model) current(key string) (int64, bool) {
	if k := m.keys[key]; k != nil {
		return k.next, k.sealed
	}
	return 0, false
}

func (m *model) seal(key string) int64 {
	k := m.keys[key]
	if k == nil {
		k = &modelKey{}
		m.keys[key] = k
	}
	k.sealed = true
	return k.next
}

func (m *model) init(key string, next int64) error {
	if next < 0 {
		return store.ErrInvalidArgument
	}
	if k := m.keys[key]; k != nil {
		if k.next != next {
			return store.ErrConfigMismatch
		}
		return nil
	}
	m.keys[key] = &modelKey{next: next}
	return nil
}

func (m *model) keyList() []string { return slices.Sorted(maps.Keys(m.keys)) }

// ---- Slots ----

// space returns ns's namespace, creating it; ErrConfigMismatch if it
// exists with other settings.
func (m *model) space(ns store.Namespace) (*modelSpace, error) {
	sp := m.spaces[ns.Name]
	if sp == nil {
		sp = &modelSpace{ns: ns, slots: map[int]*modelSlot{}, owners: map[string][]int{}, floor: m.purgedSlotFence, tfloor: m.purgedSlotFloor}
		m.spaces[ns.Name] = sp
		return sp, nil
	}
	if sp.ns != ns {
		return nil, store.ErrConfigMismatch
	}
	return sp, nil
}

func (s *modelSlot) live(now int64) bool { return s.owner != "" && now < s.expiresAt }

// acquireReq is one Acquire of the model.
type acquireReq struct {
	ns        store.Namespace
	owner     string
	inc       string
	ttl       time.Duration
	preferred int
	reclaim   bool
}

// acquire answers req. fresh is true when a new term was made (not an own
// live term returned as it is); the caller may then adopt the store's now
// from the result (see adoptNow) before calling finish.
func (m *model) acquire(req acquireReq) (slot int, fresh bool, err error) {
	sp, err := m.space(req.ns)
	if err != nil {
		return 0, false, err
	}
	var first []int
	for _, n := range append(slices.Clone(sp.owners[req.owner]), req.preferred) {
		if n >= 0 && n < req.ns.Limit && !slices.Contains(first, n) { // -1: no preferred slot
			first = append(first, n)
		}
	}
	for _, n := range first {
		if s := sp.slots[n]; s != nil && s.live(m.now) && s.owner == req.owner && s.inc == req.inc {
			return n, false, nil
		}
	}
	free := func(n int) bool {
		s := sp.slots[n]
		if s == nil {
			return sp.floor < math.MaxInt64
		}
		if s.fence == math.MaxInt64 {
			return false
		}
		return !s.live(m.now) || (req.reclaim && s.owner == req.owner && s.inc != req.inc)
	}
	order := slices.Clone(first)
	for n := range driver.SearchOrder(driver.SearchStart(req.owner, req.inc, req.ns.Limit), req.ns.Limit) {
		if !slices.Contains(order, n) {
			order = append(order, n)
		}
	}
	for _, n := range order {
		if free(n) {
			return n, true, nil
		}
	}
	return 0, false, store.ErrExhausted
}

// newTerm writes req's new term on slot n, at m.now.
func (m *model) newTerm(req acquireReq, n int) {
	sp := m.spaces[req.ns.Name]
	old := sp.slots[n]
	s := &modelSlot{owner: req.owner, inc: req.inc, ttl: req.ttl, tol: req.ns.Tolerance}
	switch {
	case old == nil:
		s.fence = sp.floor + 1
		s.floor = sp.tfloor
	case old.owner != "": // a takeover: its holder may have issued up to its ceiling
		s.fence = old.fence + 1
		s.floor = max(old.nextFloor, old.ceiling)
		s.lastOwner = old.owner
	default:
		s.fence = old.fence + 1
		s.floor = old.nextFloor
		s.lastOwner = old.lastOwner
	}
	s.expiresAt = m.now + req.ttl.Milliseconds()
	s.ceiling = max(s.floor, s.expiresAt+req.ns.Tolerance.Milliseconds())
	s.nextFloor = s.floor
	sp.slots[n] = s
	idx := []int{n}
	for _, i := range sp.owners[req.owner] {
		if i != n && len(idx) < 8 {
			idx = append(idx, i)
		}
	}
	sp.owners[req.owner] = idx
}

// holder returns the slot whose current term is l's, or ErrLeaseLost.
func (m *model) holder(l store.Lease) (*modelSlot, error) {
	sp := m.spaces[l.Namespace]
	if sp == nil {
		return nil, store.ErrLeaseLost
	}
	s := sp.slots[l.Slot]
	if s == nil || s.owner == "" || s.owner != l.Owner || s.inc != l.Incarnation || s.fence != l.Fence {
		return nil, store.ErrLeaseLost
	}
	return s, nil
}

func (m *model) renew(l store.Lease) error {
	s, err := m.holder(l)
	if err != nil {
		return err
	}
	s.expiresAt = max(s.expiresAt, m.now+s.ttl.Milliseconds())
	s.ceiling = max(s.ceiling, s.expiresAt+s.tol.Milliseconds())
	return nil
}

func (m *model) release(l store.Lease, used int64) error {
	s, err := m.holder(l)
	if err != nil {
		return err
	}
	if used < 0 {
		s.nextFloor = s.ceiling
	} else {
		s.nextFloor = min(max(used+1, s.floor), s.ceiling)
	}
	s.lastOwner, s.owner, s.inc = s.owner, "", ""
	return nil
}

func (m *model) seed(ns store.Namespace, n int, fence, nextFloor int64) error {
	if fence < 0 || nextFloor < 0 {
		return store.ErrInvalidArgument
	}
	sp, err := m.space(ns)
	if err != nil {
		return err
	}
	s := sp.slots[n]
	switch {
	case s == nil:
		s = &modelSlot{fence: sp.floor, nextFloor: sp.tfloor}
		sp.slots[n] = s
	case s.live(m.now):
		return store.ErrLocked
	case s.owner != "": // an expired term ends as a takeover would end it
		s.nextFloor = max(s.nextFloor, s.ceiling)
		s.lastOwner, s.owner, s.inc = s.owner, "", ""
	}
	s.fence = max(s.fence, fence)
	s.nextFloor = max(s.nextFloor, nextFloor)
	return nil
}

func (m *model) lease(ns string, n int) store.Lease {
	s := m.spaces[ns].slots[n]
	return store.Lease{
		Namespace: ns, Slot: n, Owner: s.owner, Incarnation: s.inc, Fence: s.fence,
		TTL: s.ttl, Tolerance: s.tol, Floor: s.floor, ExpiresAt: s.expiresAt, Ceiling: s.ceiling,
	}
}

func (m *model) namespaces() []store.Namespace {
	out := []store.Namespace{}
	for _, name := range slices.Sorted(maps.Keys(m.spaces)) {
		out = append(out, m.spaces[name].ns)
	}
	return out
}

func (m *model) slotList(ns string) ([]store.SlotInfo, error) {
	sp := m.spaces[ns]
	if sp == nil {
		return nil, store.ErrNotFound
	}
	out := []store.SlotInfo{}
	for _, n := range slices.Sorted(maps.Keys(sp.slots)) {
		s := sp.slots[n]
		out = append(out, store.SlotInfo{
			Slot: n, Owner: s.owner, Incarnation: s.inc, LastOwner: s.lastOwner, Fence: s.fence,
			TTL: s.ttl, Tolerance: s.tol, Floor: s.floor, ExpiresAt: s.expiresAt, Ceiling: s.ceiling,
			NextFloor: s.nextFloor,
		})
	}
	return out, nil
}

// ---- Locks ----

func (m *model) lockOf(name string) *modelLock {
	l := m.locks[name]
	if l == nil {
		l = &modelLock{}
		m.locks[name] = l
	}
	return l
}

// lock queues h (a Lock call); with wait false it is refused with
// ErrLocked when the queue is not empty. It reports whether h holds.
func (m *model) lock(h *modelHold, wait bool) (bool, error) {
	l := m.lockOf(h.name)
	if !wait && len(l.queue) > 0 {
		l.used = true
		return false, store.ErrLocked
	}
	l.used = true
	l.queue = append(l.queue, h)
	if len(l.queue) == 1 {
		h.state = holdHeld
		return true, nil
	}
	h.state = holdWaiting
	return false, nil
}

// leave removes h from its queue and returns the hold that the lock passed
// to, if any.
func (m *model) leave(h *modelHold) *modelHold {
	l := m.locks[h.name]
	if l == nil {
		return nil
	}
	i := slices.Index(l.queue, h)
	if i < 0 {
		return nil
	}
	l.queue = slices.Delete(l.queue, i, i+1)
	if i == 0 && len(l.queue) > 0 {
		l.queue[0].state = holdHeld
		return l.queue[0]
	}
	return nil
}

// unlock is h's Unlock: nil, or ErrLeaseLost once for a lost hold.
func (m *model) unlock(h *modelHold) (*modelHold, error) {
	switch h.state {
	case holdLost:
		h.state = holdReported
		return nil, store.ErrLeaseLost
	case holdHeld:
		h.state = holdUnlocked
		return m.leave(h), nil
	}
	return nil, nil
}

// cancel ends a wait: the waiter leaves no trace.
func (m *model) cancel(h *modelHold) {
	h.state = holdFailed
	m.leave(h)
}

// closeStore ends every hold (lost) and wait (failed) of store i, and
// returns the holds the locks passed to.
func (m *model) closeStore(i int) []*modelHold {
	var ending []*modelHold
	for _, name := range slices.Sorted(maps.Keys(m.locks)) {
		for _, h := range m.locks[name].queue {
			if h.store == i {
				ending = append(ending, h)
			}
		}
	}
	was := make([]holdState, len(ending))
	for k, h := range ending {
		was[k] = h.state
	}
	var granted []*modelHold
	for _, h := range ending {
		if g := m.leave(h); g != nil && g.store != i {
			granted = append(granted, g)
		}
	}
	for k, h := range ending {
		if was[k] == holdHeld {
			h.state = holdLost
		} else {
			h.state = holdFailed
		}
	}
	return granted
}

// purge deletes everything; fences keep growing. It runs only when no
// lock is in use.
func (m *model) purge() {
	clear(m.keys)
	for _, sp := range m.spaces {
		m.purgedSlotFence = max(m.purgedSlotFence, sp.floor)
		for _, s := range sp.slots {
			m.purgedSlotFence = max(m.purgedSlotFence, s.fence)
			if m.keepSlotFloor {
				next := s.nextFloor
				if s.owner != "" {
					next = max(next, s.ceiling)
				}
				m.purgedSlotFloor = max(m.purgedSlotFloor, next)
			}
		}
	}
	clear(m.spaces)
	// Only a purge with no lock in use goes through (see driver.Purger):
	// every queue is empty.
	for _, l := range m.locks {
		l.used = false
	}
}

// activeLocks are the names Locks must list: held or waited on.
func (m *model) activeLocks() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(m.locks)) {
		if len(m.locks[name].queue) > 0 {
			out = append(out, name)
		}
	}
	return out
}

func (h *modelHold) String() string { return fmt.Sprintf("hold%d", h.id) }
