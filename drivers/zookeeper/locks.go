package zookeeper

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// The lock recipe (SPEC 5 and 6). Each Lock call creates an ephemeral
// sequential node {root}/lock/{name}/_c_{guid}-lock-{seq} holding the owner
// key; the node with the lowest sequence number holds the lock and each
// other node waits for the one just before it. The GUID lets the creator
// find its node when the connection drops before the create's answer
// arrives. The fence is the node's czxid: it grows with every create in
// the ensemble and, unlike the 32-bit sequence number, never wraps. The
// parent is a container node, which the server deletes once unused; fences
// still only grow. Session tracking and Lost are in lockwatch.go.

const (
	lockNodePrefix = "_c_"
	lockNodeInfix  = "-lock-"
	lockGUIDLen    = 32 // hex digits
)

var _ driver.Locker = (*Store)(nil)

// errRequeue: the Lock call's node is gone or not trustworthy (its session
// ended, or changed around the create); the call starts again with a new
// node, at the back of the queue.
var errRequeue = errors.New("zookeeper: the lock node was lost with its session")

// abandonWait is how long a Lock call that gives up waits for its node's
// removal before it leaves the removal to the background (which goes on
// until it succeeds, the session is gone or its own bound passes).
const abandonWait = time.Second

func (s *Store) lockParent(name string) string { return s.root + "/lock/" + name }

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

// seqBefore orders sequence numbers with wrap-around (serial number)
// arithmetic: a comes before b if b is less than 2^31 steps after a. Live
// nodes of one lock are never that far apart.
func seqBefore(a, b int32) bool { return a-b < 0 }

func newLockGUID() (string, error) {
	var b [lockGUIDLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("zookeeper: lock node GUID: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Lock queues for name and, if wait, waits until its node is first. The
// wait is bounded only by ctx; each ZooKeeper call retries transient
// failures within the retry options. A node lost with its session while
// waiting is replaced by a new one at the back of the queue, within the
// same retry limit. Whatever ends the call early, its node is removed
// before it returns (or, if the server is out of reach for longer than
// abandonWait, in the background).
func (s *Store) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	if err := checkSupplementary(name); err != nil {
		return nil, err
	}
	if !s.lk.sniffing && s.lk.requested == 0 {
		return nil, fmt.Errorf("zookeeper: Lock on a store made by New needs the option sessionTimeout "+
			"(the connection's negotiated session timeout) to know when a hold may be lost: %w", driver.ErrInvalidArgument)
	}
	requeues := attempts{s: s}
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

// lockOnce is one attempt of Lock, with one node.
func (s *Store) lockOnce(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	n, err := s.registerLockNode(name, owner)
	if err != nil {
		return nil, err
	}
	if err := s.createLockNode(ctx, n); err != nil {
		s.abandonLockNode(n, abandonWait)
		return nil, err
	}
	fence, err := s.awaitTurn(ctx, n, wait)
	if err != nil {
		s.abandonLockNode(n, abandonWait)
		return nil, err
	}
	return &zkLock{s: s, n: n, fence: fence}, nil
}

// createLockNode creates n's node, creating the parents if missing. After
// an answer that leaves the outcome unknown it looks for the node by its
// GUID and uses it if found, or creates again. It returns errRequeue if the
// node may belong to another session than n.sid.
func (s *Store) createLockNode(ctx context.Context, n *lockNode) error {
	a := attempts{s: s}
	prefix := n.parent + "/" + lockNodePrefix + n.guid + lockNodeInfix
	// The node will belong to the session current now: a create sent in
	// one session cannot land in an earlier one, and one that lands in a
	// later one is caught by comparing again when it answers.
	sid, err := s.waitLockSession(ctx)
	if err != nil {
		return err
	}
	s.lk.setSession(n, sid)
	for {
		if s.conn.SessionID() != n.sid {
			return fmt.Errorf("the session changed before the create: %w", errRequeue)
		}
		err := s.sendCreate(ctx, n, prefix)
		switch {
		case err == nil:
			if !s.lk.isConfirmed(n) {
				return fmt.Errorf("the session changed around the create: %w", errRequeue)
			}
			return nil
		case errors.Is(err, zk.ErrNoNode):
			if err := s.createLockParent(ctx, n.parent, &a); err != nil {
				return err
			}
			continue
		case definite(err):
			return fmt.Errorf("zookeeper: create %s: %w", prefix, err)
		case ctx.Err() != nil || errors.Is(err, driver.ErrClosed):
			// The create may still be in flight; the removal waits for it.
			return err
		}
		// Connection lost: the create may or may not have been applied.
		if err := a.retry(ctx, err); err != nil {
			return fmt.Errorf("zookeeper: create %s: %w", prefix, err)
		}
		found, err := s.findLockNode(ctx, n, &a)
		if err != nil {
			return err
		}
		if found {
			return nil
		}
	}
}

// sendCreate sends n's create and waits for its answer, ctx or Close.
// Unlike call, it marks the create in flight only once it is sure to be
// sent, and go-zookeeper's answer is recorded in n whenever it comes, so a
// removal can wait for a create this call stopped waiting for.
func (s *Store) sendCreate(ctx context.Context, n *lockNode, prefix string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !s.enter() {
		return driver.ErrClosed
	}
	done := s.lk.startCreate(n)
	answer := make(chan error, 1)
	go func() {
		defer s.calls.Done()
		sent := monoNow()
		path, err := s.conn.Create(prefix, []byte(n.owner), zk.FlagEphemeral|zk.FlagSequence, s.acl)
		s.lk.createAnswered(s, n, done, sent, path, err)
		answer <- err
	}()
	select {
	case err := <-answer:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-s.closing:
		return driver.ErrClosed
	}
}

// createLockParent creates a lock name's node as a container (ZooKeeper
// 3.5+), so the server deletes it once its last waiter is gone: programs
// that lock per entity do not grow the tree without bound. Sequence
// numbers then start again in a new parent; fences, being czxids, still
// only grow. Its ancestors are persistent.
func (s *Store) createLockParent(ctx context.Context, parent string, a *attempts) error {
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
func (s *Store) findLockNode(ctx context.Context, n *lockNode, a *attempts) (bool, error) {
	kids, err := s.lockChildren(ctx, n.parent, a)
	if err != nil {
		return false, err
	}
	best, bestSeq := "", int32(0)
	for _, k := range kids {
		if g, seq, ok := parseLockNode(k); ok && g == n.guid && (best == "" || seqBefore(seq, bestSeq)) {
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
func (s *Store) lockChildren(ctx context.Context, parent string, a *attempts) ([]string, error) {
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

// awaitTurn waits until n is the first node and returns its czxid, the
// fence. Each pass lists the children once, and n must still be among them;
// the first pass also reads n's own Stat, pipelined with the listing (one
// round trip). A waiter watches only its predecessor, so one release wakes
// one waiter (no herd), and a predecessor already gone means looking again
// at once rather than waiting for an event that will not come.
func (s *Store) awaitTurn(ctx context.Context, n *lockNode, wait bool) (int64, error) {
	own := n.path[len(n.parent)+1:]
	_, mySeq, ok := parseLockNode(own)
	if !ok {
		return 0, fmt.Errorf("zookeeper: the server named the lock node %q, not as asked", n.path)
	}
	var fence int64
	for {
		if err := s.lockUsable(n); err != nil {
			return 0, err
		}
		a := attempts{s: s}
		kids, stat, err := s.lockPass(ctx, n, fence == 0, &a)
		if err != nil {
			return 0, err
		}
		if err := s.lockUsable(n); err != nil {
			return 0, err
		}
		if fence == 0 {
			if stat == nil {
				return 0, fmt.Errorf("the node vanished: %w", errRequeue)
			}
			fence = stat.Czxid
		}
		found, ahead := false, 0
		pred, predSeq := "", int32(0)
		var twins []string
		for _, k := range kids {
			if k == own {
				found = true
				continue
			}
			g, seq, ok := parseLockNode(k)
			switch {
			case !ok:
				continue // not a lock node: not in the queue
			case g == n.guid:
				twins = append(twins, k)
			case seqBefore(seq, mySeq):
				ahead++
				if pred == "" || seqBefore(predSeq, seq) {
					pred, predSeq = k, seq
				}
			}
		}
		if !found {
			return 0, fmt.Errorf("the node vanished: %w", errRequeue)
		}
		if len(twins) > 0 {
			s.removeTwins(ctx, n, twins)
		}
		if pred == "" {
			if err := s.ensureLive(ctx, n); err != nil {
				return 0, err
			}
			if err := s.markHeld(n); err != nil {
				return 0, err
			}
			return fence, nil
		}
		if !wait {
			return 0, fmt.Errorf("zookeeper: lock %q has %d holder and waiter node(s) ahead: %w", n.name, ahead, driver.ErrLocked)
		}
		watch, err := s.watchLockNode(ctx, n.parent+"/"+pred, &a)
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

// lockUsable reports why n can no longer become a hold, or nil.
func (s *Store) lockUsable(n *lockNode) error {
	why := s.lk.lostErr(n)
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

func (s *Store) isClosing() bool {
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
func (s *Store) lockPass(ctx context.Context, n *lockNode, withStat bool, a *attempts) ([]string, *zk.Stat, error) {
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

// removeTwins deletes other nodes with n's GUID: creates applied although
// their answer was lost. They are n's own, so deleting them harms nobody;
// one that cannot be deleted now stays marked for n's removal to sweep.
func (s *Store) removeTwins(ctx context.Context, n *lockNode, twins []string) {
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
func (s *Store) abandonLockNode(n *lockNode, wait time.Duration) {
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
func (s *Store) removeLockNode(ctx context.Context, n *lockNode) {
	path, inflight, _ := s.lk.nodeState(n)
	if path == "" && inflight == nil {
		s.lk.unregister(n)
		return // no create was sent
	}
	if inflight != nil {
		select {
		case <-inflight:
		case <-ctx.Done():
			s.leaveToAnswer(n)
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
func (s *Store) deleteLockNode(ctx context.Context, n *lockNode, path string) error {
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

// Locks lists every lock name that has a parent node, sorted.
func (s *Store) Locks(ctx context.Context) ([]string, error) {
	a := attempts{s: s}
	names, err := s.children(ctx, s.root+"/lock", &a)
	if err != nil {
		return nil, err
	}
	out := append(make([]string, 0, len(names)), names...)
	sort.Strings(out)
	return out, nil
}

// Waiters lists the holder and waiters of name in lock order, with each
// node's owner key (its data) and fence (its czxid). Nodes that are not lock
// nodes are left out, and so are nodes that leave while being read.
func (s *Store) Waiters(ctx context.Context, name string) ([]driver.Waiter, error) {
	if err := checkSupplementary(name); err != nil {
		return nil, err
	}
	parent := s.lockParent(name)
	a := attempts{s: s}
	kids, err := s.lockChildren(ctx, parent, &a)
	if err != nil {
		return nil, err
	}
	type entry struct {
		name    string
		seq     int32
		present bool
		w       driver.Waiter
	}
	entries := make([]entry, 0, len(kids))
	for _, k := range kids {
		if _, seq, ok := parseLockNode(k); ok {
			entries = append(entries, entry{name: k, seq: seq})
		}
	}
	err = parallel(ctx, len(entries), func(ctx context.Context, i int) error {
		e := &entries[i]
		a := attempts{s: s}
		for {
			type got struct {
				data []byte
				stat *zk.Stat
			}
			g, err := call(ctx, s, func() (got, error) {
				data, stat, err := s.conn.Get(parent + "/" + e.name)
				return got{data, stat}, err
			})
			switch {
			case err == nil:
				e.present, e.w = true, driver.Waiter{Owner: string(g.data), Fence: g.stat.Czxid}
				return nil
			case errors.Is(err, zk.ErrNoNode):
				return nil
			}
			if err := a.retry(ctx, err); err != nil {
				return fmt.Errorf("zookeeper: read %s/%s: %w", parent, e.name, err)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(entries, func(i, j int) bool { return seqBefore(entries[i].seq, entries[j].seq) })
	out := make([]driver.Waiter, 0, len(entries))
	for _, e := range entries {
		if e.present {
			out = append(out, e.w)
		}
	}
	return out, nil
}

// zkLock is a held lock.
type zkLock struct {
	s     *Store
	n     *lockNode
	fence int64

	mu       sync.Mutex
	unlocked bool
}

func (l *zkLock) Fence() int64          { return l.fence }
func (l *zkLock) Lost() <-chan struct{} { return l.n.lost }

// Unlock deletes the lock's own node, by its path (see removeLockNode), so
// a retried or repeated Unlock can never remove a later holder's node. A
// second call returns nil. If ctx ends before the delete is confirmed the
// removal goes on in the background and Unlock reports ctx's error.
func (l *zkLock) Unlock(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.unlocked {
		return nil
	}
	l.unlocked = true
	s, n := l.s, l.n
	if why := s.lk.lostErr(n); why != nil {
		// A loss that left the node behind started its removal already.
		return fmt.Errorf("zookeeper: lock %q was lost before Unlock (%v): %w", n.name, why, driver.ErrLeaseLost)
	}
	a := attempts{s: s}
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
			s.lk.unregister(n)
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
func (s *Store) releasedLockNode(n *lockNode) {
	s.lk.mu.Lock()
	twins := n.twins
	s.lk.mu.Unlock()
	if twins {
		s.abandonLockNode(n, 0)
		return
	}
	s.lk.unregister(n)
}
