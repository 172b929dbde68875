package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// The lock recipe (docs/design.md, ZooKeeper node layout and Lock liveness
// on ZooKeeper). Each Lock call creates an ephemeral
// sequential node {root}/lock/{name}/_c_{guid}-lock-{seq} holding the owner
// key; the node with the lowest sequence number holds the lock and each
// other node waits for the one just before it. The GUID lets the creator
// find its node when the connection drops before the create's answer
// arrives. The fence is the node's czxid: it grows with every create in
// the ensemble and, unlike the 32-bit sequence number, never wraps. The
// parent is a container node, which the server deletes once unused; fences
// still only grow. Creating and finding a node is in lock_create.go,
// keeping and removing it in lock_node.go, the listings in lock_list.go,
// a held lock and its Unlock in lock_hold.go, the nodes on the session in
// lock_session.go, what ends their holds in lock_lost.go (and
// lock_confirm.go, which proves the session alive), the watches waiters
// share in lock_watch.go, the seal in lock_seal.go, the lock clock in
// lock_clock.go. The etcd driver uses the same names for the same roles.

var _ driver.Locker = (*lockStore)(nil)

// lockStore is the store's driver.Locker, on the store's session (the
// connection, shared with the other parts); sess is the session as the
// Locker sees it.
type lockStore struct {
	*session

	sess        lockSession   // lock nodes and the session as the Locker sees it (lock_session.go)
	rootCache   lockRootCache // the root's version, seal and fence offset as last read (lock_seal.go)
	plainCreate atomic.Bool   // the ACL refused the create's setData once (lock_create.go)
}

// errRequeue: the Lock call's node is gone or not trustworthy (its session
// ended, or changed around the create); the call starts again with a new
// node, at the back of the queue.
var errRequeue = errors.New("zookeeper: the lock node was lost with its session")

// abandonWait is how long a Lock call that gives up waits for its node's
// removal before it leaves the removal to the background (which goes on
// until it succeeds, the session is gone or the store closes).
const abandonWait = time.Second

// Lock queues for name and, if wait, waits until its node is first. The
// wait is bounded only by ctx; each ZooKeeper call retries transient
// failures within the retry options. A node lost with its session while
// waiting is replaced by a new one at the back of the queue, within the
// same retry limit. Whatever ends the call early, its node is removed
// before it returns (or, if the server is out of reach for longer than
// abandonWait, in the background). Without wait (TryLock) nothing waits
// but for ctx: see tryLock.
func (s *lockStore) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	if err := checkPathText("lock name", name); err != nil {
		return nil, err
	}
	if s.wire == nil && s.requested == 0 {
		return nil, fmt.Errorf("zookeeper: Lock on a store made by OpenStore needs Options.SessionTimeout "+
			"(the connection's negotiated session timeout) to know when a hold may be lost: %w", driver.ErrInvalidArgument)
	}
	if !wait {
		return s.tryLock(ctx, name, owner)
	}
	return s.lockLoop(ctx, name, owner, wait)
}

// lockLoop runs attempts of Lock until one is not requeued.
func (s *lockStore) lockLoop(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	requeues := attempts{s: s.session}
	for {
		l, err := s.lockOnce(ctx, name, owner, wait)
		if !errors.Is(err, errRequeue) {
			return l, err
		}
		if err := requeues.retry(ctx, err); err != nil {
			return nil, fmt.Errorf("zookeeper: lock %q: %w", name, err)
		}
	}
}

// errNoSession ends a TryLock whose connection lost its session.
var errNoSession = errors.New("zookeeper: the connection lost its session")

// tryLock is Lock without waiting (TryLock): it returns within ctx, at
// once with ErrUnavailable when the connection has no session now and as
// soon as it loses it, with ErrLocked as soon as a listing shows another
// node first, and never waits for a session to come back or for the
// removal of its own node, which goes on in the background until it is
// done or the store closes.
func (s *lockStore) tryLock(ctx context.Context, name, owner string) (driver.Lock, error) {
	down, err := s.sessionLoss()
	if err != nil {
		return nil, fmt.Errorf("zookeeper: trylock %q: %w", name, err)
	}
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-down:
			cancel(errNoSession)
		case <-tctx.Done():
		}
	}()
	l, err := s.lockLoop(tctx, name, owner, false)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(tctx), errNoSession) {
		return nil, fmt.Errorf("zookeeper: trylock %q: %w: %w", name, errNoSession, driver.ErrUnavailable)
	}
	return l, err
}

// lockOnce is one attempt of Lock, with one node. A Lock call that fails
// waits up to abandonWait for its node's removal; a TryLock does not.
func (s *lockStore) lockOnce(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	n, err := s.registerLockNode(name, owner)
	if err != nil {
		return nil, err
	}
	removal := abandonWait
	if !wait {
		removal = 0
	}
	early, err := s.createLockNode(ctx, n)
	if err != nil {
		s.abandonLockNode(n, removal)
		return nil, err
	}
	fence, err := s.awaitTurn(ctx, n, wait, early)
	if err != nil {
		s.abandonLockNode(n, removal)
		return nil, err
	}
	return &lockHold{s: s, n: n, fence: fence}, nil
}

// awaitTurn waits until n is the first node and returns its czxid, the
// fence. Each pass lists the children once, and n must still be among them.
// The first pass uses the listing sent behind the create (early) if it
// shows n; when the create's answer did not carry the czxid, the first pass
// reads n's own Stat, pipelined with the listing (one round trip). A waiter
// watches only its predecessor, so one release wakes one waiter (no herd),
// and a predecessor already gone means looking again at once rather than
// waiting for an event that will not come.
func (s *lockStore) awaitTurn(ctx context.Context, n *lockNode, wait bool, early <-chan listing) (int64, error) {
	s.sess.mu.Lock()
	own, fence := n.path[len(n.parent)+1:], n.czxid
	s.sess.mu.Unlock()
	_, mySeq, ok := parseLockNode(own)
	if !ok {
		return 0, fmt.Errorf("zookeeper: the server named the lock node %q, not as asked", n.path)
	}
	waited := false
	for {
		if err := s.lockUsable(n); err != nil {
			return 0, err
		}
		a := attempts{s: s.session}
		kids, err := s.earlyListing(ctx, early, own)
		early = nil
		if err != nil {
			return 0, err
		}
		if kids == nil || fence == 0 {
			var stat *zk.Stat
			kids, stat, err = s.lockPass(ctx, n, fence == 0, &a)
			if err != nil {
				return 0, err
			}
			if fence == 0 {
				if stat == nil {
					return 0, fmt.Errorf("the node vanished: %w", errRequeue)
				}
				fence = stat.Czxid
			}
		}
		if err := s.lockUsable(n); err != nil {
			return 0, err
		}
		q := queuePlace(kids, own, n.guid, mySeq, s.sess.strays(n.parent))
		if !q.found {
			return 0, fmt.Errorf("the node vanished: %w", errRequeue)
		}
		if len(q.twins) > 0 {
			s.removeTwins(ctx, n, q.twins)
		}
		if q.pred == "" {
			if waited || q.strays > 0 {
				// Granted after a wait, or past the store's own strays
				// (which may have been live waiters when n was created):
				// only if the locks were not sealed meanwhile
				// (lock_seal.go); first at once, it held the lock from its
				// create on.
				now, err := s.stillOpen(ctx, n, fence, &a)
				if err != nil {
					return 0, err
				}
				s.sess.mu.Lock()
				n.offset = now
				s.sess.mu.Unlock()
			}
			if err := s.ensureLive(ctx, n); err != nil {
				return 0, err
			}
			if err := s.markHeld(n); err != nil {
				return 0, err
			}
			s.sess.mu.Lock()
			offset := n.offset
			s.sess.mu.Unlock()
			return offsetFence(n.name, fence, offset)
		}
		waited = true
		if !wait {
			return 0, fmt.Errorf("zookeeper: lock %q has %d holder and waiter node(s) ahead: %w", n.name, q.ahead, driver.ErrLocked)
		}
		watch, err := s.watchLockNode(ctx, n.parent+"/"+q.pred, &a)
		if err != nil {
			return 0, err
		}
		if watch == nil {
			continue // the predecessor left before the watch was set
		}
		select {
		case <-watch:
			// Deleted, or the session ended (the next pass tells).
		case <-n.lost:
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-s.closing:
			return 0, driver.ErrClosed
		}
	}
}

// earlyListing waits for the listing sent behind the create and returns
// it if it shows own (so it was read after the create); nil if there is
// none or it does not.
func (s *lockStore) earlyListing(ctx context.Context, early <-chan listing, own string) ([]string, error) {
	if early == nil {
		return nil, nil
	}
	select {
	case l, ok := <-early:
		if ok && l.err == nil && slices.Contains(l.kids, own) {
			return l.kids, nil
		}
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.closing:
		return nil, driver.ErrClosed
	}
}

// queue is a lock node's place among the children of one listing.
type queue struct {
	found  bool     // the node itself is listed
	ahead  int      // lock nodes before it
	pred   string   // the one right before it; "" when it is first
	twins  []string // other nodes with its GUID, from a create sent twice
	strays int      // the store's own strays before it, left out of ahead
}

// queuePlace finds the place of own (guid, seq mySeq) among kids, ordered
// by sequence number; children that are not lock nodes, and the store's
// strays (GUIDs in strays), are not in the queue.
func queuePlace(kids []string, own, guid string, mySeq int32, strays map[string]bool) queue {
	var q queue
	predSeq := int32(0)
	for _, k := range kids {
		if k == own {
			q.found = true
			continue
		}
		g, seq, ok := parseLockNode(k)
		switch {
		case !ok:
		case strays[g]:
			if seqCompare(seq, mySeq) < 0 {
				q.strays++
			}
		case g == guid:
			q.twins = append(q.twins, k)
		case seqCompare(seq, mySeq) < 0:
			q.ahead++
			if q.pred == "" || seqCompare(predSeq, seq) < 0 {
				q.pred, predSeq = k, seq
			}
		}
	}
	return q
}

// lockUsable reports why n can no longer become a hold, or nil.
func (s *lockStore) lockUsable(n *lockNode) error {
	why := s.sess.lostErr(n)
	switch {
	case why == nil && s.conn.SessionID() == n.sid:
		return nil
	case s.isClosing():
		return driver.ErrClosed
	case why == nil:
		why = errors.New("the session changed")
	}
	return fmt.Errorf("%v: %w", why, errRequeue)
}

func (s *lockStore) isClosing() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// lockPass lists the lock's children and, if withStat, reads n's own Stat
// in parallel: go-zookeeper pipelines both on the connection, so they cost
// one round trip. A missing own node gives a nil Stat. Both reads run in
// one call, the Stat on a goroutine of its own (go-zookeeper's calls
// block), so the pass costs one wake-up of the caller, not two.
func (s *lockStore) lockPass(ctx context.Context, n *lockNode, withStat bool, a *attempts) ([]string, *zk.Stat, error) {
	type pass struct {
		kids []string
		stat *zk.Stat
	}
	for {
		p, err := call(ctx, s, func() (pass, error) {
			var (
				stat    *zk.Stat
				statErr error
				done    chan struct{}
			)
			if withStat {
				done = make(chan struct{})
				go func() {
					defer close(done)
					var ok bool
					ok, stat, statErr = s.conn.Exists(n.path)
					if statErr == nil && !ok {
						stat = nil
					}
				}()
			}
			kids, _, err := s.conn.Children(n.parent)
			if done != nil {
				<-done
			}
			if err == nil {
				err = statErr
			}
			return pass{kids, stat}, err
		})
		switch {
		case err == nil:
			return p.kids, p.stat, nil
		case errors.Is(err, zk.ErrNoNode):
			// The parent is never deleted by the driver; someone did.
			return nil, nil, fmt.Errorf("%s vanished: %w", n.parent, errRequeue)
		}
		if err := a.retry(ctx, err); err != nil {
			return nil, nil, fmt.Errorf("zookeeper: list %s: %w", n.parent, err)
		}
	}
}
