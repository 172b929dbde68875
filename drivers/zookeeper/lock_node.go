package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// createLockNode creates n's node, creating the parents if missing. After
// an answer that leaves the outcome unknown it looks for the node by its
// GUID and uses it if found, or creates again. It returns errRequeue if the
// node may belong to another session than n.sid. It also returns where
// the answer of a listing sent behind the create comes, or nil.
func (s *driverStore) createLockNode(ctx context.Context, n *lockNode) (<-chan listing, error) {
	a := attempts{s: s}
	prefix := n.parent + "/" + lockNodePrefix + n.guid + lockNodeInfix
	// The node will belong to the session current now: a create sent in
	// one session cannot land in an earlier one, and one that lands in a
	// later one is caught by comparing again when it answers.
	sid, err := s.waitLockSession(ctx)
	if err != nil {
		return nil, err
	}
	s.lk.setSession(n, sid)
	for {
		if s.conn.SessionID() != n.sid {
			return nil, fmt.Errorf("the session changed before the create: %w", errRequeue)
		}
		early, err := s.sendCreate(ctx, n, prefix)
		switch {
		case err == nil:
			if !s.lk.isConfirmed(n) {
				return nil, fmt.Errorf("the session changed around the create: %w", errRequeue)
			}
			return early, nil
		case errors.Is(err, zk.ErrNoNode):
			if err := s.createLockParent(ctx, n.parent, &a); err != nil {
				return nil, err
			}
			continue
		case definite(err):
			return nil, fmt.Errorf("zookeeper: create %s: %w", prefix, err)
		case ctx.Err() != nil || errors.Is(err, driver.ErrClosed):
			// The create may still be in flight; the removal waits for it.
			return nil, err
		}
		// Connection lost: the create may or may not have been applied.
		if err := a.retry(ctx, err); err != nil {
			return nil, fmt.Errorf("zookeeper: create %s: %w", prefix, err)
		}
		found, err := s.findLockNode(ctx, n, &a)
		if err != nil {
			return nil, err
		}
		if found {
			return nil, nil
		}
	}
}

// sendCreate sends n's create and waits for its answer, ctx or Close.
// Unlike call, it marks the create in flight only once it is sure to be
// sent, and go-zookeeper's answer is recorded in n whenever it comes, so a
// removal can wait for a create this call stopped waiting for. On a store
// with its own connection it also sends the first listing right behind the
// create (lockcreate.go) and returns where its answer will come; nil
// otherwise.
func (s *driverStore) sendCreate(ctx context.Context, n *lockNode, prefix string) (<-chan listing, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !s.enter() {
		return nil, driver.ErrClosed
	}
	if s.lk.beforeCreate != nil {
		s.lk.beforeCreate()
	}
	done := s.lk.startCreate(n)
	if done == nil {
		s.calls.Done()
		return nil, driver.ErrClosed
	}
	var (
		early    chan listing
		written  chan struct{}
		answered = make(chan struct{})
	)
	if s.lk.sniffing && !s.lk.plainCreate.Load() && s.enter() {
		early = make(chan listing, 1)
		written = s.lk.creates.add(n.guid)
		go s.listBehindCreate(n, written, answered, early)
	}
	answer := make(chan error, 1)
	go func() {
		defer s.calls.Done()
		sent := s.lk.lockNow()
		path, czxid, err := s.createNode(n, prefix)
		if written != nil {
			s.lk.creates.remove(n.guid, written)
		}
		close(answered)
		s.lk.createAnswered(s, n, done, sent, path, czxid, err)
		answer <- err
	}()
	select {
	case err := <-answer:
		return early, err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.closing:
		return nil, driver.ErrClosed
	}
}

// createLockParent creates a lock name's node as a container (ZooKeeper
// 3.5+), so the server deletes it once its last waiter is gone: programs
// that lock per entity do not grow the tree without bound. Sequence
// numbers then start again in a new parent; fences, being czxids, still
// only grow. Its ancestors are persistent.
func (s *driverStore) createLockParent(ctx context.Context, parent string, a *attempts) error {
	if err := s.createParents(ctx, parent, a); err != nil {
		return err
	}
	for {
		_, err := call(ctx, s, func() (string, error) { return s.conn.CreateContainer(parent, nil, zk.FlagContainer, s.acl) })
		if err == nil || errors.Is(err, zk.ErrNodeExists) {
			return nil
		}
		if definite(err) {
			return fmt.Errorf("zookeeper: create %s: %w", parent, err)
		}
		if err := a.retry(ctx, err); err != nil {
			return fmt.Errorf("zookeeper: create %s: %w", parent, err)
		}
	}
}

// findLockNode looks for n's node by its GUID after a create whose outcome
// is unknown, and adopts it only if the session is still n's (sessions
// never come back, so the same session before and after means the node is
// of that session). It marks n as possibly having a twin: a create lost in
// flight that the server applies later.
func (s *driverStore) findLockNode(ctx context.Context, n *lockNode, a *attempts) (bool, error) {
	kids, err := s.lockChildren(ctx, n.parent, a)
	if errors.Is(err, driver.ErrNotFound) {
		// No parent (an unused container the server deleted), so no node:
		// the create failed with NoNode; the caller makes the parent and
		// creates again.
		kids, err = nil, nil
	}
	if err != nil {
		return false, err
	}
	best, bestSeq := "", int32(0)
	for _, k := range kids {
		if g, seq, ok := parseLockNode(k); ok && g == n.guid && (best == "" || seqCompare(seq, bestSeq) < 0) {
			best, bestSeq = k, seq
		}
	}
	s.lk.mu.Lock()
	defer s.lk.mu.Unlock()
	n.twins = true
	if best == "" {
		return false, nil
	}
	n.path = n.parent + "/" + best
	if s.conn.SessionID() != n.sid {
		return false, fmt.Errorf("the session changed before the node was found: %w", errRequeue)
	}
	n.confirmed = true
	return true, nil
}

// lockChildren lists a lock's nodes; a missing parent gives ErrNotFound.
func (s *driverStore) lockChildren(ctx context.Context, parent string, a *attempts) ([]string, error) {
	for {
		kids, err := call(ctx, s, func() ([]string, error) {
			kids, _, err := s.conn.Children(parent)
			return kids, err
		})
		switch {
		case err == nil:
			return kids, nil
		case errors.Is(err, zk.ErrNoNode):
			return nil, fmt.Errorf("zookeeper: no lock node %s: %w", parent, driver.ErrNotFound)
		}
		if err := a.retry(ctx, err); err != nil {
			return nil, fmt.Errorf("zookeeper: list %s: %w", parent, err)
		}
	}
}

// removeTwins deletes other nodes with n's GUID: creates applied although
// their answer was lost. They are n's own, so deleting them harms nobody;
// one that cannot be deleted now stays marked for n's removal to sweep.
func (s *driverStore) removeTwins(ctx context.Context, n *lockNode, twins []string) {
	s.lk.mu.Lock()
	n.twins = true
	s.lk.mu.Unlock()
	for _, t := range twins {
		path := n.parent + "/" + t
		if _, err := call(ctx, s, func() (struct{}, error) { return struct{}{}, s.conn.Delete(path, -1) }); err != nil {
			return // the sweep at removal retries
		}
	}
}

// abandonLockNode removes n's node (or the node it may have, if the create
// is in flight or its outcome unknown) on a context of its own, never the
// caller's, which may have ended. It waits up to wait for the removal,
// which goes on in the background after that.
func (s *driverStore) abandonLockNode(n *lockNode, wait time.Duration) {
	if !s.lk.markAbandoned(n) {
		return
	}
	done := s.lk.spawn(func() {
		ctx, cancel := s.lk.cleanupContext()
		defer cancel()
		s.removeLockNode(ctx, n)
	})
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// removeLockNode deletes n's node, retrying until it succeeds, the node is
// known to have died with its session, the store's connection closes, or
// ctx ends. Deleting by path is safe whatever happened meanwhile: the path
// holds n's GUID and a sequence number the parent never gives again, so it
// can only name n's own node.
func (s *driverStore) removeLockNode(ctx context.Context, n *lockNode) {
	path, inflight, _ := s.lk.nodeState(n)
	if path == "" && inflight == nil {
		s.lk.unregister(n)
		return // no create was sent
	}
	if inflight != nil {
		// go-zookeeper keeps unsent requests across a reconnect, even into
		// a new session, so the create may land long after: wait for its
		// answer, or its node would block the lock for as long as the
		// store lives. Only Close ends the wait (its connection closing
		// answers every request).
		select {
		case <-inflight:
		case <-ctx.Done():
			s.lk.unregister(n)
			return
		}
	}
	defer s.lk.unregister(n)
	for k := 0; ; k++ {
		path, _, dead := s.lk.nodeState(n)
		if dead {
			return
		}
		err := s.deleteLockNode(ctx, n, path)
		if err == nil || (definite(err) && !errors.Is(err, zk.ErrNoNode)) ||
			errors.Is(err, zk.ErrClosing) || errors.Is(err, driver.ErrClosed) {
			// Done, or nothing more can be done: the server refuses (an ACL
			// changed by hand), or the connection closed with the store and
			// its session with it.
			return
		}
		t := time.NewTimer(s.retry.sleep(k))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// deleteLockNode deletes path, then, if its path is unknown or it may have
// twins, every node with n's GUID.
func (s *driverStore) deleteLockNode(ctx context.Context, n *lockNode, path string) error {
	s.lk.mu.Lock()
	sweep := n.twins || path == ""
	s.lk.mu.Unlock()
	del := func(p string) error {
		_, err := lockCall(ctx, s, func() (struct{}, error) { return struct{}{}, s.conn.Delete(p, -1) })
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	}
	if path != "" {
		if err := del(path); err != nil {
			return err
		}
	}
	if !sweep {
		return nil
	}
	kids, err := lockCall(ctx, s, func() ([]string, error) {
		kids, _, err := s.conn.Children(n.parent)
		return kids, err
	})
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, k := range kids {
		if g, _, ok := parseLockNode(k); ok && g == n.guid {
			if err := del(n.parent + "/" + k); err != nil {
				return err
			}
		}
	}
	return nil
}
