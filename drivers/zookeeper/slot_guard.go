package zookeeper

import (
	"fmt"
	"sync"

	"github.com/cosid-go/store/driver"
)

// The slot regression guard (docs/design.md, Slot leases): a store
// remembers, per slot node, the furthest state it has seen the node in,
// read or written, and refuses a node read behind it (ErrCorrupt): written
// back from a copy, or a restored backup, it would start a term again at
// a fence and a floor handed out before.
//
// The node's version and mzxid cannot tell: a node written back with a
// client gets a higher version and mzxid, and an ensemble restored from a
// snapshot goes back in both, then moves on from there (past the store's
// remembered version, and after a leader election past every zxid it saw).
// Only the data can, and within one slot its order is plain: fences only
// grow; within a fence, ceiling_min only grows (a renewal writes the
// ceiling as the new minimum), the term is released at most once, and
// after its release next_floor only grows (a seed raises it).

// slotMark is the furthest state of a slot node seen.
type slotMark struct {
	fence      int64
	ceilingMin int64
	released   bool
	nextFloor  int64 // with released
}

func markOf(n slotNode) slotMark {
	m := slotMark{fence: n.fence, ceilingMin: n.ceilingMin, released: n.owner == ""}
	if m.released {
		m.nextFloor = n.nextFloor
	}
	return m
}

// behind says how n is behind m, or "" if it is not.
func (m slotMark) behind(n slotNode) string {
	switch got := markOf(n); {
	case got.fence < m.fence:
		return fmt.Sprintf("fence %d, below %d", got.fence, m.fence)
	case got.fence > m.fence:
		return ""
	case got.ceilingMin < m.ceilingMin:
		return fmt.Sprintf("fence %d with ceiling_min %d, below %d", got.fence, got.ceilingMin, m.ceilingMin)
	case m.released && !got.released:
		return fmt.Sprintf("fence %d held by %s, a term released before", got.fence, n.owner)
	case m.released && got.nextFloor < m.nextFloor:
		return fmt.Sprintf("fence %d released with next_floor %d, below %d", got.fence, got.nextFloor, m.nextFloor)
	}
	return ""
}

// ahead is the furthest of m and n's state.
func (m slotMark) ahead(n slotNode) slotMark {
	got := markOf(n)
	switch {
	case got.fence > m.fence:
		return got
	case got.fence < m.fence:
		return m
	}
	m.ceilingMin = max(m.ceilingMin, got.ceilingMin)
	m.released = m.released || got.released
	m.nextFloor = max(m.nextFloor, got.nextFloor)
	return m
}

// slotMarks is a store's slotMark per slot node path. The zero value is
// ready.
type slotMarks struct {
	mu sync.Mutex
	m  map[string]slotMark
}

// marksOf returns the marks of paths as they are now: a read sent after
// this holds every write the store saw answered before it (a session's
// requests are served in order, and a reconnect never goes to a server
// behind what the session saw), so only those are evidence against it.
func (g *slotMarks) marksOf(paths []string) []slotMark {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]slotMark, len(paths))
	for i, p := range paths {
		out[i] = g.m[p]
	}
	return out
}

// saw records a slot node read or written.
func (g *slotMarks) saw(path string, n slotNode) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m == nil {
		g.m = map[string]slotMark{}
	}
	g.m[path] = g.m[path].ahead(n)
}

// guardReads checks reads (made after marks were taken) against them: a
// node behind its mark gets bad set (ErrCorrupt); the others are recorded.
// It reports whether any was behind.
func (s *slotStore) guardReads(reads []slotRead, marks []slotMark) bool {
	anyBehind := false
	for i := range reads {
		r := &reads[i]
		if !r.exists || r.bad != nil {
			continue
		}
		if why := marks[i].behind(r.node); why != "" {
			r.bad = fmt.Errorf("zookeeper: %s holds %s this store saw: it went back (written back from a copy, "+
				"a restored backup), and what it holds was handed out: %w", r.path, why, driver.ErrCorrupt)
			anyBehind = true
			continue
		}
		s.marks.saw(r.path, r.node)
	}
	return anyBehind
}
