package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

var _ driver.LostCause = (*lockHold)(nil)

// lockHold is a held lock.
type lockHold struct {
	s     *lockStore
	n     *lockNode
	fence int64

	mu       sync.Mutex
	unlocked bool
}

func (l *lockHold) Fence() int64 { return l.fence }

// Lost also looks at the deadline itself: in a process paused past it,
// the timer that closes Lost runs at some point after the resume, in no
// set order with the caller, who must not find the lock still held.
func (l *lockHold) Lost() <-chan struct{} {
	l.s.loseIfPastDeadline(l.n)
	return l.n.lost
}

// LostErr says why the hold was lost, once Lost is closed
// (driver.LostCause).
func (l *lockHold) LostErr() error { return l.s.sess.lostErr(l.n) }

// Unlock deletes the lock's own node, by its path (see removeLockNode), so
// a retried or repeated Unlock can never remove a later holder's node. A
// second call returns nil. If ctx ends before the delete is confirmed the
// removal goes on in the background and Unlock reports ctx's error.
func (l *lockHold) Unlock(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.unlocked {
		return nil
	}
	l.unlocked = true
	s, n := l.s, l.n
	if why := s.sess.startRelease(n); why != nil {
		// A loss that left the node behind started its removal already.
		return fmt.Errorf("zookeeper: lock %q was lost before Unlock (%v): %w", n.name, why, driver.ErrLeaseLost)
	}
	a := attempts{s: s.session}
	unknown := false // an earlier attempt's outcome is unknown
	for {
		_, err := call(ctx, s, func() (struct{}, error) { return struct{}{}, s.conn.Delete(n.path, -1) })
		switch {
		case err == nil || (errors.Is(err, zk.ErrNoNode) && unknown):
			s.releasedLockNode(n)
			return nil
		case errors.Is(err, zk.ErrNoNode):
			// Gone before this Unlock, and no loss was seen: the hold
			// ended without the store knowing (deleted by hand?).
			s.sess.unregister(n)
			return fmt.Errorf("zookeeper: lock %q: node %s was gone before Unlock: %w", n.name, n.path, driver.ErrLeaseLost)
		}
		unknown = true
		if ctx.Err() != nil || errors.Is(err, driver.ErrClosed) {
			s.abandonLockNode(n, 0)
			return err
		}
		if err := a.retry(ctx, err); err != nil {
			s.abandonLockNode(n, 0)
			return fmt.Errorf("zookeeper: unlock %q: delete %s: %w", n.name, n.path, err)
		}
	}
}

// releasedLockNode forgets a released node; if it may have twins, a
// removal sweeps them.
func (s *lockStore) releasedLockNode(n *lockNode) {
	s.sess.mu.Lock()
	twins := n.twins
	s.sess.mu.Unlock()
	if twins {
		s.abandonLockNode(n, 0)
		return
	}
	s.sess.unregister(n)
}
