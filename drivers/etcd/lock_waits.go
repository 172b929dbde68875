package etcd

import (
	"strings"
	"sync"
)

// deleteWait is a waiter's wait for the delete of its predecessor, told by
// the session's watch of the store's lock keys (watchDeletes): a wait
// opens no watch of its own, whose stream, with etcd authentication on,
// would authenticate each time (a bcrypt check and a raft write).
//
// It is registered before the waiter reads its predecessor, so no delete
// after that read is missed; the deletes of the name's keys seen until the
// waiter says which key it waits for (expect) are kept until then.
type deleteWait struct {
	prefix string        // the lock name's key prefix
	ch     chan struct{} // a delete (or a gap) to look at

	mu      sync.Mutex
	pred    string
	after   int64            // the revision pred was read at
	seen    map[string]int64 // deletes under prefix since the last expect
	skipped bool             // the watch skipped revisions (wakeWaits)
}

// waitDeletes registers a wait for deletes under the lock name prefix.
func (ss *lockSession) waitDeletes(prefix string) *deleteWait {
	w := &deleteWait{prefix: prefix, ch: make(chan struct{}, 1), seen: map[string]int64{}}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.waits == nil {
		ss.waits = map[string]map[*deleteWait]bool{}
	}
	if ss.waits[prefix] == nil {
		ss.waits[prefix] = map[*deleteWait]bool{}
	}
	ss.waits[prefix][w] = true
	return w
}

// endWait ends what waitDeletes started.
func (ss *lockSession) endWait(w *deleteWait) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.waits[w.prefix], w)
	if len(ss.waits[w.prefix]) == 0 {
		delete(ss.waits, w.prefix)
	}
}

// tellWaits tells the waits of key's lock name of its delete at rev.
func (ss *lockSession) tellWaits(key string, rev int64) {
	prefix := key[:strings.LastIndexByte(key, '/')+1]
	ss.mu.Lock()
	ws := make([]*deleteWait, 0, len(ss.waits[prefix]))
	for w := range ss.waits[prefix] {
		ws = append(ws, w)
	}
	ss.mu.Unlock()
	for _, w := range ws {
		w.saw(key, rev)
	}
}

// wakeWaits has every wait look again: the watch skipped revisions.
func (ss *lockSession) wakeWaits() {
	ss.mu.Lock()
	var ws []*deleteWait
	for _, m := range ss.waits {
		for w := range m {
			ws = append(ws, w)
		}
	}
	ss.mu.Unlock()
	for _, w := range ws {
		w.mu.Lock()
		w.skipped = true
		w.mu.Unlock()
		w.wake()
	}
}

// expect sets the key waited for, read at revision rev, and wakes the
// wait at once if its delete after rev was seen meanwhile.
func (w *deleteWait) expect(pred string, rev int64) {
	select {
	case <-w.ch: // about the previous predecessor: looked at
	default:
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pred, w.after = pred, rev
	if w.seen[pred] > rev || w.skipped {
		w.skipped = false
		w.wake()
	}
	clear(w.seen)
}

func (w *deleteWait) saw(key string, rev int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seen[key] = max(w.seen[key], rev)
	if key == w.pred && rev > w.after {
		w.wake()
	}
}

func (w *deleteWait) wake() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}
