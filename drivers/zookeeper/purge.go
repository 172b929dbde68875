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
// itself stays, and so does {root}/lock, which holds the locks' seal and
// fence offset (lock_seal.go). It returns the deleted paths, children before their
// parents, as it deleted them.
//
// Fences never repeat: lock fences are czxids, which only grow, and before
// deleting anything Purge writes the highest slot fence it is about to
// delete into the root's slot_fence_floor line; namespaces created later
// copy it, and their slots start above it.
//
// It is for an operator who stopped every instance. While a lock node of
// a live session is there (a lock held or waited on; a session's clock
// node is deleted), or a slot holds a
// term not released whose ceiling is ahead of the root write's mtime, it
// deletes nothing and gives ErrLocked. Each node is deleted
// on the version the walk saw, so a node written meanwhile (or given a new
// child) stops the purge with an error rather than vanish under a running
// instance. Each level of the tree is listed, and deleted, in one round
// trip.
func (s *driverStore) Purge(ctx context.Context) ([]string, error) {
	a := attempts{s: s.session}
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
				// A session's clock node (slot_store.go) holds nothing:
				// deleting it under a live store costs that store a create.
				clock := strings.HasPrefix(chunk[i], s.root+"/"+clockDir+"/")
				if r.stat != nil && r.stat.EphemeralOwner != 0 && !clock {
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
	if foreign := s.foreignNodes(levels); len(foreign) > 0 {
		return nil, fmt.Errorf("zookeeper: purge: nodes below the root that are not this store's, which a purge would delete "+
			"with it (another store's root inside this one?): %s; nothing deleted: %w", strings.Join(foreign, ", "), driver.ErrCorrupt)
	}
	if err := s.keepSlotFences(ctx, levels, &a); err != nil {
		return nil, err
	}
	if len(levels) > 0 {
		// {root}/lock stays: it holds the locks' seal and fence offset
		// (lock_seal.go); the lock names' nodes below it go.
		levels[0] = slices.DeleteFunc(levels[0], func(n purgeNode) bool { return n.path == s.lockRootPath() })
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

// foreignNodes lists, topmost first and at most eight, the nodes of the
// walk that are not part of the store's layout (docs/design.md, ZooKeeper
// node layout): range/KEY..., slot/NS/{N|.clock|.layout}, owner/NS/OWNER,
// lock/NAME/_c_WAITER, clock/SESSION, made/NS/N. Such a node is most
// likely another store's root
// (/ids/v2 inside /ids), which deleting everything below the root would
// delete too.
func (s *driverStore) foreignNodes(levels [][]purgeNode) []string {
	var out []string
	for _, level := range levels {
		for _, n := range level {
			if len(out) == 8 {
				return out
			}
			rel := strings.Split(strings.TrimPrefix(n.path, s.root+"/"), "/")
			below := false // inside a foreign node already listed
			for _, f := range out {
				below = below || strings.HasPrefix(n.path, f+"/")
			}
			if !below && !inLayout(rel) {
				out = append(out, n.path)
			}
		}
	}
	return out
}

// inLayout reports whether a node, given as its path segments below the
// root, is one the store itself makes.
func inLayout(segs []string) bool {
	switch segs[0] {
	case "range":
		return true // a key has any number of segments
	case "slot":
		if len(segs) == 3 {
			_, err := strconv.Atoi(segs[2])
			return err == nil || segs[2] == clockName || segs[2] == layoutName
		}
		return len(segs) < 3
	case "owner":
		return len(segs) <= 3
	case clockDir:
		return len(segs) <= 2
	case madeDir:
		return len(segs) <= 3
	case "lock":
		return len(segs) < 3 || len(segs) == 3 && strings.HasPrefix(segs[2], "_c_")
	}
	return false
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
