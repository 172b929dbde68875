package zookeeper

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// An uncontended Lock costs one round trip, not the two of the plain
// recipe (create, then list), and no request for the fence:
//
//   - The create is a multi of the create and a setData of the lock's
//     parent that writes what is there (nothing: the parent never has
//     data). Both share the multi's transaction, so the setData's mzxid is
//     the new node's czxid, the fence. go-zookeeper returns a Stat from a
//     multi only for a setData; a plain create returns the path alone.
//   - The first listing is sent right behind the create, once the store's
//     own connection has written the create (go-zookeeper's calls block, so
//     only the wire tells when a request is on its way). The server answers
//     a session's requests in order, and a read after a write of the same
//     session sees the write, so the listing shows the new node: one round
//     trip for both. A listing that does not show the node (sent too early,
//     or the create failed) is not used; the Lock lists again.
//
// A store on a caller's connection (New) has no wire to watch: it lists
// once the create has answered.

// createNode sends n's create and returns its path and czxid (0 if
// unknown). A store whose ACL does not let it write the lock's parent
// falls back to a plain create for good: the multi failed as a whole, so
// nothing was created.
func (s *lockStore) createNode(n *lockNode, prefix string) (path string, czxid int64, err error) {
	// The check of the root's version: the locks were not sealed, and
	// their fence offset was n.offset, when the node was created
	// (lock_seal.go). Its failure fails the whole multi: nothing created.
	check, offset := s.rootCache.check(s.lockRootPath())
	s.sess.mu.Lock()
	n.offset, n.checked = offset, check
	s.sess.mu.Unlock()
	if !s.plainCreate.Load() {
		ops := []any{
			&zk.CreateRequest{Path: prefix, Data: []byte(n.owner), Acl: s.acl, Flags: zk.FlagEphemeral | zk.FlagSequence},
			&zk.SetDataRequest{Path: n.parent, Data: nil, Version: -1}}
		if check != nil {
			ops = append(ops, check)
		}
		res, err := s.conn.Multi(ops...)
		switch {
		case err == nil && len(res) >= 2 && res[1].Stat != nil:
			return res[0].String, res[1].Stat.Mzxid, nil
		case err == nil && len(res) > 0:
			// Not what a server answers; the node exists, its fence is read.
			return res[0].String, 0, nil
		case len(res) > 2:
			if err := s.rootCache.checkFailed(res[2].Error); err != nil {
				return "", 0, err
			}
		}
		if len(res) < 2 || !errors.Is(res[1].Error, zk.ErrNoAuth) {
			return "", 0, err
		}
		// The setData was refused, not the create (the multi names the op
		// that failed): the ACL lacks the write permission.
		s.plainCreate.Store(true)
	}
	if check == nil {
		path, err = s.conn.Create(prefix, []byte(n.owner), zk.FlagEphemeral|zk.FlagSequence, s.acl)
		return path, 0, err
	}
	res, err := s.conn.Multi(&zk.CreateRequest{Path: prefix, Data: []byte(n.owner), Acl: s.acl, Flags: zk.FlagEphemeral | zk.FlagSequence}, check)
	if err == nil && len(res) > 0 {
		return res[0].String, 0, nil
	}
	if len(res) > 1 {
		if err := s.rootCache.checkFailed(res[1].Error); err != nil {
			return "", 0, err
		}
	}
	return "", 0, err
}

// listing is the answer to a listing of a lock's children.
type listing struct {
	kids []string
	err  error
}

// listBehindCreate sends the listing of n's parent as soon as the wire has
// carried the frame with n's GUID (the create), and delivers its answer;
// it delivers nothing if the create was answered without being written
// (answered closes). It runs on a call goroutine (see call).
func (s *lockStore) listBehindCreate(n *lockNode, written, answered <-chan struct{}, out chan<- listing) {
	defer s.calls.Done()
	select {
	case <-written:
	case <-answered:
		select {
		case <-written:
		default:
			close(out)
			return
		}
	}
	kids, _, err := s.conn.Children(n.parent)
	out <- listing{kids, err}
}

// createLockNode creates n's node, creating the parents if missing. After
// an answer that leaves the outcome unknown it looks for the node by its
// GUID and uses it if found, or creates again. It returns errRequeue if the
// node may belong to another session than n.sid. It also returns where
// the answer of a listing sent behind the create comes, or nil.
func (s *lockStore) createLockNode(ctx context.Context, n *lockNode) (<-chan listing, error) {
	a := attempts{s: s.session}
	prefix := n.parent + "/" + lockNodePrefix + n.guid + lockNodeInfix
	// The node will belong to the session current now: a create sent in
	// one session cannot land in an earlier one, and one that lands in a
	// later one is caught by comparing again when it answers.
	sid, err := s.waitLockSession(ctx)
	if err != nil {
		return nil, err
	}
	s.sess.setSession(n, sid)
	for {
		if s.conn.SessionID() != n.sid {
			return nil, fmt.Errorf("the session changed before the create: %w", errRequeue)
		}
		if err := s.lockRootOpen(ctx, n.name, &a); err != nil {
			return nil, err
		}
		early, err := s.sendCreate(ctx, n, prefix)
		switch {
		case errors.Is(err, errRootChanged):
			// Sealed or raised since the store last read it: read it
			// again and create again; nothing was made (lock_seal.go).
			st, err := s.readLockRoot(ctx, &a)
			if err != nil {
				return nil, err
			}
			if st.sealed {
				return nil, errLocksSealed(n.name)
			}
			continue
		case err == nil:
			if !s.sess.isConfirmed(n) {
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
// create (lock_create.go) and returns where its answer will come; nil
// otherwise.
func (s *lockStore) sendCreate(ctx context.Context, n *lockNode, prefix string) (<-chan listing, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !s.enter() {
		return nil, driver.ErrClosed
	}
	if s.sess.beforeCreate != nil {
		s.sess.beforeCreate()
	}
	done := s.sess.startCreate(n)
	if done == nil {
		s.calls.Done()
		return nil, driver.ErrClosed
	}
	var (
		early    chan listing
		written  chan struct{}
		answered = make(chan struct{})
	)
	if s.wire != nil && !s.plainCreate.Load() && s.enter() {
		early = make(chan listing, 1)
		written = s.wire.writes.add(n.guid)
		go s.listBehindCreate(n, written, answered, early)
	}
	answer := make(chan error, 1)
	go func() {
		defer s.calls.Done()
		sent := s.sess.lockNow()
		path, czxid, err := s.createNode(n, prefix)
		if written != nil {
			s.wire.writes.remove(n.guid, written)
		}
		close(answered)
		s.sess.createAnswered(s, n, done, sent, path, czxid, err)
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
func (s *lockStore) createLockParent(ctx context.Context, parent string, a *attempts) error {
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
func (s *lockStore) findLockNode(ctx context.Context, n *lockNode, a *attempts) (bool, error) {
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
	s.sess.mu.Lock()
	defer s.sess.mu.Unlock()
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
