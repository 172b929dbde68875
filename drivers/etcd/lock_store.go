package etcd

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosid-go/store/driver"
)

// A lock name's queue is the keys lock/{name}/{waiter} (names have no
// '/'), each attached to its store's session lease, with the owner as
// value. The queue's order is the keys' create revisions, which are also
// the fences: etcd's revision only grows, across restarts and deletes.
//
// Queueing and waiting is this file; the lease the keys hang on is
// lock_session.go (kept alive, and so proven alive, by lock_keepalive.go),
// a held lock and its Unlock lock_hold.go, the watches that tell holds and
// waiters of deletes lock_watch.go and lock_waits.go, the seal
// lock_seal.go, the listings lock_list.go, the lock clock lock_clock.go.
// The ZooKeeper driver uses the same names for the same roles.

var errClosedStore = driver.ErrClosed

// lockStore is the locks capability: its holds hang on one lease, the
// session (lock_session.go).
type lockStore struct {
	*etcdStore

	mu       sync.Mutex
	sess     *lockSession // the session last granted (session), lost or not
	granting *grant       // the lease grant in flight or last made (session)
	closed   bool         // Close began: no session is granted any more

	// watchHook, if set, runs before each start of a session's watch
	// (tests hold it back).
	watchHook func()
	// clock, if set, replaces the lock clock (tests jump it).
	clock func() time.Duration
	// heard counts the deletes the sessions' watches told of keys not
	// their own (tests measure what an Unlock costs the other stores).
	heard atomic.Int64
	// offsetSeen is the highest lock fence offset the store read
	// (readOffset, lock_seal.go).
	offsetSeen atomic.Int64
}

func (s *lockStore) lockPrefix(name string) string { return s.key("lock", name) + "/" }

// errQueueLost marks a wait whose session was lost (its key is gone, or
// will be): the waiter queues again, at the end, under a new session.
var errQueueLost = errors.New("the wait's session was lost")

// Lock queues a waiter key, then waits until no key of the name is older:
// it watches only its predecessor, and reads again when that one goes. A
// waiter whose session is lost while it waits queues again.
func (s *lockStore) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	for {
		l, err := s.lockOnce(ctx, name, owner, wait)
		if errors.Is(err, errQueueLost) && ctx.Err() == nil {
			continue
		}
		return l, err
	}
}

func (s *lockStore) lockOnce(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	ss, err := s.session(ctx)
	if err != nil {
		return nil, err
	}
	// Numbers are reused once their key is deleted: etcd keeps a deleted
	// key's index entry until a compaction, and a name whose every lock
	// made a new key would make each listing of its queue slower.
	n := ss.take()
	key := s.lockPrefix(name) + fmt.Sprintf("%016x-%d", int64(ss.id), n)
	// Watched from before its create: the session's watch may report a
	// delete before the create's answer is back.
	h := &lockHold{s: s, ss: ss, key: key, n: n}
	ss.watch(h)
	release := func() { ss.unwatch(h); ss.release(n) }
	rev, first, offset, err := s.createWaiter(ctx, ss, key, owner, s.lockPrefix(name), release)
	if errors.Is(err, errCreatePending) {
		return nil, err // the create's answer settles the key (createWaiter)
	}
	if errors.Is(err, driver.ErrSealed) {
		release()
		return nil, errLocksSealed(name)
	}
	if err != nil && rev != 0 {
		// Created, but what its create read is refused (a corrupt fence
		// offset): the key sits on the live session, so it goes now.
		s.dropWaiter(key, rev, release)
		return nil, err
	}
	if err != nil {
		// No key, or its session is abandoned (the lease's end deletes it).
		release()
		return nil, err
	}
	if _, err := offsetFence(rev, offset); err != nil {
		s.dropWaiter(key, rev, release)
		return nil, err
	}
	h.created(rev)
	s.follow(ss, h, s.lockPrefix(name), rev)
	h.state.offset = offset // lock_seal.go
	granted := false
	defer func() {
		if !granted {
			s.dropWaiter(key, rev, release)
		}
	}()
	if first {
		// The oldest key of the name, read in the create's own
		// transaction, is ours: held, one round trip.
		if !ss.alive() {
			return nil, fmt.Errorf("granted, but the session is lost: %v: %w: %w", ss.lostErr(), errQueueLost, driver.ErrLeaseLost)
		}
		granted = true
		return h.grant(), nil
	}
	// Registered before the first read: a delete after it is not missed.
	w := ss.waitDeletes(s.lockPrefix(name))
	defer ss.endWait(w)
	for attempt := 1; ; {
		resp, err := s.cli.Txn(ctx).Then(clientv3.OpGet(key, clientv3.WithKeysOnly()),
			clientv3.OpGet(s.lockPrefix(name), append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(rev-1), clientv3.WithKeysOnly())...),
			clientv3.OpGet(s.sealedKey(), clientv3.WithKeysOnly()), clientv3.OpGet(s.offsetKey()), clientv3.OpGet(s.unsealedKey())).Commit()
		if err = s.check(ctx, err); err != nil {
			if !retryable(err) {
				return nil, err
			}
			if err := s.backoff(ctx, attempt, err); err != nil {
				return nil, err
			}
			attempt++
			continue
		}
		if len(resp.Responses[2].GetResponseRange().Kvs) > 0 {
			return nil, errLocksSealed(name) // queued before the seal: never granted after it
		}
		// A seal since the create, undone by a raise before this look,
		// refuses the waiter all the same (driver.LockSealer).
		if since, err := s.sealedSince(resp.Responses[4].GetResponseRange().Kvs, rev); err != nil || since {
			if err == nil {
				err = errLocksSealed(name)
			}
			return nil, err
		}
		if len(resp.Responses[0].GetResponseRange().Kvs) == 0 {
			return nil, fmt.Errorf("waiter key %s vanished (its session lease expired): %w: %w", key, errQueueLost, driver.ErrLeaseLost)
		}
		pred := resp.Responses[1].GetResponseRange().Kvs
		if len(pred) == 0 {
			if !ss.alive() {
				return nil, fmt.Errorf("granted, but the session is lost: %v: %w: %w", ss.lostErr(), errQueueLost, driver.ErrLeaseLost)
			}
			// RaiseLockFences since the create (locks moving in, with
			// fences up to its floor held elsewhere): the fence handed
			// out now is above that floor, as Waiters said it would be.
			offset, err := s.readOffset(resp.Responses[3].GetResponseRange().Kvs)
			if err != nil {
				return nil, err
			}
			if offset > h.state.offset {
				if _, err := offsetFence(rev, offset); err != nil {
					return nil, err
				}
				h.state.offset = offset
			}
			granted = true
			return h.grant(), nil
		}
		if !wait {
			return nil, driver.ErrLocked
		}
		if err := s.waitGone(ctx, ss, w, string(pred[0].Key), resp.Header.Revision); err != nil {
			return nil, err
		}
	}
}

// createWaiter puts the waiter key on the session's lease and returns its
// create revision, and whether it is the oldest key of the name (read in
// the same transaction). The key is unique, so a retry after a lost answer
// finds it rather than queueing twice.
//
// A create whose answer was lost may still be applied later, at any time:
// after its Lock gave up and its cleanup found nothing, or after the key
// was deleted and its number reused. Such a key would sit on the live
// session's lease, blocking the name for every other store. So an attempt
// without an answer abandons the session (its holds are Lost, its lease
// revoked, or left to expire): a late create then fails (no lease) or goes
// with the lease. The Lock queues again under a new session while its
// context lasts.
//
// The caller's ctx ending is not a lost answer: the create is sent on a
// context of its own (bounded by the session TTL and the store's life), so
// that a Lock cancelled while its create is on the way, which returns at
// once (errCreatePending), does not cost the store its session and every
// other hold: the answer, when it comes within the attempt deadline,
// deletes the key it made; no answer by then abandons the session as
// above. The key's number and watch are released then (release), not
// before.
//
// The create also compares the locks' seal absent (ErrSealed, nothing
// written) and reads their fence offset (lock_seal.go).
func (s *lockStore) createWaiter(ctx context.Context, ss *lockSession, key, owner, prefix string, release func()) (int64, bool, int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, false, 0, s.check(ctx, err) // nothing sent
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ss.ttl)
	stop := context.AfterFunc(s.ctx, cancel) // Close cuts it
	answer := make(chan createAnswer, 1)
	if !s.spawn(func() {
		defer stop()
		defer cancel()
		resp, err := s.cli.Txn(cctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0),
			clientv3.Compare(clientv3.CreateRevision(s.sealedKey()), "=", 0)).
			Then(clientv3.OpPut(key, owner, clientv3.WithLease(ss.id)),
				clientv3.OpGet(prefix, append(clientv3.WithFirstCreate(), clientv3.WithKeysOnly())...),
				clientv3.OpGet(s.offsetKey())).
			Else(clientv3.OpGet(key), clientv3.OpGet(s.sealedKey(), clientv3.WithKeysOnly())).Commit()
		answer <- createAnswer{resp, s.check(cctx, err)}
	}) {
		stop()
		cancel()
		return 0, false, 0, driver.ErrClosed // nothing sent
	}
	var a createAnswer
	select {
	case a = <-answer:
	case <-ctx.Done():
		s.spawn(func() {
			// A healthy member answers within the attempt deadline
			// (attempts.go); past it the answer is taken as lost.
			late := time.AfterFunc(s.latency.deadline(), cancel)
			defer late.Stop()
			s.settleCreate(ss, key, <-answer, release)
		})
		return 0, false, 0, fmt.Errorf("%w: %w", errCreatePending, s.check(ctx, ctx.Err()))
	}
	if err := a.err; err == nil {
		resp := a.resp
		if resp.Succeeded {
			rev := resp.Header.Revision
			oldest := resp.Responses[1].GetResponseRange().Kvs
			offset, err := s.readOffset(resp.Responses[2].GetResponseRange().Kvs)
			return rev, len(oldest) == 1 && oldest[0].CreateRevision == rev, offset, err
		}
		if len(resp.Responses[1].GetResponseRange().Kvs) > 0 {
			return 0, false, 0, driver.ErrSealed // nothing written
		}
		// Only this session's creates make its keys, and a number is
		// reused only once its key's delete was answered: a key the
		// store does not know of, so a session not to trust.
		s.abandon(ss, fmt.Errorf("waiter key %s exists before its create", key))
		return 0, false, 0, fmt.Errorf("waiter key %s exists before its create: %w", key, errQueueLost)
	}
	err := a.err
	if s.unanswered(ss, key, err) {
		return 0, false, 0, fmt.Errorf("%v: %w", err, errQueueLost)
	}
	if errors.Is(err, driver.ErrClosed) {
		return 0, false, 0, err // Close revokes the lease
	}
	if ctx.Err() != nil || !retryable(err) {
		return 0, false, 0, err // a refusal would be refused again
	}
	// Each attempt costs a lease: not at once.
	if berr := s.backoff(ctx, 1, err); berr != nil {
		return 0, false, 0, berr
	}
	return 0, false, 0, fmt.Errorf("%v: %w", err, errQueueLost)
}

// createAnswer is the answer of a waiter key's create, err checked.
type createAnswer struct {
	resp *clientv3.TxnResponse
	err  error
}

// errCreatePending marks a Lock whose ctx ended while its create's answer
// was on the way: settleCreate settles the key.
var errCreatePending = errors.New("the wait ended while its waiter key's create was under way")

// unanswered deals with a create that failed with err: a lease not found
// ends the session (it reports true: queue again under a new one); Close
// needs nothing (the lease is revoked); any other failure may have been
// applied, or be applied later, so the session is abandoned.
func (s *lockStore) unanswered(ss *lockSession, key string, err error) bool {
	switch {
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		// Revoked by an operator, or expired, before a keep-alive
		// told us: the session is over; queue under a new one.
		s.expired(ss, fmt.Errorf("etcd lease %x not found when queueing: revoked or expired", int64(ss.id)))
		return true
	case errors.Is(err, driver.ErrClosed):
	default:
		s.abandon(ss, fmt.Errorf("the create of waiter key %s got no answer (%v): it may be applied later", key, err))
	}
	return false
}

// settleCreate settles, from its answer a, the create of a waiter key
// whose Lock returned before the answer came (its ctx ended): a key made
// is deleted as any ended wait's is; no key needs nothing; no answer
// abandons the session as in createWaiter. Then release runs.
func (s *lockStore) settleCreate(ss *lockSession, key string, a createAnswer, release func()) {
	switch {
	case a.err == nil && a.resp.Succeeded:
		s.dropWaiter(key, a.resp.Header.Revision, release)
		return
	case a.err == nil && len(a.resp.Responses[1].GetResponseRange().Kvs) == 0:
		s.abandon(ss, fmt.Errorf("waiter key %s exists before its create", key))
	case a.err != nil:
		s.unanswered(ss, key, a.err)
	}
	release()
}

// abandon loses a session whose keys may change without the store
// knowing, and revokes its lease in the background (should the revoke be
// lost too, the lease expires: it is no longer kept alive).
func (s *lockStore) abandon(ss *lockSession, err error) {
	ss.lose(err)
	s.spawn(func() {
		ctx, cancel := context.WithTimeout(s.ctx, ss.ttl)
		defer cancel()
		s.cli.Revoke(ctx, ss.id)
	})
}

// waitGone returns once pred was deleted after revision rev (as the
// session's watch tells w), or after a third of the session TTL (to look
// again), or with the reason to stop.
func (s *lockStore) waitGone(ctx context.Context, ss *lockSession, w *deleteWait, pred string, rev int64) error {
	w.expect(pred, rev)
	recheck := time.NewTimer(ss.ttl / 3)
	defer recheck.Stop()
	select {
	case <-ctx.Done():
		ss.mu.Lock()
		sent := ss.sent
		ss.mu.Unlock()
		if ss.now()-sent < ss.ttl/2 && !errors.Is(s.check(ctx, ctx.Err()), driver.ErrClosed) {
			// The leader answered a keep-alive lately: the wait ran out
			// of time behind a holder, not for want of an answer.
			return fmt.Errorf("waiting behind %s: %w", pred, ctx.Err())
		}
		return s.check(ctx, ctx.Err())
	case <-s.closing:
		return driver.ErrClosed
	case <-ss.lost:
		return fmt.Errorf("while waiting: %v: %w: %w", ss.lostErr(), errQueueLost, driver.ErrLeaseLost)
	case <-w.ch:
	case <-recheck.C:
	}
	return nil
}

// dropWaiter deletes a waiter key in the background, only while its
// create revision is rev (a delete applied late must not remove a later
// key of the same name), retrying until it has an answer (then calls done)
// or the store closes (revoking the lease, which deletes it anyway).
func (s *lockStore) dropWaiter(key string, rev int64, done func()) {
	s.spawn(func() {
		for attempt := 1; ; attempt++ {
			ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
			_, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", rev)).
				Then(clientv3.OpDelete(key)).Commit()
			cancel()
			if err == nil {
				done()
				return
			}
			select {
			case <-s.ctx.Done():
				return
			case <-time.After(min(50*time.Millisecond<<min(attempt, 5), time.Second)):
			}
		}
	})
}

// lastSession is the session last granted, lost or not; nil before the
// first.
func (s *lockStore) lastSession() *lockSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sess
}

// closeLocks loses every hold and revokes the session's lease, so the next
// waiters of the store's locks get them at once.
func (s *lockStore) closeLocks() {
	s.mu.Lock()
	s.closed = true
	ss := s.sess
	s.mu.Unlock()
	if ss == nil {
		return
	}
	ss.lose(errSessionClosed)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s.cli.Revoke(ctx, ss.id)
}
