package memory

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/cosid-go/store/driver"
)

// Purge deletes everything the shared state keeps: range keys, namespaces
// with their slots and owner indexes, and locks (see driver.Purger). It
// returns what it deleted, children before their parents as a ZooKeeper
// purge deletes nodes: "range orders", "slot workers/3",
// "owner workers/host-a", "namespace workers", "lock rebalance".
//
// It is meant for a state no instance uses. While a lock is held or waited
// on, or while a slot's term is not released and its ceiling not passed,
// or a released slot's next floor is ahead of the clock,
// it deletes nothing and gives ErrLocked; while a key or namespace is
// sealed, ErrSealed (see driver.Purger): a purge never ends a hold or a
// term that may still issue, so it never makes two holders or two live
// terms of one slot. A lease still in use sees what it would see
// on ZooKeeper once the nodes are gone: its Renew and Release give
// ErrLeaseLost. Fences keep growing from where they were, so none is
// handed out twice: lock fences as ZooKeeper's czxids do, and slot fences
// from the highest one the purge deleted (see driver.Purger).
func (s *driverStore) Purge(ctx context.Context) ([]string, error) {
	if err := s.begin(ctx); err != nil {
		return nil, err
	}
	defer s.st.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(s.st.locks)) {
		if es := s.st.locks[name].entries; len(es) > 0 {
			return nil, fmt.Errorf("memory: purge: lock %q is held by %s (fence %d): %w", name, es[0].owner, es[0].fence, driver.ErrLocked)
		}
	}
	// A term whose holder may still issue below its ceiling keeps the slot
	// (see driver.Purger), checked under the same mutex as the deletion.
	now := s.st.clock()
	for _, name := range slices.Sorted(maps.Keys(s.st.spaces)) {
		ns := s.st.spaces[name]
		for _, n := range slices.Sorted(maps.Keys(ns.slots)) {
			if err := ns.slots[n].PurgeRefusal(name, n, now); err != nil {
				return nil, fmt.Errorf("memory: purge: %w", err)
			}
		}
	}
	// A seal outlives nothing but the store (see driver.Purger).
	var sealedKeys, sealedSpaces []string
	for _, key := range slices.Sorted(maps.Keys(s.st.ranges)) {
		if s.st.ranges[key].sealed {
			sealedKeys = append(sealedKeys, key)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.st.spaces)) {
		if s.st.spaces[name].sealed {
			sealedSpaces = append(sealedSpaces, name)
		}
	}
	if err := driver.PurgeSealedRefusal(sealedKeys, sealedSpaces); err != nil {
		return nil, fmt.Errorf("memory: purge: %w", err)
	}
	deleted := []string{}
	for _, key := range slices.Sorted(maps.Keys(s.st.ranges)) {
		deleted = append(deleted, "range "+key)
	}
	for _, name := range slices.Sorted(maps.Keys(s.st.spaces)) {
		ns := s.st.spaces[name]
		s.st.slotFenceFloor = max(s.st.slotFenceFloor, ns.fenceFloor)
		for _, n := range slices.Sorted(maps.Keys(ns.slots)) {
			s.st.slotFenceFloor = max(s.st.slotFenceFloor, ns.slots[n].Fence)
			deleted = append(deleted, fmt.Sprintf("slot %s/%d", name, n))
		}
		for _, owner := range slices.Sorted(maps.Keys(ns.owners)) {
			deleted = append(deleted, "owner "+name+"/"+owner)
		}
		deleted = append(deleted, "namespace "+name)
	}
	for _, name := range slices.Sorted(maps.Keys(s.st.locks)) {
		deleted = append(deleted, "lock "+name)
	}
	clear(s.st.ranges)
	clear(s.st.spaces)
	clear(s.st.locks)
	s.st.purges++
	return deleted, nil
}
