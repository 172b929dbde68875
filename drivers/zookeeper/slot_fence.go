package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// The slot fences a purge keeps: fences never repeat, even across a purge
// (see Purge).

// keepSlotFences raises the root's slot fence floor to the highest fence
// of the slots (and fence floor of the namespaces) the purge found, before
// anything is deleted, and writes the root in any case. A slot whose fence line does not parse stops the
// purge: its fence cannot be kept. So does a slot whose term may still
// issue or whose next floor is ahead (ErrLocked), and then a sealed range
// key or namespace (ErrSealed), before the floor is raised.
func (s *slotStore) keepSlotFences(ctx context.Context, levels [][]purgeNode, a *attempts) error {
	base, rangeBase := s.root+"/slot/", s.root+"/range/"
	paths := []string{s.root}
	for _, level := range levels {
		for _, n := range level {
			rest, ok := strings.CutPrefix(n.path, base)
			if ok && !strings.HasSuffix(rest, "/"+clockName) && !strings.HasSuffix(rest, "/"+layoutName) || strings.HasPrefix(n.path, rangeBase) {
				paths = append(paths, n.path)
			}
		}
	}
	var sealedKeys, sealedSpaces []string // see driver.Purger: a purge keeps seals or refuses
	var rootFound bool                    // a store that never wrote has no root, nor leases
	var rootData []byte
	var rootVersion int32
	var rootFloor, floor int64
	type purgeTerm struct {
		path string
		rec  driver.SlotRecord
	}
	var terms []purgeTerm // slots with a term not released, as read
	for start := 0; start < len(paths); start += slotListChunk {
		chunk := paths[start:min(start+slotListChunk, len(paths))]
		rs, err := s.getNodes(ctx, chunk, a)
		if err != nil {
			return err
		}
		for i, r := range rs {
			path := chunk[i]
			var f int64
			switch {
			case errors.Is(r.err, zk.ErrNoNode):
				continue
			case r.err != nil:
				return fmt.Errorf("zookeeper: purge: read %s: %w", path, r.err)
			case path == s.root:
				rootFound, rootData, rootVersion = true, r.data, r.stat.Version
				f, err = parseFenceFloor(r.data, fieldSlotFenceFloor)
				rootFloor = f
			case strings.HasPrefix(path, rangeBase):
				// A corrupt range node is still purged.
				if _, sealed, _, perr := parseRange(r.data); perr == nil && sealed {
					sealedKeys = append(sealedKeys, strings.TrimPrefix(path, rangeBase))
				}
				continue
			case !strings.Contains(strings.TrimPrefix(path, base), "/"):
				f, err = parseFenceFloor(r.data, fieldFenceFloor)
				if _, _, sealed, perr := parseNamespace(r.data); perr == nil && sealed {
					sealedSpaces = append(sealedSpaces, strings.TrimPrefix(path, base))
				}
			default:
				// Only the fence line counts: a slot corrupt otherwise is
				// still purged.
				f, err = parseFenceFloor(r.data, fieldFence)
				if node, perr := parseSlot(r.data); perr == nil {
					terms = append(terms, purgeTerm{path, node.record(r.stat.Mtime)})
				}
			}
			if err != nil {
				return fmt.Errorf("zookeeper: purge cannot keep the fences: %w", corruptData(path, r.data, err))
			}
			floor = max(floor, f)
		}
	}
	// The root is written as it is first, in any case: its new version
	// stops the writes of leases taken before the purge (slotState.root),
	// and its mtime is the purge's now.
	if !rootFound {
		return nil
	}
	if err := checkVersion(s.root, rootVersion); err != nil {
		return fmt.Errorf("zookeeper: purge: %s: %w", s.root, err)
	}
	stat, err := call(ctx, s, func() (*zk.Stat, error) { return s.conn.Set(s.root, rootData, rootVersion) })
	if err != nil {
		// A lost answer or a conflict: the operator runs the purge again,
		// which reads the floor anew; nothing was deleted yet.
		return fmt.Errorf("zookeeper: purge: write %s: %w", s.root, err)
	}
	// A term that may still issue stops the purge (see driver.Purger),
	// judged at that mtime, which comes after every read above, and before
	// the floor is raised: a refused purge changes nothing. A slot written
	// after its read (an acquire, a renewal) has moved past the version its
	// delete checks, and stops the purge there. The root's new version only
	// makes the holders' next writes read their slot again.
	for _, t := range terms {
		ns, num, _ := strings.Cut(strings.TrimPrefix(t.path, base), "/")
		n, _ := strconv.Atoi(num)
		if err := t.rec.PurgeRefusal(ns, n, stat.Mtime); err != nil {
			return fmt.Errorf("zookeeper: purge: %s: %w", t.path, err)
		}
	}
	// Seals last, as every driver orders the refusals; a node sealed after
	// its read has moved past the version its delete checks.
	if err := driver.PurgeSealedRefusal(sealedKeys, sealedSpaces); err != nil {
		return fmt.Errorf("zookeeper: purge: %w", err)
	}
	if floor <= rootFloor {
		return nil
	}
	data, err := withLine(rootData, fieldSlotFenceFloor, strconv.FormatInt(floor, 10))
	if err == nil {
		err = checkVersion(s.root, stat.Version)
	}
	if err != nil {
		return fmt.Errorf("zookeeper: purge: %s: %w", s.root, err)
	}
	if _, err := call(ctx, s, func() (*zk.Stat, error) { return s.conn.Set(s.root, data, stat.Version) }); err != nil {
		return fmt.Errorf("zookeeper: purge: write %s: %w", s.root, err)
	}
	return nil
}

// rootFenceFloor reads the root's slot fence floor, for a namespace being
// created, and the root's version (-1: a missing root, which has none).
func (s *slotStore) rootFenceFloor(ctx context.Context, a *attempts) (floor int64, version int32, err error) {
	rs, err := s.getNodes(ctx, []string{s.root}, a)
	if err != nil {
		return 0, 0, err
	}
	switch r := rs[0]; {
	case errors.Is(r.err, zk.ErrNoNode):
		return 0, -1, nil
	case r.err != nil:
		return 0, 0, fmt.Errorf("zookeeper: read %s: %w", s.root, r.err)
	default:
		f, err := parseFenceFloor(r.data, fieldSlotFenceFloor)
		if err != nil {
			return 0, 0, corruptData(s.root, r.data, err)
		}
		return f, r.stat.Version, nil
	}
}
