package zookeeper

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// Keeping the lock nodes the store created, or may have created, and
// removing them; their names.

const (
	lockNodePrefix = "_c_"
	lockNodeInfix  = "-lock-"
	lockGUIDLen    = 32 // hex digits
)

// parseLockNode splits a child name "_c_{guid}-lock-{seq}". The sequence is
// ZooKeeper's "%010d" of a signed 32-bit counter, so it may be negative
// after wrapping; only this suffix orders nodes, never the whole name.
func parseLockNode(name string) (guid string, seq int32, ok bool) {
	rest, ok := strings.CutPrefix(name, lockNodePrefix)
	if !ok || len(rest) <= lockGUIDLen+len(lockNodeInfix) {
		return "", 0, false
	}
	guid = rest[:lockGUIDLen]
	digits, ok := strings.CutPrefix(rest[lockGUIDLen:], lockNodeInfix)
	if !ok {
		return "", 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 32)
	if err != nil {
		return "", 0, false
	}
	return guid, int32(n), true
}

// seqCompare orders sequence numbers with wrap-around (serial number)
// arithmetic: a comes before b if b is less than 2^31 steps after a. Live
// nodes of one lock are never that far apart.
func seqCompare(a, b int32) int { return cmp.Compare(a-b, 0) }

func newLockGUID() (string, error) {
	var b [lockGUIDLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("zookeeper: lock node GUID: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// lockNode is one lock node this store created, or may have created: a
// waiter, a holder, or one being removed.
type lockNode struct {
	name   string
	parent string // {root}/lock/{name}
	guid   string
	owner  string
	sid    int64 // the session the node belongs to, set before the first create is sent

	// Guarded by lockSession.mu.
	path      string                  // "" until the create answered or the node was found
	czxid     int64                   // the node's, from the create's answer; 0 if unknown
	offset    int64                   // the fence offset its create checked, or its grant read (lock_seal.go)
	checked   *zk.CheckVersionRequest // the check its create sent, nil if none
	inflight  chan struct{}           // closed when go-zookeeper answers the create
	confirmed bool                    // the node is known to be of session sid
	twins     bool                    // other nodes with the GUID may exist (lost answers)
	phase     nodePhase
	lost      chan struct{}
	lostErr   error
	gone      bool // session sid ended (or the store's own connection closed)
	releasing bool // Unlock deletes it: confirmations leave it out
	stray     bool // abandoned before it was ever held (see strays)
}

// dead reports a node known to have died with its session: nothing to
// delete. Called with lockSession.mu held.
func (n *lockNode) dead() bool { return n.gone && n.confirmed && !n.twins }

type nodePhase int

const (
	waiting   nodePhase = iota // owned by its Lock call
	held                       // owned by its lock; a loss starts its removal
	abandoned                  // a removal runs
)

// lockParent is the parent of name's lock nodes.
func (s *lockStore) lockParent(name string) string { return s.root + "/lock/" + name }

// lockChildren lists a lock's nodes; a missing parent gives ErrNotFound.
func (s *lockStore) lockChildren(ctx context.Context, parent string, a *attempts) ([]string, error) {
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
func (s *lockStore) removeTwins(ctx context.Context, n *lockNode, twins []string) {
	s.sess.mu.Lock()
	n.twins = true
	s.sess.mu.Unlock()
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
func (s *lockStore) abandonLockNode(n *lockNode, wait time.Duration) {
	if !s.sess.markAbandoned(n) {
		return
	}
	done := s.sess.spawn(func() {
		if s.sess.beforeRemove != nil {
			s.sess.beforeRemove()
		}
		ctx, cancel := s.sess.cleanupContext()
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
func (s *lockStore) removeLockNode(ctx context.Context, n *lockNode) {
	path, inflight, _ := s.sess.nodeState(n)
	if path == "" && inflight == nil {
		s.sess.unregister(n)
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
			s.sess.unregister(n)
			return
		}
	}
	defer s.sess.unregister(n)
	for k := 0; ; k++ {
		path, _, dead := s.sess.nodeState(n)
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
func (s *lockStore) deleteLockNode(ctx context.Context, n *lockNode, path string) error {
	s.sess.mu.Lock()
	sweep := n.twins || path == ""
	s.sess.mu.Unlock()
	del := func(p string) error {
		_, err := call(ctx, &s.sess, func() (struct{}, error) { return struct{}{}, s.conn.Delete(p, -1) })
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
	// The sweep looks for creates whose answer this session never got, so
	// its last zxid does not cover them and the member it reads from may
	// not have applied them yet (a read is answered from that member's
	// tree). A node missed here stays, owned by a live session, ahead of
	// every later Lock on the name. The sync brings the member up to the
	// leader first: a lost create the leader accepted was proposed before
	// the session moved (it is refused after), and the leader answers a
	// sync only once every earlier proposal is committed.
	kids, err := call(ctx, &s.sess, func() ([]string, error) {
		if _, err := s.conn.Sync(n.parent); err != nil {
			return nil, err
		}
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

// waitLockSession waits until the connection has a session, and returns its
// ID for a node about to be created.
func (s *lockStore) waitLockSession(ctx context.Context) (int64, error) {
	ss := &s.sess
	for {
		ss.mu.Lock()
		if ss.sessionUp == nil {
			ss.sessionUp = make(chan struct{})
		}
		up := ss.sessionUp
		ss.mu.Unlock()
		if sid := s.conn.SessionID(); sid != 0 && s.conn.State() == zk.StateHasSession {
			return sid, nil
		}
		select {
		case <-up:
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-s.closing:
			return 0, driver.ErrClosed
		}
	}
}
