package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// slotListChunk bounds the reads a listing sends at once.
const slotListChunk = 1024

// Namespaces lists every namespace with its settings, sorted by name.
func (s *slotStore) Namespaces(ctx context.Context) ([]driver.Namespace, error) {
	a := attempts{s: s.session}
	base := s.root + "/slot"
	names, err := s.children(ctx, base, &a)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	out := []driver.Namespace{}
	for start := 0; start < len(names); start += slotListChunk {
		chunk := names[start:min(start+slotListChunk, len(names))]
		paths := make([]string, len(chunk))
		for i, name := range chunk {
			paths[i] = base + "/" + name
		}
		rs, err := s.getNodes(ctx, paths, &a)
		if err != nil {
			return nil, err
		}
		for i, r := range rs {
			if errors.Is(r.err, zk.ErrNoNode) {
				continue // deleted since the listing
			}
			limit, tol, sealed, err := parseNamespace(r.data)
			if err != nil {
				return nil, corruptData(paths[i], r.data, err)
			}
			out = append(out, driver.Namespace{Name: chunk[i], Limit: limit, Tolerance: time.Duration(tol) * time.Millisecond, Sealed: sealed})
		}
	}
	return out, nil
}

// Slots lists every used slot of namespace ns, by slot number. A child of
// the namespace that is not a slot number below the limit, or a slot whose
// data does not parse, fails the listing with ErrCorrupt naming its path:
// a tool must not silently miss a slot.
func (s *slotStore) Slots(ctx context.Context, ns string) ([]driver.SlotInfo, error) {
	if err := checkPathText("namespace", ns); err != nil {
		return nil, err
	}
	a := attempts{s: s.session}
	path := s.nsPath(ns)
	var rs []tripReply
	for {
		var err error
		rs, err = inOneTrip(ctx, s, s.tripChildren(path), s.tripGet(path))
		if err != nil {
			return nil, err
		}
		if err := firstTransient(rs); err != nil {
			if err := a.retry(ctx, err); err != nil {
				return nil, fmt.Errorf("zookeeper: list %s: %w", path, err)
			}
			continue
		}
		break
	}
	for _, r := range rs {
		switch {
		case errors.Is(r.err, zk.ErrNoNode):
			return nil, fmt.Errorf("zookeeper: no namespace %s: %w", path, driver.ErrNotFound)
		case r.err != nil:
			return nil, fmt.Errorf("zookeeper: list %s: %w", path, r.err)
		}
	}
	limit, _, _, err := parseNamespace(rs[1].data)
	if err != nil {
		return nil, corruptData(path, rs[1].data, err)
	}
	var nums []int
	for _, name := range rs[0].children {
		if name == clockName || name == layoutName {
			continue
		}
		n, err := strconv.Atoi(name)
		if err != nil || n < 0 || n >= limit || strconv.Itoa(n) != name {
			return nil, fmt.Errorf("zookeeper: %s/%s is not a slot of a namespace of %d slots: %w", path, name, limit, driver.ErrCorrupt)
		}
		nums = append(nums, n)
	}
	slices.Sort(nums)
	out := []driver.SlotInfo{}
	for start := 0; start < len(nums); start += slotListChunk {
		reads, err := s.readSlots(ctx, ns, nums[start:min(start+slotListChunk, len(nums))], &a)
		if err != nil {
			return nil, err
		}
		for _, r := range reads {
			switch {
			case r.bad != nil:
				return nil, r.bad
			case !r.exists:
				continue // deleted since the listing
			}
			out = append(out, r.record(0).Info(r.n))
		}
	}
	return out, nil
}
