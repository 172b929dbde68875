package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// How the Locker learns of session changes: from go-zookeeper's event
// callback for a store that made its connection, by polling a caller's
// connection otherwise; and what a change does to the lock nodes.

// sessionPollInterval is how often a store on a caller's connection looks at
// the connection's state while it has lock nodes.
const sessionPollInterval = 50 * time.Millisecond

// sessionChanged follows go-zookeeper's session events (stores made by
// Open), as the store's event callback hands them on (zookeeper.go). It
// runs on go-zookeeper's event goroutine and must not block.
func (s *lockStore) sessionChanged(state zk.State) {
	switch state {
	case zk.StateHasSession:
		// Called right after the handshake was read: the timeout it
		// granted applies to the holds from now on.
		sid, _ := s.handshake()
		s.observeSession(true, sid, false)
		s.sess.mu.Lock()
		s.rebaseLocked(sid)
		s.sess.mu.Unlock()
	case zk.StateExpired:
		s.observeSession(false, 0, true)
	default:
		s.observeSession(false, 0, false)
	}
}

// pollSession follows a caller's connection while the store has lock nodes.
func (s *lockStore) pollSession() {
	ss := &s.sess
	defer ss.wg.Done()
	ticker := time.NewTicker(sessionPollInterval)
	defer ticker.Stop()
	bg := ss.background()
	for {
		state, sid := s.conn.State(), s.conn.SessionID()
		s.observeSession(state == zk.StateHasSession, sid, state == zk.StateExpired)
		ss.mu.Lock()
		if len(ss.nodes) == 0 || ss.closing {
			ss.polling = false
			ss.mu.Unlock()
			return
		}
		ss.mu.Unlock()
		select {
		case <-ticker.C:
		case <-bg.Done():
			ss.mu.Lock()
			ss.polling = false
			ss.mu.Unlock()
			return
		}
	}
}

// observeSession applies one observation: a session sid (has), or none
// (expired when the server said the session is gone).
func (s *lockStore) observeSession(has bool, sid int64, expired bool) {
	ss := &s.sess
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closing {
		return
	}
	if has {
		// Nodes of any other session died with it.
		for n := range ss.nodes {
			if n.sid != 0 && n.sid != sid {
				ss.lose(n, fmt.Errorf("zookeeper: session changed from %#x to %#x: %w", n.sid, sid, zk.ErrSessionExpired), true)
				s.forgetDeadHoldLocked(n)
			}
		}
		// Wake the calls waiting for a session, even without a transition
		// seen: a poller can miss a gap shorter than its interval.
		if ss.sessionUp != nil {
			close(ss.sessionUp)
			ss.sessionUp = nil
		}
		return
	}
	if ss.sessionDown != nil {
		close(ss.sessionDown)
		ss.sessionDown = nil
	}
	if expired {
		for n := range ss.nodes {
			if n.sid != 0 {
				ss.lose(n, fmt.Errorf("zookeeper: session %#x expired: %w", n.sid, zk.ErrSessionExpired), true)
				s.forgetDeadHoldLocked(n)
			}
		}
	}
}

// forgetDeadHoldLocked drops a hold that died with its session: nothing is
// left to remove, and only its lock still refers to it. One that may have
// twins is not known dead: a removal sweeps them, then drops it.
func (s *lockStore) forgetDeadHoldLocked(n *lockNode) {
	if n.phase != held {
		return
	}
	if n.dead() {
		delete(s.sess.nodes, n)
		return
	}
	s.removeLostLocked(n)
}

// removeLostLocked starts the removal of a lost hold. Called with sess.mu held.
func (s *lockStore) removeLostLocked(n *lockNode) {
	ss := &s.sess
	if n.dead() || n.phase == abandoned || ss.stopped {
		return
	}
	n.phase = abandoned
	ss.wg.Add(1)
	go func() {
		defer ss.wg.Done()
		ctx, cancel := ss.cleanupContext()
		defer cancel()
		s.removeLockNode(ctx, n)
	}()
}

// closeLocks is Close's first step for locks: every hold is lost, and on a
// caller's connection (whose session outlives the store) every node is
// removed, within a bound. A connection the store owns ends its session
// when it closes, and the server removes the nodes.
func (s *lockStore) closeLocks() {
	ss := &s.sess
	ss.mu.Lock()
	ss.closing = true
	ss.stopConfirmingLocked()
	var nodes []*lockNode
	for n := range ss.nodes {
		ss.lose(n, errors.New("zookeeper: store closed"), s.owned)
		nodes = append(nodes, n)
	}
	ss.mu.Unlock()
	if !s.owned && len(nodes) > 0 {
		ctx, cancel := context.WithTimeout(ss.background(), min(2*s.sessionTimeout(), 10*time.Second))
		var wg sync.WaitGroup
		for _, n := range nodes {
			wg.Go(func() { s.removeLockNode(ctx, n) })
		}
		wg.Wait()
		cancel()
	}
	ss.mu.Lock()
	ss.stopped = true
	ss.mu.Unlock()
	ss.background()
	ss.bgCancel()
}

// waitLocks is Close's last step for locks: it waits for the goroutines
// of lock cleanup, whose calls end once the connection closes.
func (s *lockStore) waitLocks() { s.sess.wg.Wait() }
