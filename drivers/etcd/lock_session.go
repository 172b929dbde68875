package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// lockSession is the etcd lease every lock key of the store hangs on: the
// server deletes the keys when it expires, so a crashed store frees its
// locks.
//
// Liveness: the leader renews a lease, on a keep-alive it answers, until
// at least its own receive time plus the TTL it returns; the send time
// comes before that, so send + TTL is a bound the lease cannot expire
// before, measured on the lock clock (package bootclock: it counts time
// this machine spent suspended, as the leader's own clock does; Go's
// monotonic clock stops then on Linux). The store's holds are
// Lost once now passes the latest such bound less a margin (for clock rate
// differences), whether or not anything else looks wrong. A follower never
// answers a keep-alive itself: it forwards it to the leader.
type lockSession struct {
	id  clientv3.LeaseID
	ttl time.Duration // as the server granted it

	mu       sync.Mutex
	used     map[int64]bool                  // waiter key numbers in use (take, release)
	keys     map[string]*lockHold            // the keys watchDeletes reports to
	waits    map[string]map[*deleteWait]bool // by lock name prefix (lock_waits.go)
	names    map[string]*nameWatch           // the lock names watched (lock_watch.go)
	idle     []string                        // names without keys, oldest first (lock_watch.go)
	gen      *watchGen                       // the watches' current stream, nil between two
	now      func() time.Duration            // the lock clock (lockStore.lockNow)
	deadline time.Duration                   // on now: holds are lost from here on
	sent     time.Duration                   // on now: of the last keep-alive answered
	lost     chan struct{}
	err      error
}

// margin is taken off each bound: a tenth of the TTL covers clock rates
// that differ by far more than real clocks do.
func margin(ttl time.Duration) time.Duration { return ttl / 10 }

// confirm moves the deadline to sent + ttl - margin if that is later.
func (ss *lockSession) confirm(sent, ttl time.Duration) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if d := sent + ttl - margin(ttl); d > ss.deadline {
		ss.deadline, ss.sent = d, sent
	}
}

// alive reports whether the holds may still be trusted, losing them when
// the deadline has passed.
func (ss *lockSession) alive() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.err != nil {
		return false
	}
	if now := ss.now(); now >= ss.deadline {
		ss.loseLocked(fmt.Errorf("etcd lease %x (ttl %v): the last keep-alive the leader answered was sent %v ago",
			int64(ss.id), ss.ttl, (now - ss.sent).Round(time.Millisecond)))
		return false
	}
	return true
}

func (ss *lockSession) lose(err error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.loseLocked(err)
}

func (ss *lockSession) loseLocked(err error) {
	if ss.err == nil {
		ss.err = err
		close(ss.lost)
	}
}

func (ss *lockSession) lostErr() error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.err
}

// take returns the lowest waiter key number not in use in the session.
func (ss *lockSession) take() int64 {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.used == nil {
		ss.used = map[int64]bool{}
	}
	n := int64(1)
	for ss.used[n] {
		n++
	}
	ss.used[n] = true
	return n
}

// release makes n available once its key is surely deleted.
func (ss *lockSession) release(n int64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.used, n)
}

// watch has the session's watch report the deletes of h's key to h.
func (ss *lockSession) watch(h *lockHold) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.keys == nil {
		ss.keys = map[string]*lockHold{}
	}
	ss.keys[h.key] = h
}

// unwatch ends what watch (and follow) started.
func (ss *lockSession) unwatch(h *lockHold) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.keys[h.key] == h {
		delete(ss.keys, h.key)
	}
	if h.followed {
		h.followed = false
		ss.unfollowLocked(h.key[:strings.LastIndexByte(h.key, '/')+1])
	}
}

// watched lists the holds watch registered.
func (ss *lockSession) watched() []*lockHold {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := make([]*lockHold, 0, len(ss.keys))
	for _, h := range ss.keys {
		out = append(out, h)
	}
	return out
}

// sawDelete tells the hold of key, if the session watches it, of its
// delete at revision rev.
func (ss *lockSession) sawDelete(key string, rev int64, what string) {
	ss.mu.Lock()
	h := ss.keys[key]
	ss.mu.Unlock()
	if h != nil {
		h.sawDelete(rev, what)
	}
}

// errSessionClosed is the cause of holds lost because the store closed.
var errSessionClosed = errors.New("store closed")

// session returns the store's live session, granting a new lease when
// there is none (or the last was lost). The grant runs on its own, under
// the store's context and bounded by the session TTL (a lease granted
// later would be dead at birth), and every caller waits for it only as
// long as its own context lasts: a grant the network holds up keeps no
// Lock, TryLock or Close past its bound.
func (s *lockStore) session(ctx context.Context) (*lockSession, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, errClosedStore
		}
		if s.sess != nil && s.sess.alive() {
			ss := s.sess
			s.mu.Unlock()
			return ss, nil
		}
		g := s.granting
		if g == nil || g.ended() {
			g = &grant{done: make(chan struct{})}
			s.granting = g
			s.spawn(func() { s.grant(g) })
		}
		s.mu.Unlock()
		select {
		case <-g.done:
		case <-ctx.Done():
			return nil, s.check(ctx, ctx.Err())
		case <-s.closing:
			return nil, errClosedStore
		}
		if g.err != nil {
			if !retryable(g.err) {
				return nil, g.err
			}
			if err := s.backoff(ctx, 1, g.err); err != nil {
				return nil, err
			}
		}
	}
}

// grant is a lease grant in flight, shared by the callers that need one.
type grant struct {
	done chan struct{} // closed when it ended; err is set before
	err  error
}

func (g *grant) ended() bool {
	select {
	case <-g.done:
		return true
	default:
		return false
	}
}

// grant asks for the session's lease and makes it the store's session,
// unless the store closed meanwhile (the lease, without keys, is revoked
// or expires).
func (s *lockStore) grant(g *grant) {
	defer close(g.done)
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.sessionTTL)
	defer cancel()
	sent := s.lockNow()
	resp, err := s.cli.Grant(ctx, int64((s.cfg.sessionTTL+time.Second-1)/time.Second))
	if g.err = s.check(ctx, err); g.err != nil {
		return
	}
	ttl := time.Duration(resp.TTL) * time.Second
	ss := &lockSession{id: resp.ID, ttl: ttl, now: s.lockNow, lost: make(chan struct{})}
	ss.confirm(sent, ttl)
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.sess = ss
	}
	s.mu.Unlock()
	if closed {
		g.err = errClosedStore
		s.cli.Revoke(ctx, resp.ID) // bounded: Close cancels s.ctx
		return
	}
	s.spawn(func() { s.keepAlive(ss) })
	// Each lock name is watched from its first key's create revision on.
	s.spawn(func() { s.watchDeletes(ss) })
}

// pause waits before a session's next try, or says why there is none.
func (s *lockStore) pause(ctx context.Context, ss *lockSession, attempt int) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-ss.lost:
		return ss.lostErr()
	case <-time.After(min(50*time.Millisecond<<min(attempt, 5), time.Second)):
		return nil
	}
}

// recheckHolds reads every key the session watches, telling each hold
// whose key is missing or another, and returns the revision to watch
// from again. That revision is read before the keys are listed, so a key
// registered after the listing was created after it. Each read is retried
// on its own (bounded: a member without a leader may not answer), so that
// the pass ends whatever member each read reaches.
func (s *lockStore) recheckHolds(ctx context.Context, ss *lockSession) (int64, error) {
	get := func(key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
		for attempt := 1; ; attempt++ {
			gctx, cancel := context.WithTimeout(ctx, ss.ttl)
			resp, err := s.cli.Get(gctx, key, opts...)
			cancel()
			if err == nil {
				return resp, nil
			}
			if err := s.pause(ctx, ss, attempt); err != nil {
				return nil, err
			}
		}
	}
	resp, err := get(s.key("meta"), clientv3.WithKeysOnly())
	if err != nil {
		return 0, err
	}
	from := resp.Header.Revision + 1
	for _, h := range ss.watched() {
		resp, err := get(h.key)
		if err != nil {
			return 0, err
		}
		h.state.mu.Lock()
		rev := h.state.rev
		h.state.mu.Unlock()
		if len(resp.Kvs) == 0 {
			h.sawDelete(resp.Header.Revision, "missing")
		} else if rev != 0 && resp.Kvs[0].CreateRevision != rev {
			h.sawDelete(resp.Header.Revision, "replaced")
		}
	}
	return from, nil
}
