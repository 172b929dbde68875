package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/go-zookeeper/zk"
)

// The liveness rule (docs/design.md, Lock liveness on ZooKeeper): a hold
// is trusted only as long as requests
// that went through the leader prove its session alive. A follower cut off
// from the leader keeps answering pings while the leader expires the
// session, so nothing heard from the connected server counts.
//
// What a confirmed request proves needs care. The leader does not reset a
// session's expiry when a follower forwards one of its requests: it learns
// that a follower's client is alive from the follower's answer to the
// leader's next ping (sent every half tick, and T is at least two ticks, so
// at most T/4 later). Hence:
//
//   - Two confirmed requests sent at a and b >= a+pairSpacing (> T/4): the
//     ping answer reporting a went up the follower's one link to the leader
//     before b did, and b was answered, so the leader counts the session
//     from a or later: it cannot expire before a+T.
//   - One confirmed request sent at b, alone: the client pings every T/3
//     (go-zookeeper does), so some activity at or after b-T/4-T/3 was
//     reported before b went up: the session lives until b+5T/12.
//
// Lost closes at the best of these instants less a margin, on the lock's
// clock (lock_clock.go), which counts time suspended where it can. T is the
// timeout of the last handshake: the server applies the timeout it granted
// on a reconnect at once, shorter or longer, so each handshake re-bases the
// deadline on the confirmations with the new T (rebaseLocked). While the
// store holds a lock, one loop sends a confirming write (confirmRequest)
// every pairSpacing (< T/3), serving every hold; without holds it does not
// run.

// confirmMarginDivisor: the margin is T/20, for timer latency and the
// leader's clock rounding.
const confirmMarginDivisor = 20

// pairSpacing is the least distance between two confirmed requests that
// proves the first was reported to the leader, and the loop's period.
func pairSpacing(t time.Duration) time.Duration { return t * 3 / 10 }

// aliveUntil is how long after its send time a request confirmed alone, or
// the first of a pair, proves the session alive, less the margin.
func aliveUntil(t time.Duration, paired bool) time.Duration {
	if paired {
		return t - t/confirmMarginDivisor
	}
	return t*5/12 - t/confirmMarginDivisor
}

// confirmed records a request sent at sent (lockNow) in session sid that
// the leader answered. Called with sess.mu held.
func (s *lockStore) confirmedLocked(sid int64, sent time.Duration) {
	ss := &s.sess
	if sid != ss.confirmSID {
		ss.confirmSID, ss.recent, ss.latest, ss.deadline = sid, nil, 0, 0
	}
	ss.confirmErr = nil
	ss.latest = max(ss.latest, sent)
	t := s.sessionTimeout()
	best := sent + aliveUntil(t, false)
	// The best partner is the latest request sent pairSpacing before; of
	// those, only the latest is kept. Requests closer together than T/50
	// are kept as the earliest of them (which only makes a deadline
	// earlier), so a busy store keeps a few dozen entries, not one per Lock.
	keep := ss.recent[:0]
	for i, a := range ss.recent {
		if sent-a >= pairSpacing(t) {
			best = max(best, a+aliveUntil(t, true))
			if i+1 < len(ss.recent) && sent-ss.recent[i+1] >= pairSpacing(t) {
				continue // superseded by a later partner
			}
		}
		keep = append(keep, a)
	}
	if len(keep) == 0 || sent-keep[len(keep)-1] >= t/50 {
		keep = append(keep, sent)
	}
	ss.recent = keep
	if best > ss.deadline {
		ss.deadline = best
		s.armDeadlineLocked()
	}
}

// deadlineFrom is the deadline that the confirmations recent (oldest first,
// as confirmedLocked keeps them) and latest prove for the timeout t: the
// latest alone, or paired with any earlier one at least pairSpacing before.
func deadlineFrom(recent []time.Duration, latest, t time.Duration) time.Duration {
	best := latest + aliveUntil(t, false)
	for _, a := range recent {
		if latest-a >= pairSpacing(t) {
			best = max(best, a+aliveUntil(t, true))
		}
	}
	return best
}

// rebaseLocked follows a handshake of session sid: the deadline is computed
// again from the confirmations with the timeout negotiated now, earlier as
// well as later, and holds past it are lost at once. Confirmations sent
// before the handshake still count: the session lived through them, and
// the server counts the new timeout from the handshake or later. Called
// with sess.mu held.
func (s *lockStore) rebaseLocked(sid int64) {
	ss := &s.sess
	if sid != ss.confirmSID || len(ss.recent) == 0 || ss.closing {
		return
	}
	ss.deadline = deadlineFrom(ss.recent, ss.latest, s.sessionTimeout())
	if ss.lockNow() >= ss.deadline {
		s.unconfirmedLocked()
	}
	s.armDeadlineLocked()
	select {
	case ss.confirmWake <- struct{}{}: // the loop's period follows T
	default:
	}
}

// confirmed is confirmedLocked for callers without the lock.
func (s *lockStore) confirmed(sid int64, sent time.Duration) {
	s.sess.mu.Lock()
	defer s.sess.mu.Unlock()
	s.confirmedLocked(sid, sent)
}

// liveLocked reports whether holds of session sid are proven alive now.
func (ss *lockSession) liveLocked(sid int64) bool {
	return sid == ss.confirmSID && ss.lockNow() < ss.deadline
}

// armDeadlineLocked sets the timer that loses every hold at the deadline.
// It waits deadlineStep at most at a time and then looks at the lock's
// clock again: Go's timers do not count time suspended (lock_clock.go).
func (s *lockStore) armDeadlineLocked() {
	ss := &s.sess
	if ss.closing {
		return
	}
	ss.deadlineGen++
	gen := ss.deadlineGen
	if ss.deadlineTimer != nil {
		ss.deadlineTimer.Stop()
	}
	ss.deadlineTimer = time.AfterFunc(min(ss.deadline-ss.lockNow(), deadlineStep), func() {
		ss.mu.Lock()
		defer ss.mu.Unlock()
		switch {
		case gen != ss.deadlineGen || ss.closing:
		case ss.lockNow() >= ss.deadline:
			s.unconfirmedLocked()
		default:
			s.armDeadlineLocked()
		}
	})
}

// loseIfPastDeadline does the deadline timer's work now if the deadline
// has passed and n is still held (see lockHold.Lost).
func (s *lockStore) loseIfPastDeadline(n *lockNode) {
	ss := &s.sess
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if n.phase == held && n.lostErr == nil && !ss.closing &&
		n.sid == ss.confirmSID && ss.lockNow() >= ss.deadline {
		s.unconfirmedLocked()
	}
}

// unconfirmedLocked loses every hold: the session may have expired at the
// leader by now. Each node is removed in the background, in case the
// session lives on.
func (s *lockStore) unconfirmedLocked() {
	ss := &s.sess
	why := fmt.Errorf("zookeeper: session not confirmed through the leader for the session timeout (%v) less a margin", s.sessionTimeout())
	if ss.confirmErr != nil {
		why = fmt.Errorf("zookeeper: session not confirmed through the leader for the session timeout (%v) less a margin; the last confirmation failed: %w",
			s.sessionTimeout(), ss.confirmErr)
	}
	for n := range ss.nodes {
		if n.phase == held {
			ss.lose(n, why, false)
			s.removeLostLocked(n)
		}
	}
}

// startConfirmingLocked starts the loop if a hold exists and it is not
// running. Called with sess.mu held, after a hold was marked.
func (s *lockStore) startConfirmingLocked() {
	ss := &s.sess
	if ss.confirming || ss.stopped || ss.closing {
		return
	}
	ss.confirming = true
	if ss.confirmWake == nil {
		ss.confirmWake = make(chan struct{}, 1)
	}
	ss.wg.Add(1)
	go s.confirmLoop()
}

// holdsLocked reports whether the store holds a lock.
func (ss *lockSession) holdsLocked() bool {
	for n := range ss.nodes {
		if n.phase == held && n.lostErr == nil && !n.releasing {
			return true
		}
	}
	return false
}

// confirmLoop sends confirming writes while the store holds a lock.
func (s *lockStore) confirmLoop() {
	ss := &s.sess
	defer ss.wg.Done()
	bg := ss.background()
	for {
		ss.mu.Lock()
		if !ss.holdsLocked() || ss.closing {
			ss.confirming = false
			ss.mu.Unlock()
			return
		}
		var last time.Duration
		if len(ss.recent) > 0 {
			last = ss.recent[len(ss.recent)-1]
		}
		// Every pairSpacing; sooner while the deadline is less than T/4
		// away (after a lone confirmation), so each confirmation has T/4
		// to come back before the holds are lost.
		t := s.sessionTimeout()
		wait := min(last+pairSpacing(t), ss.deadline-t/4) - ss.lockNow()
		wake := ss.confirmWake
		ss.mu.Unlock()
		if wait <= 0 {
			s.confirmOnce(bg.Done())
			continue
		}
		timer := time.NewTimer(min(wait, deadlineStep))
		select {
		case <-timer.C:
		case <-wake:
			timer.Stop()
		case <-bg.Done():
			timer.Stop()
		}
	}
}

// confirmOnce sends one confirming write through the leader and records it
// if it is answered in the session it was sent in. A failure waits a little
// (the deadline timer, not this loop, decides when holds are lost).
func (s *lockStore) confirmOnce(stop <-chan struct{}) {
	sid := s.conn.SessionID()
	nodes := s.sess.heldNodes(sid)
	if len(nodes) > 0 {
		sent := s.sess.lockNow()
		res, err := s.confirmRequest(nodes)
		if err == nil && sid != 0 && s.conn.SessionID() == sid {
			s.confirmed(sid, sent)
			return
		}
		if err != nil {
			s.confirmFailed(nodes, res, err)
		}
	}
	t := time.NewTimer(s.retry.sleep(0))
	defer t.Stop()
	select {
	case <-t.C:
	case <-stop:
	}
}

// confirmChecks bounds the nodes one confirmation checks, so that a store
// holding many locks sends a bounded request (the server refuses one over
// jute.maxbuffer, 1 MiB by default). Any one proves the session alive.
const confirmChecks = 64

// heldNodes returns up to confirmChecks of the store's holds of session
// sid, a different choice each time (map order), so that every hold's node
// is checked in turn.
func (ss *lockSession) heldNodes(sid int64) []*lockNode {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var out []*lockNode
	for n := range ss.nodes {
		if len(out) == confirmChecks {
			break
		}
		if n.phase == held && n.lostErr == nil && !n.releasing && n.sid == sid && sid != 0 && n.path != "" {
			out = append(out, n)
		}
	}
	return out
}

// confirmRequest sends the request that proves the session alive: a write
// the leader commits only with a quorum, a multi that checks that each of
// nodes (the lock nodes it confirms) exists and changes nothing. It needs
// only what the lock needs, read permission on the store's own lock nodes,
// and proves those nodes are still there. A sync will not do: a leader cut
// off from its followers answers its own clients' syncs alone until it
// notices the lost quorum, up to a tick after the others may have elected
// a new leader and expired the session.
func (s *lockStore) confirmRequest(nodes []*lockNode) ([]zk.MultiResponse, error) {
	ops := make([]any, len(nodes))
	s.sess.mu.Lock()
	for i, n := range nodes {
		ops[i] = &zk.CheckVersionRequest{Path: n.path, Version: -1}
	}
	s.sess.mu.Unlock()
	return s.conn.Multi(ops...)
}

// confirmFailed records why a confirmation of nodes failed. A node the
// check found missing was deleted behind the store's back: its hold is lost
// at once. A refusal is kept to name in the cause of a loss at the deadline:
// the server answered, but answers nothing that proves the session alive.
func (s *lockStore) confirmFailed(nodes []*lockNode, res []zk.MultiResponse, err error) {
	ss := &s.sess
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.confirmErr = err
	for i, r := range res {
		if i >= len(nodes) {
			break
		}
		n := nodes[i]
		switch {
		case errors.Is(r.Error, zk.ErrNoNode):
			// Unless Unlock deleted it meanwhile.
			if n.lostErr == nil && n.phase == held && !n.releasing {
				ss.lose(n, fmt.Errorf("zookeeper: lock %q: its node %s was deleted, not by this store: %w", n.name, n.path, driver.ErrLeaseLost), false)
				s.removeLostLocked(n)
			}
			ss.confirmErr = nil
		case errors.Is(r.Error, zk.ErrNoAuth):
			ss.confirmErr = noReadError(n, r.Error)
			return
		}
	}
}

// noReadError says that checking n's node needs read permission on it.
func noReadError(n *lockNode, err error) error {
	return fmt.Errorf("zookeeper: lock %q: the server refused to check the store's lock node %s: "+
		"the store needs read permission on its lock nodes (acl option): %w", n.name, n.path, err)
}

// stopConfirmingLocked stops the deadline timer (Close).
func (ss *lockSession) stopConfirmingLocked() {
	ss.deadlineGen++
	if ss.deadlineTimer != nil {
		ss.deadlineTimer.Stop()
		ss.deadlineTimer = nil
	}
}

// ensureLive makes sure n's session is proven alive before n becomes a
// hold: a waiter granted long after its create sends one confirming write
// (a check of its own node) first. An uncontended Lock is granted on its
// create's confirmation, with no extra round trip.
func (s *lockStore) ensureLive(ctx context.Context, n *lockNode) error {
	s.sess.mu.Lock()
	live := s.sess.liveLocked(n.sid)
	s.sess.mu.Unlock()
	if live {
		return nil
	}
	sent := s.sess.lockNow()
	res, err := call(ctx, s, func() ([]zk.MultiResponse, error) { return s.confirmRequest([]*lockNode{n}) })
	switch {
	case err == nil:
	case ctx.Err() != nil || errors.Is(err, driver.ErrClosed):
		return err
	case len(res) == 1 && errors.Is(res[0].Error, zk.ErrNoAuth):
		return noReadError(n, res[0].Error)
	default:
		return fmt.Errorf("zookeeper: confirm the session: %v: %w", err, errRequeue)
	}
	if s.conn.SessionID() == n.sid {
		s.confirmed(n.sid, sent)
	}
	return nil
}
