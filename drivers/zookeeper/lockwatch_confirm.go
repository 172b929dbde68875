package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/go-zookeeper/zk"
)

// The liveness rule of SPEC 5: a hold is trusted only as long as requests
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
// Lost closes at the best of these instants less a margin, on the monotonic
// clock. While the store holds a lock, one loop sends a confirming write
// (confirmRequest) every pairSpacing (< T/3), serving every hold; without
// holds it does not run.

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

// confirmed records a request sent at sent (monoNow) in session sid that
// the leader answered. Called with lk.mu held.
func (s *Store) confirmedLocked(sid int64, sent time.Duration) {
	lk := &s.lk
	if sid != lk.confirmSID {
		lk.confirmSID, lk.recent, lk.deadline = sid, nil, 0
	}
	t := lk.sessionTimeout()
	best := sent + aliveUntil(t, false)
	// The best partner is the latest request sent pairSpacing before; of
	// those, only the latest is kept. Requests closer together than T/50
	// are kept as the earliest of them (which only makes a deadline
	// earlier), so a busy store keeps a few dozen entries, not one per Lock.
	keep := lk.recent[:0]
	for i, a := range lk.recent {
		if sent-a >= pairSpacing(t) {
			best = max(best, a+aliveUntil(t, true))
			if i+1 < len(lk.recent) && sent-lk.recent[i+1] >= pairSpacing(t) {
				continue // superseded by a later partner
			}
		}
		keep = append(keep, a)
	}
	if len(keep) == 0 || sent-keep[len(keep)-1] >= t/50 {
		keep = append(keep, sent)
	}
	lk.recent = keep
	if best > lk.deadline {
		lk.deadline = best
		s.armDeadlineLocked()
	}
}

// confirmed is confirmedLocked for callers without the lock.
func (s *Store) confirmed(sid int64, sent time.Duration) {
	s.lk.mu.Lock()
	defer s.lk.mu.Unlock()
	s.confirmedLocked(sid, sent)
}

// liveLocked reports whether holds of session sid are proven alive now.
func (lk *lockState) liveLocked(sid int64) bool {
	return sid == lk.confirmSID && monoNow() < lk.deadline
}

// armDeadlineLocked sets the timer that loses every hold at the deadline.
func (s *Store) armDeadlineLocked() {
	lk := &s.lk
	if lk.closing {
		return
	}
	lk.deadlineGen++
	gen := lk.deadlineGen
	if lk.deadlineTimer != nil {
		lk.deadlineTimer.Stop()
	}
	lk.deadlineTimer = time.AfterFunc(lk.deadline-monoNow(), func() {
		lk.mu.Lock()
		defer lk.mu.Unlock()
		if gen == lk.deadlineGen && !lk.closing {
			s.unconfirmedLocked()
		}
	})
}

// loseIfPastDeadline does the deadline timer's work now if the deadline
// has passed and n is still held (see zkLock.Lost).
func (s *Store) loseIfPastDeadline(n *lockNode) {
	lk := &s.lk
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if n.phase == held && n.lostErr == nil && !lk.closing &&
		n.sid == lk.confirmSID && monoNow() >= lk.deadline {
		s.unconfirmedLocked()
	}
}

// unconfirmedLocked loses every hold: the session may have expired at the
// leader by now. Each node is removed in the background, in case the
// session lives on.
func (s *Store) unconfirmedLocked() {
	lk := &s.lk
	why := fmt.Errorf("zookeeper: session not confirmed through the leader for the session timeout (%v) less a margin", lk.sessionTimeout())
	for n := range lk.nodes {
		if n.phase == held {
			lk.lose(n, why, false)
			s.removeLostLocked(n)
		}
	}
}

// startConfirmingLocked starts the loop if a hold exists and it is not
// running. Called with lk.mu held, after a hold was marked.
func (s *Store) startConfirmingLocked() {
	lk := &s.lk
	if lk.confirming || lk.stopped || lk.closing {
		return
	}
	lk.confirming = true
	lk.wg.Add(1)
	go s.confirmLoop()
}

// holdsLocked reports whether the store holds a lock.
func (lk *lockState) holdsLocked() bool {
	for n := range lk.nodes {
		if n.phase == held && n.lostErr == nil {
			return true
		}
	}
	return false
}

// confirmLoop sends confirming writes while the store holds a lock.
func (s *Store) confirmLoop() {
	lk := &s.lk
	defer lk.wg.Done()
	bg := lk.background()
	for {
		lk.mu.Lock()
		if !lk.holdsLocked() || lk.closing {
			lk.confirming = false
			lk.mu.Unlock()
			return
		}
		var last time.Duration
		if len(lk.recent) > 0 {
			last = lk.recent[len(lk.recent)-1]
		}
		// Every pairSpacing; sooner while the deadline is less than T/4
		// away (after a lone confirmation), so each confirmation has T/4
		// to come back before the holds are lost.
		t := lk.sessionTimeout()
		wait := min(last+pairSpacing(t), lk.deadline-t/4) - monoNow()
		lk.mu.Unlock()
		if wait <= 0 {
			s.confirmOnce(bg.Done())
			continue
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-bg.Done():
			timer.Stop()
		}
	}
}

// confirmOnce sends one confirming write through the leader and records it if it is
// answered in the session it was sent in. A failure waits a little (the
// deadline timer, not this loop, decides when holds are lost).
func (s *Store) confirmOnce(stop <-chan struct{}) {
	sid := s.conn.SessionID()
	sent := monoNow()
	err := s.confirmRequest()
	if err == nil && sid != 0 && s.conn.SessionID() == sid {
		s.confirmed(sid, sent)
		return
	}
	t := time.NewTimer(s.retry.sleep(0))
	defer t.Stop()
	select {
	case <-t.C:
	case <-stop:
	}
}

// confirmRequest sends the request that proves the session alive: a write
// the leader commits only with a quorum, a multi that checks the root exists
// and changes nothing. A sync will not do: a leader cut off from its
// followers answers its own clients' syncs alone until it notices the lost
// quorum, up to a tick after the others may have elected a new leader and
// expired the session.
func (s *Store) confirmRequest() error {
	root := s.root
	if root == "" {
		root = "/"
	}
	_, err := s.conn.Multi(&zk.CheckVersionRequest{Path: root, Version: -1})
	return err
}

// stopConfirmingLocked stops the deadline timer (Close).
func (lk *lockState) stopConfirmingLocked() {
	lk.deadlineGen++
	if lk.deadlineTimer != nil {
		lk.deadlineTimer.Stop()
		lk.deadlineTimer = nil
	}
}

// ensureLive makes sure n's session is proven alive before n becomes a
// hold: a waiter granted long after its create sends one confirming write first. An
// uncontended Lock is granted on its create's confirmation, with no extra
// round trip.
func (s *Store) ensureLive(ctx context.Context, n *lockNode) error {
	s.lk.mu.Lock()
	live := s.lk.liveLocked(n.sid)
	s.lk.mu.Unlock()
	if live {
		return nil
	}
	sent := monoNow()
	_, err := call(ctx, s, func() (struct{}, error) { return struct{}{}, s.confirmRequest() })
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, driver.ErrClosed) {
			return err
		}
		return fmt.Errorf("zookeeper: confirm the session: %v: %w", err, errRequeue)
	}
	if s.conn.SessionID() == n.sid {
		s.confirmed(n.sid, sent)
	}
	return nil
}
