package memory

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/memfault"
)

// EditState runs f on the state under its mutex (see package memfault):
// the kit's broken variants give this driver one bug each through it.
func (s *driverStore) EditState(ctx context.Context, f func(memfault.State) error) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.st.mu.Unlock()
	return f(stateView{s.st})
}

// stateView and spaceView are memfault's view of a state, its mutex held.
type stateView struct{ st *state }

func (v stateView) Clock() func() int64       { return v.st.clock }
func (v stateView) Now() int64                { return v.st.clock() }
func (v stateView) SetClock(now func() int64) { v.st.clock = now }
func (v stateView) LockFence() int64          { return v.st.fences }
func (v stateView) SetSlotFenceFloor(f int64) { v.st.slotFenceFloor = f }
func (v stateView) Spaces() []string          { return slices.Sorted(maps.Keys(v.st.spaces)) }
func (v stateView) Ranges() []string          { return slices.Sorted(maps.Keys(v.st.ranges)) }

func (v stateView) Namespace(want driver.Namespace) (memfault.Space, error) {
	ns, err := v.st.namespace(want)
	if err != nil {
		return nil, err
	}
	return spaceView{ns}, nil
}

func (v stateView) Space(name string) (memfault.Space, bool) {
	ns := v.st.spaces[name]
	return spaceView{ns}, ns != nil
}

func (v stateView) SetRangeSealed(key string, sealed bool) {
	if r := v.st.ranges[key]; r != nil {
		r.sealed = sealed
	}
}

type spaceView struct{ ns *namespace }

func (v spaceView) Limit() int                         { return v.ns.limit }
func (v spaceView) Tolerance() time.Duration           { return v.ns.tolerance }
func (v spaceView) Sealed() bool                       { return v.ns.sealed }
func (v spaceView) SetSealed(sealed bool)              { v.ns.sealed = sealed }
func (v spaceView) Slot(n int) driver.SlotRecord       { return v.ns.slot(n) }
func (v spaceView) Slots() map[int]driver.SlotRecord   { return maps.Clone(v.ns.slots) }
func (v spaceView) SetSlot(n int, r driver.SlotRecord) { v.ns.slots[n] = r }
func (v spaceView) Owners(key string) []int            { return v.ns.owners[key] }
func (v spaceView) SetOwners(key string, slots []int)  { v.ns.owners[key] = slots }
