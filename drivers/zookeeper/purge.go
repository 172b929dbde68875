package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

var _ driver.Purger = (*driverStore)(nil)

// purgeNode is a node found by Purge, with the version it had then.
type purgeNode struct {
	path    string
	version int32
}

// Purge deletes every node below the root (see driver.Purger): range keys,
// slot namespaces with their slots and owner indexes, and locks; the root
// itself stays. It returns the deleted paths, children before their
// parents, as it deleted them.
//
// Fences never repeat: lock fences are czxids, which only grow, and before
// deleting anything Purge writes the highest slot fence it is about to
// delete into the root's slot_fence_floor line; namespaces created later
// copy it, and their slots start above it.
//
// It is for an operator who stopped every instance. While a lock node of
// a live session is there (a lock held or waited on), it deletes nothing
// and gives ErrLocked. Each node is deleted
// on the version the walk saw, so a node written meanwhile (or given a new
// child) stops the purge with an error rather than vanish under a running
// instance. Each level of the tree is listed, and deleted, in one round
// trip.
func (s *driverStore) Purge(ctx context.Context) ([]string, error) {
	a := attempts{s: s}
	var levels [][]purgeNode // levels[d]: the nodes at depth d+1 below root
	parents := []string{s.root}
	for len(parents) > 0 {
		var level []purgeNode
		for start := 0; start < len(parents); start += slotListChunk {
			chunk := parents[start:min(start+slotListChunk, len(parents))]
			rs, err := s.listAll(ctx, chunk, &a)
			if err != nil {
				return nil, err
			}
			for i, r := range rs {
				if r.err != nil {
					continue // gone since it was listed (an ended session's lock node)
				}
				if r.stat != nil && r.stat.EphemeralOwner != 0 {
					// A live session's lock node (held or waited on): it
					// stays, so that a purge never ends a hold; a lock
					// node made after this walk stops the purge too (its
					// parent's delete finds it not empty).
					return nil, fmt.Errorf("zookeeper: purge: lock node %s of a live session: %w", chunk[i], driver.ErrLocked)
				}
				if len(levels) > 0 {
					// A node's own version comes with the listing of its
					// children.
					levels[len(levels)-1][start+i].version = r.stat.Version
				}
				names := r.children
				slices.Sort(names)
				for _, name := range names {
					level = append(level, purgeNode{path: chunk[i] + "/" + name, version: -1})
				}
			}
		}
		parents = make([]string, len(level))
		for i, n := range level {
			parents[i] = n.path
		}
		if len(level) > 0 {
			levels = append(levels, level)
		}
	}
	if err := s.keepSlotFences(ctx, levels, &a); err != nil {
		return nil, err
	}
	deleted := []string{}
	for d := len(levels) - 1; d >= 0; d-- {
		for start := 0; start < len(levels[d]); start += slotListChunk {
			done, err := s.deleteAll(ctx, levels[d][start:min(start+slotListChunk, len(levels[d]))], &a)
			deleted = append(deleted, done...)
			if err != nil {
				return deleted, err
			}
		}
	}
	return deleted, nil
}

// listAll lists the children of paths in one round trip (see readAll).
func (s *driverStore) listAll(ctx context.Context, paths []string, a *attempts) ([]tripReply, error) {
	return s.readAll(ctx, "list", s.tripChildren, paths, a)
}

// deleteAll deletes nodes, siblings or cousins, in one round trip, each on
// the version the walk saw, and returns the paths it deleted. A node found
// missing was deleted by someone else, unless a delete of this purge with
// an unknown outcome came first. A node at version -1 is deleted on "any
// version": that is what a purge means, and it runs with every instance
// stopped.
func (s *driverStore) deleteAll(ctx context.Context, nodes []purgeNode, a *attempts) ([]string, error) {
	var deleted []string
	tried := make([]bool, len(nodes)) // sent with an unknown outcome
	todo := make([]int, len(nodes))
	for i := range nodes {
		todo[i] = i
	}
	for len(todo) > 0 {
		ops := make([]func() tripReply, len(todo))
		for k, i := range todo {
			n := nodes[i]
			ops[k] = func() tripReply { return tripReply{err: s.conn.Delete(n.path, n.version)} }
		}
		rs, err := inOneTrip(ctx, s, ops...)
		if err != nil {
			return deleted, err
		}
		var again []int
		var transient error
		for k, i := range todo {
			switch err := rs[k].err; {
			case err == nil:
				deleted = append(deleted, nodes[i].path)
			case errors.Is(err, zk.ErrNoNode):
				if tried[i] {
					deleted = append(deleted, nodes[i].path)
				}
			case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNotEmpty):
				return deleted, fmt.Errorf("zookeeper: purge: %s changed during the purge (%v); is an instance still running?",
					nodes[i].path, err)
			case retryable(err):
				tried[i] = true
				again, transient = append(again, i), err
			default:
				return deleted, fmt.Errorf("zookeeper: purge: delete %s: %w", nodes[i].path, err)
			}
		}
		if len(again) > 0 {
			if err := a.retry(ctx, transient); err != nil {
				return deleted, fmt.Errorf("zookeeper: purge: delete %s: %w", nodes[again[0]].path, err)
			}
		}
		todo = again
	}
	return deleted, nil
}

// keepSlotFences raises the root's slot fence floor to the highest fence
// of the slots (and fence floor of the namespaces) the purge found, before
// anything is deleted, and writes the root in any case. A slot whose fence line does not parse stops the
// purge: its fence cannot be kept.
func (s *driverStore) keepSlotFences(ctx context.Context, levels [][]purgeNode, a *attempts) error {
	base := s.root + "/slot/"
	paths := []string{s.root}
	for _, level := range levels {
		for _, n := range level {
			if rest, ok := strings.CutPrefix(n.path, base); ok && !strings.HasSuffix(rest, "/"+clockName) {
				paths = append(paths, n.path)
			}
		}
	}
	var rootFound bool // a store that never wrote has no root, nor leases
	var rootData []byte
	var rootVersion int32
	var rootFloor, floor int64
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
			case !strings.Contains(strings.TrimPrefix(path, base), "/"):
				f, err = parseFenceFloor(r.data, fieldFenceFloor)
			default:
				// Only the fence line counts: a slot corrupt otherwise is
				// still purged.
				f, err = parseFenceFloor(r.data, fieldFence)
			}
			if err != nil {
				return fmt.Errorf("zookeeper: purge cannot keep the fences: %w", corruptData(path, r.data, err))
			}
			floor = max(floor, f)
		}
	}
	// The root is written even when the floor stays: its new version
	// stops the writes of leases taken before the purge (slotState.root).
	if !rootFound {
		return nil
	}
	data, err := rootData, error(nil)
	if floor > rootFloor {
		data, err = withLine(rootData, fieldSlotFenceFloor, strconv.FormatInt(floor, 10))
	}
	if err == nil {
		err = checkVersion(s.root, rootVersion)
	}
	if err != nil {
		return fmt.Errorf("zookeeper: purge: %s: %w", s.root, err)
	}
	_, err = call(ctx, s, func() (*zk.Stat, error) { return s.conn.Set(s.root, data, rootVersion) })
	if err != nil {
		// A lost answer or a conflict: the operator runs the purge again,
		// which reads the floor anew; nothing was deleted yet.
		return fmt.Errorf("zookeeper: purge: write %s: %w", s.root, err)
	}
	return nil
}

// rootFenceFloor reads the root's slot fence floor, for a namespace being
// created; a missing root has none.
func (s *driverStore) rootFenceFloor(ctx context.Context, a *attempts) (int64, error) {
	rs, err := s.getNodes(ctx, []string{s.root}, a)
	if err != nil {
		return 0, err
	}
	switch r := rs[0]; {
	case errors.Is(r.err, zk.ErrNoNode):
		return 0, nil
	case r.err != nil:
		return 0, fmt.Errorf("zookeeper: read %s: %w", s.root, r.err)
	default:
		f, err := parseFenceFloor(r.data, fieldSlotFenceFloor)
		if err != nil {
			return 0, corruptData(s.root, r.data, err)
		}
		return f, nil
	}
}
