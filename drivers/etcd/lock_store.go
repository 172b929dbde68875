package etcd

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosid-go/store/driver"
)

// A lock name's queue is the keys lock/{name}/{waiter} (names have no
// '/'), each attached to its store's session lease, with the owner as
// value. The queue's order is the keys' create revisions, which are also
// the fences: etcd's revision only grows, across restarts and deletes.

var errClosedStore = driver.ErrClosed

func (s *etcdStore) lockPrefix(name string) string { return s.key("lock", name) + "/" }

// lockHold is a waiter key of the session and, once granted, its hold.
type lockHold struct {
	s   *etcdStore
	ss  *session
	key string
	n   int64 // the key's number in its session (session.take)

	mu       sync.Mutex
	unlocked bool

	gmu       sync.Mutex
	rev       int64 // the key's create revision, once known (the fence)
	granted   bool
	deleted   int64 // the latest delete of the key seen before the grant
	releasing bool  // Unlock's own delete is under way
	gone      bool  // and the session's watch saw the key deleted meanwhile
}

// created sets the key's create revision.
func (h *lockHold) created(rev int64) {
	h.gmu.Lock()
	defer h.gmu.Unlock()
	h.rev = rev
}

// grant makes h a hold. A delete of its key seen meanwhile came after the
// grant (the grant read the key), so it ends the hold at once.
func (h *lockHold) grant() *lockHold {
	h.gmu.Lock()
	defer h.gmu.Unlock()
	h.granted = true
	if h.deleted > h.rev {
		h.loseLocked(fmt.Sprintf("deleted at revision %d", h.deleted))
	}
	return h
}

// sawDelete is told of each delete of the hold's key at revision rev (or
// of the key found missing at rev): one after its create ends the hold,
// unless Unlock made it. Before the grant, or before the create revision
// is known, it is only noted: the watch can report a delete before the
// Lock that created the key has its answer.
func (h *lockHold) sawDelete(rev int64, what string) {
	h.gmu.Lock()
	defer h.gmu.Unlock()
	if !h.granted {
		h.deleted = max(h.deleted, rev)
		return
	}
	if rev <= h.rev {
		return // a delete of an earlier key of the same name
	}
	if h.releasing {
		h.gone = true
		return
	}
	h.loseLocked(what)
}

// loseLocked loses the session of a hold whose key went without Unlock:
// an operator's delete, or a revoke of the lease, frees the lock for the
// next waiter at once, with the session still renewed (a deleted key) or
// until the next keep-alive fails. The waiter can be granted in the same
// instant the holder hears of it, so Lost closes promptly, not before.
// Losing the whole session (and revoking it, so that its other keys go at
// once) is the simple safe answer: its other holds are ended too.
func (h *lockHold) loseLocked(what string) {
	h.ss.lose(fmt.Errorf("lock key %s %s by someone else (an operator's delete or lease revoke): the lock is no longer held",
		h.key, what))
	h.s.spawn(func() {
		ctx, cancel := context.WithTimeout(h.s.ctx, 5*time.Second)
		defer cancel()
		h.s.cli.Revoke(ctx, h.ss.id)
	})
}

// watchDeletes follows, for the session's life, every delete of a lock key
// under the store's prefix from revision from on (the session's keys are
// all created after it), and tells the session's own keys' holds. One
// watch per session, not one per hold: a hold costs no watch of its own to
// set up and tear down. When the watch ends (its revisions compacted, or
// the server ended it), the keys are read again and it starts anew.
func (s *etcdStore) watchDeletes(ss *session, from int64) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	prefix := s.key("lock") + "/"
	for attempt := 1; ; {
		if s.watchHook != nil {
			s.watchHook()
		}
		wch := s.cli.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(from), clientv3.WithFilterPut())
	events:
		for {
			select {
			case <-ctx.Done():
				return
			case <-ss.lost:
				return
			case resp, ok := <-wch:
				if !ok || resp.Err() != nil {
					break events // compacted, or the watch ended
				}
				for _, ev := range resp.Events {
					if ev.Type == clientv3.EventTypeDelete {
						ss.sawDelete(string(ev.Kv.Key), ev.Kv.ModRevision, fmt.Sprintf("deleted at revision %d", ev.Kv.ModRevision))
					}
				}
			}
		}
		next, err := s.recheckHolds(ctx, ss)
		if err == nil {
			from, attempt = next, 1
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-ss.lost:
			return
		case <-time.After(min(50*time.Millisecond<<min(attempt, 5), time.Second)):
		}
		attempt++
	}
}

// recheckHolds reads every key the session watches, telling each hold
// whose key is missing or another, and returns the revision to watch
// from again. That revision is read before the keys are listed, so a key
// registered after the listing was created after it.
func (s *etcdStore) recheckHolds(ctx context.Context, ss *session) (int64, error) {
	resp, err := s.cli.Get(ctx, s.key("meta"), clientv3.WithKeysOnly())
	if err != nil {
		return 0, err
	}
	from := resp.Header.Revision + 1
	for _, h := range ss.watched() {
		resp, err := s.cli.Get(ctx, h.key)
		if err != nil {
			return 0, err
		}
		h.gmu.Lock()
		rev := h.rev
		h.gmu.Unlock()
		if len(resp.Kvs) == 0 {
			h.sawDelete(resp.Header.Revision, "missing")
		} else if rev != 0 && resp.Kvs[0].CreateRevision != rev {
			h.sawDelete(resp.Header.Revision, "replaced")
		}
	}
	return from, nil
}

// errQueueLost marks a wait whose session was lost (its key is gone, or
// will be): the waiter queues again, at the end, under a new session.
var errQueueLost = errors.New("the wait's session was lost")

// Lock queues a waiter key, then waits until no key of the name is older:
// it watches only its predecessor, and reads again when that one goes. A
// waiter whose session is lost while it waits queues again.
func (s *etcdStore) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	for {
		l, err := s.lockOnce(ctx, name, owner, wait)
		if errors.Is(err, errQueueLost) && ctx.Err() == nil {
			continue
		}
		return l, err
	}
}

func (s *etcdStore) lockOnce(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
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
	rev, first, err := s.createWaiter(ctx, ss, key, owner, s.lockPrefix(name))
	if err != nil {
		s.dropWaiter(key, 0, release)
		return nil, err
	}
	h.created(rev)
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
	for attempt := 1; ; {
		resp, err := s.cli.Txn(ctx).Then(clientv3.OpGet(key, clientv3.WithKeysOnly()),
			clientv3.OpGet(s.lockPrefix(name), append(clientv3.WithLastCreate(), clientv3.WithMaxCreateRev(rev-1), clientv3.WithKeysOnly())...)).Commit()
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
		if len(resp.Responses[0].GetResponseRange().Kvs) == 0 {
			return nil, fmt.Errorf("waiter key %s vanished (its session lease expired): %w: %w", key, errQueueLost, driver.ErrLeaseLost)
		}
		pred := resp.Responses[1].GetResponseRange().Kvs
		if len(pred) == 0 {
			if !ss.alive() {
				return nil, fmt.Errorf("granted, but the session is lost: %v: %w: %w", ss.lostErr(), errQueueLost, driver.ErrLeaseLost)
			}
			granted = true
			return h.grant(), nil
		}
		if !wait {
			return nil, driver.ErrLocked
		}
		if err := s.waitGone(ctx, ss, string(pred[0].Key), resp.Header.Revision); err != nil {
			return nil, err
		}
	}
}

// createWaiter puts the waiter key on the session's lease and returns its
// create revision, and whether it is the oldest key of the name (read in
// the same transaction). The key is unique, so a retry after a lost answer
// finds it rather than queueing twice.
func (s *etcdStore) createWaiter(ctx context.Context, ss *session, key, owner, prefix string) (int64, bool, error) {
	for attempt := 1; ; attempt++ {
		resp, err := s.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
			Then(clientv3.OpPut(key, owner, clientv3.WithLease(ss.id)),
				clientv3.OpGet(prefix, append(clientv3.WithFirstCreate(), clientv3.WithKeysOnly())...)).
			Else(clientv3.OpGet(key)).Commit()
		if err = s.check(ctx, err); err == nil {
			if resp.Succeeded {
				rev := resp.Header.Revision
				oldest := resp.Responses[1].GetResponseRange().Kvs
				return rev, len(oldest) == 1 && oldest[0].CreateRevision == rev, nil
			}
			return resp.Responses[0].GetResponseRange().Kvs[0].CreateRevision, false, nil
		}
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			// Revoked by an operator, or expired, before a keep-alive
			// told us: the session is over; queue under a new one.
			ss.lose(fmt.Errorf("etcd lease %x not found when queueing: revoked or expired", int64(ss.id)))
			return 0, false, fmt.Errorf("%v: %w", err, errQueueLost)
		}
		if !retryable(err) {
			return 0, false, err
		}
		if err := s.backoff(ctx, attempt, err); err != nil {
			return 0, false, err
		}
	}
}

// waitGone returns once pred was deleted after revision rev, or after a
// third of the session TTL (to look again), or with the reason to stop.
func (s *etcdStore) waitGone(ctx context.Context, ss *session, pred string, rev int64) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wch := s.cli.Watch(clientv3.WithRequireLeader(wctx), pred, clientv3.WithRev(rev+1), clientv3.WithFilterPut())
	recheck := time.NewTimer(ss.ttl / 3)
	defer recheck.Stop()
	select {
	case <-ctx.Done():
		return s.check(ctx, ctx.Err())
	case <-s.closing:
		return driver.ErrClosed
	case <-ss.lost:
		return fmt.Errorf("while waiting: %v: %w: %w", ss.lostErr(), errQueueLost, driver.ErrLeaseLost)
	case <-wch:
	case <-recheck.C:
	}
	return nil
}

// dropWaiter deletes a waiter key in the background (rev 0: whatever its
// revision), retrying until it succeeds (then calls done) or the store
// closes (revoking the lease, which deletes it anyway).
func (s *etcdStore) dropWaiter(key string, rev int64, done func()) {
	s.spawn(func() {
		for attempt := 1; ; attempt++ {
			ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
			var err error
			if rev == 0 {
				_, err = s.cli.Delete(ctx, key)
			} else {
				_, err = s.cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", rev)).
					Then(clientv3.OpDelete(key)).Commit()
			}
			cancel()
			if err == nil {
				done()
				return
			}
			if s.ctx.Err() != nil {
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

// closeLocks loses every hold and revokes the session's lease, so the next
// waiters of the store's locks get them at once.
func (s *etcdStore) closeLocks() {
	s.lmu.Lock()
	s.closedL = true
	ss := s.sess
	s.lmu.Unlock()
	if ss == nil {
		return
	}
	ss.lose(errSessionClosed)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s.cli.Revoke(ctx, ss.id)
}

// Unlock deletes the hold's own key.
func (h *lockHold) Unlock(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.unlocked {
		return nil
	}
	if !h.ss.alive() {
		// The lease is gone or will be (the store closed, or it could not
		// be kept alive): its expiry deletes the key; the holder learns
		// that its critical section was not protected to the end.
		h.unlocked = true
		select {
		case <-h.s.closing:
		default:
			h.s.dropWaiter(h.key, h.rev, func() { h.ss.unwatch(h); h.ss.release(h.n) })
		}
		return fmt.Errorf("%v: %w", h.ss.lostErr(), driver.ErrLeaseLost)
	}
	// The key's name is the hold's until this delete returns (its number is
	// reused only after): a plain delete removes no one else's.
	h.setReleasing(true)
	_, err := h.s.cli.Delete(ctx, h.key)
	if err = h.s.check(ctx, err); err != nil {
		// The answer was lost: if the session's watch saw the delete, it
		// was applied (done); if it sees it later, it loses the session.
		if gone := h.setReleasing(false); !gone {
			return err
		}
	}
	h.unlocked = true
	h.ss.unwatch(h)
	h.ss.release(h.n)
	return nil
}

// setReleasing marks Unlock's delete under way or over, and says whether
// the session's watch saw the key deleted meanwhile.
func (h *lockHold) setReleasing(on bool) (gone bool) {
	h.gmu.Lock()
	defer h.gmu.Unlock()
	h.releasing = on
	return h.gone
}

func (h *lockHold) Fence() int64 { return h.rev }

// Lost checks the deadline on each call, besides the session's own timer.
func (h *lockHold) Lost() <-chan struct{} {
	h.ss.alive()
	return h.ss.lost
}

// LostErr says why the hold was lost (driver.LostCause).
func (h *lockHold) LostErr() error { return h.ss.lostErr() }

// Locks lists the names with a waiter or holder key.
func (s *etcdStore) Locks(ctx context.Context) ([]string, error) {
	p := s.key("lock") + "/"
	resp, err := s.cli.Get(ctx, p, clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err = s.check(ctx, err); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := []string{}
	for _, kv := range resp.Kvs {
		name, _, _ := strings.Cut(strings.TrimPrefix(string(kv.Key), p), "/")
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Waiters lists the queue in create-revision order; an empty queue is a
// name the store has forgotten (ErrNotFound).
func (s *etcdStore) Waiters(ctx context.Context, name string) ([]driver.Waiter, error) {
	resp, err := s.cli.Get(ctx, s.lockPrefix(name), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
	if err = s.check(ctx, err); err != nil {
		return nil, err
	}
	if len(resp.Kvs) == 0 {
		return nil, fmt.Errorf("lock %q: nobody holds or waits for it: %w", name, driver.ErrNotFound)
	}
	out := make([]driver.Waiter, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		out = append(out, driver.Waiter{Owner: string(kv.Value), Fence: kv.CreateRevision})
	}
	return out, nil
}
