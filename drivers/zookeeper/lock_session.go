package zookeeper

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// This file follows the session on behalf of the Locker: which lock nodes
// the store has (or may have) created, which session each belongs to, and
// when a held lock must be reported lost. The recipe itself is in lock_store.go.
//
// A lock is lost when its session ends (expired, or replaced by another
// session), when the store closes, or when requests through the leader no
// longer prove the session alive (lock_confirm.go). For that last rule
// the store needs the negotiated session timeout, which go-zookeeper does
// not expose: the session reads it off the wire of a store that made its
// connection (Open; wire_sniff.go), and a store on a caller's connection
// (New) is told it by the caller (option sessionTimeout). How the
// Locker learns that the session changed, and what that does to the
// holds, is in lock_lost.go.

// lockSession is the Locker's view of the session: the lock nodes on it,
// the liveness rule's state (lock_confirm.go), the shared watches
// (lock_watch.go) and the lock cleanup's goroutines. The zero value is
// ready.
type lockSession struct {
	mu      sync.Mutex
	nodes   map[*lockNode]struct{}
	closing bool // Close began: no new nodes, session news ignored
	// The liveness rule (lock_confirm.go).
	clock         func() time.Duration // the clock of deadlines; nil: lockNow's (a test's otherwise)
	confirmSID    int64                // the session recent and deadline are of
	recent        []time.Duration      // send times of confirmed requests, oldest first
	latest        time.Duration        // the latest send time confirmed
	deadline      time.Duration        // lockNow() until which holds are proven alive
	confirmErr    error                // why the last confirmation failed, nil after one succeeded
	confirmWake   chan struct{}        // wakes the confirmation loop when the timeout changed
	sessionDown   chan struct{}        // closed when the connection loses its session (TryLock)
	beforeCreate  func()               // a test's: runs in sendCreate between counting the call in and marking the create in flight
	beforeRemove  func()               // a test's: runs in an abandoned node's removal before it starts
	deadlineTimer *time.Timer
	deadlineGen   int                     // invalidates a timer that fired too late to be stopped
	confirming    bool                    // the confirmation loop runs
	watches       map[string]*sharedWatch // one watch per path (lock_watch.go)
	fired         atomic.Int64            // watches that fired (tests count what an Unlock costs other stores)
	stopped       bool                    // Close is done with lock cleanup: no new background work
	polling       bool                    // the poller of a caller's connection runs
	sessionUp     chan struct{}           // closed when a session is (re)gained
	wg            sync.WaitGroup

	bgOnce   sync.Once
	bg       context.Context // ends when Close is done with lock cleanup
	bgCancel context.CancelFunc
}

func (ss *lockSession) background() context.Context {
	ss.bgOnce.Do(func() { ss.bg, ss.bgCancel = context.WithCancel(context.Background()) })
	return ss.bg
}

// cleanupContext is a removal's: it ends only when Close is done with lock
// cleanup. A removal must not give up on a timer: a session outlives any
// outage during which the ensemble has no leader (a new leader gives every
// session a new timeout), so a node given up on could stay, and block its
// lock, for as long as the store lives. A removal ends once its node is
// deleted or known dead with its session.
func (ss *lockSession) cleanupContext() (context.Context, context.CancelFunc) {
	return context.WithCancel(ss.background())
}

// The lock cleanup is a callGroup of its own (see call): a removal is
// counted for Close separately, and it does not stop when Close begins,
// only when its context ends.

func (ss *lockSession) goCall(fn func()) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.stopped {
		return false
	}
	ss.wg.Add(1)
	go func() {
		defer ss.wg.Done()
		fn()
	}()
	return true
}

func (ss *lockSession) callEnd() <-chan struct{} { return nil }

func (ss *lockSession) ctxErr(err error, _ time.Duration) error { return err }

// spawn runs f in a goroutine Close waits for, unless Close is done with
// lock cleanup; the returned channel closes when f returns (at once if f
// did not run).
func (ss *lockSession) spawn(f func()) <-chan struct{} {
	done := make(chan struct{})
	if !ss.goCall(func() {
		defer close(done)
		f()
	}) {
		close(done)
	}
	return done
}

// registerLockNode records a node about to be created, so that Close and
// the session tracking know of it from before its create is sent.
func (s *lockStore) registerLockNode(name, owner string) (*lockNode, error) {
	// A GUID per node, not per Lock call: a late removal of an earlier
	// node of the call must never match a later one.
	guid, err := newLockGUID()
	if err != nil {
		return nil, err
	}
	ss := &s.sess
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closing {
		return nil, driver.ErrClosed
	}
	n := &lockNode{
		name:   name,
		parent: s.lockParent(name),
		guid:   guid,
		owner:  owner,
		lost:   make(chan struct{}),
	}
	if ss.nodes == nil {
		ss.nodes = map[*lockNode]struct{}{}
	}
	ss.nodes[n] = struct{}{}
	if s.wire == nil && !ss.polling {
		ss.polling = true
		ss.wg.Add(1) // not stopped: closing is set first, under mu
		go s.pollSession()
	}
	return n, nil
}

func (ss *lockSession) unregister(n *lockNode) {
	ss.mu.Lock()
	delete(ss.nodes, n)
	ss.mu.Unlock()
}

// sessionLoss returns a channel closed once the connection loses its
// session, or ErrUnavailable if it has none now (TryLock).
func (s *lockStore) sessionLoss() (<-chan struct{}, error) {
	ss := &s.sess
	ss.mu.Lock()
	if ss.sessionDown == nil {
		ss.sessionDown = make(chan struct{})
	}
	down := ss.sessionDown
	ss.mu.Unlock()
	// Looked at after the channel was taken: a loss from now on closes it.
	if st := s.conn.State(); st != zk.StateHasSession || s.conn.SessionID() == 0 {
		return nil, fmt.Errorf("the connection has no session now (state %v): %w", st, driver.ErrUnavailable)
	}
	return down, nil
}

// setSession fixes the session of a node whose create has not been sent.
func (ss *lockSession) setSession(n *lockNode, sid int64) {
	ss.mu.Lock()
	n.sid = sid
	ss.mu.Unlock()
}

// startCreate notes a create in flight; createAnswered ends it.
// It refuses (nil) once Close began: closeLocks has then collected the
// nodes to remove, and on a caller's connection a create sent now would
// leave a node in a session that outlives the store.
func (ss *lockSession) startCreate(n *lockNode) chan struct{} {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closing {
		return nil
	}
	n.inflight = make(chan struct{})
	return n.inflight
}

// createAnswered records go-zookeeper's answer to a create, which may come
// after the Lock call stopped waiting for it. The create was sent in
// session n.sid; if that is still the session, the node is of it, since a
// session never comes back once replaced.
//
// A create is a write, so the leader answered it: it confirms the session
// as of sent (see lock_confirm.go).
func (ss *lockSession) createAnswered(s *lockStore, n *lockNode, done chan struct{}, sent time.Duration, path string, czxid int64, err error) {
	sid := s.conn.SessionID()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if err == nil {
		n.path, n.czxid = path, czxid
		n.confirmed = sid == n.sid
		if n.confirmed {
			s.confirmedLocked(sid, sent)
		}
	}
	close(done)
}

func (ss *lockSession) isConfirmed(n *lockNode) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return n.confirmed
}

// nodeState returns what a removal needs to know of n.
func (ss *lockSession) nodeState(n *lockNode) (path string, inflight chan struct{}, dead bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return n.path, n.inflight, n.dead()
}

// lose closes n's Lost with why; gone says the node died with it.
// Called with sess.mu held.
func (ss *lockSession) lose(n *lockNode, why error, gone bool) {
	if gone {
		n.gone = true
	}
	if n.lostErr == nil {
		n.lostErr = why
		close(n.lost)
	}
}

// startRelease marks n as being deleted by Unlock, unless it was lost:
// then it returns why.
func (ss *lockSession) startRelease(n *lockNode) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if n.lostErr == nil {
		n.releasing = true
	}
	return n.lostErr
}

// lostErr returns why n was lost, or nil.
func (ss *lockSession) lostErr(n *lockNode) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return n.lostErr
}

// markHeld makes n a holder, unless it was lost meanwhile or its session is
// not proven alive through the leader now (see ensureLive): then the Lock
// call starts again.
func (s *lockStore) markHeld(n *lockNode) error {
	ss := &s.sess
	ss.mu.Lock()
	defer ss.mu.Unlock()
	switch {
	case ss.closing:
		return driver.ErrClosed
	case n.lostErr != nil:
		return fmt.Errorf("%v: %w", n.lostErr, errRequeue)
	case !ss.liveLocked(n.sid):
		return fmt.Errorf("the session was not confirmed through the leader in time: %w", errRequeue)
	}
	n.phase = held
	s.startConfirmingLocked()
	return nil
}

// markAbandoned hands n to a removal; it returns false if one runs already.
func (ss *lockSession) markAbandoned(n *lockNode) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if n.phase == abandoned {
		return false
	}
	n.stray = n.phase == waiting
	n.phase = abandoned
	return true
}

// strays returns the GUIDs of this store's nodes under parent that are
// being removed and were never held: a failed Lock's or TryLock's. They
// are nobody's hold or wait, so the store's own next attempt on the name
// does not queue behind them (a TryLock does not wait for their delete,
// and would otherwise report ErrLocked with nobody holding or waiting).
// Other stores see them as nodes ahead until they are gone, which only
// makes them wait longer.
func (ss *lockSession) strays(parent string) map[string]bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var guids map[string]bool
	for n := range ss.nodes {
		if n.stray && n.phase == abandoned && n.parent == parent {
			if guids == nil {
				guids = map[string]bool{}
			}
			guids[n.guid] = true
		}
	}
	return guids
}
