package idgen

import (
	"strconv"
	"time"

	"github.com/cosid-go/store"
)

// The generators report through their store (store.Store.Report), so that
// one logger and one observer see the store and what is built on it.

// report sends an event about the session's term t.
func (s *Session) report(kind store.EventKind, t *term, err error) {
	e := store.Event{Kind: kind, Key: slotKey(t.lease), Fence: t.lease.Fence, Err: err}
	if kind == store.LeaseAcquired || kind == store.LeaseRenewed {
		e.Deadline = t.validUntil.Round(0) // the wall clock reading, for logs
	}
	s.st.Report(e)
}

// slotKey names a slot as the store's own events do: "ns/3".
func slotKey(l store.Lease) string { return l.Namespace + "/" + strconv.Itoa(l.Slot) }

// reportWait reports a NextID that waited d for the clock to reach the
// lease's floor.
func (g *Snowflake) reportWait(d time.Duration) {
	l := g.sess.Lease()
	g.sess.st.Report(store.Event{Kind: store.FloorWait, Key: slotKey(l), Fence: l.Fence, Wait: d})
}
