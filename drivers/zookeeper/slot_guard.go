package zookeeper

import (
	"fmt"
	"sync"

	"github.com/cosid-go/store/driver"
)

// The slot regression guard (driver.SlotMark): a store remembers, per slot
// node, the furthest state it has seen the node in, read or written, and
// refuses a node read behind it (ErrCorrupt). The node's version and mzxid
// cannot tell: a node written back with a client gets a higher version and
// mzxid, and an ensemble restored from a snapshot goes back in both, then
// moves on from there (past the store's remembered version, and after a
// leader election past every zxid it saw). Only the data can.

// slotMarks is a store's driver.SlotMark per slot node path. The zero
// value is ready.
type slotMarks struct {
	mu sync.Mutex
	m  map[string]driver.SlotMark
}

// marksOf returns the marks of paths as they are now: a read sent after
// this holds every write the store saw answered before it (a session's
// requests are served in order, and a reconnect never goes to a server
// behind what the session saw), so only those are evidence against it.
func (g *slotMarks) marksOf(paths []string) []driver.SlotMark {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]driver.SlotMark, len(paths))
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
		g.m = map[string]driver.SlotMark{}
	}
	g.m[path] = g.m[path].Ahead(driver.MarkOf(n.record(0)))
}

// guardReads checks reads (made after marks were taken) against them: a
// node behind its mark gets bad set (ErrCorrupt); the others are recorded.
// It reports whether any was behind.
func (s *slotStore) guardReads(reads []slotRead, marks []driver.SlotMark) bool {
	anyBehind := false
	for i := range reads {
		r := &reads[i]
		if !r.exists || r.bad != nil {
			continue
		}
		if why := marks[i].Behind(r.node.record(0)); why != "" {
			r.bad = fmt.Errorf("zookeeper: %s holds %s this store saw: it went back (written back from a copy, "+
				"a restored backup), and what it holds was handed out: %w", r.path, why, driver.ErrCorrupt)
			anyBehind = true
			continue
		}
		s.marks.saw(r.path, r.node)
	}
	return anyBehind
}
