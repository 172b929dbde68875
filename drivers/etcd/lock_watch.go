package etcd

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/metadata"
)

// A session watches only the lock names it has keys under (held or
// waiting): one watch per name, from the create revision of its first key
// there, all on one gRPC stream. An Unlock then reaches the sessions queued
// on that name, not every session of every store: with many stores
// holding many names, a watch of the whole lock prefix per session made
// each delete a message to every session. A session with no key watches
// nothing but a key never written ({prefix}/lock), which keeps the stream
// open (a new stream authenticates, with etcd authentication on) and
// answers the progress probes.
//
// A name's watch outlives its last key for a while (up to maxIdleNames of
// them per session, the oldest ended first), so that a store locking the
// same names again and again creates no watch each time.

// maxIdleNames is how many names without a key a session keeps watching.
const maxIdleNames = 64

// nameWatch is a lock name the session watches, for refs of its keys.
type nameWatch struct {
	refs   int
	from   int64 // the next revision to watch from
	cancel context.CancelFunc
}

// watchGen is one start of the session's watches, on one stream.
type watchGen struct {
	ctx    context.Context // carries the stream's mark; cancelled when it ends
	events chan nameEvent
}

// nameEvent is a watch response of a name (prefix), or its end (closed),
// from the watch nw ran.
type nameEvent struct {
	prefix string
	nw     *nameWatch
	resp   clientv3.WatchResponse
	closed bool
}

// follow has the session watch h's lock name (prefix), from rev, the
// key's create revision, on: a delete since is told even if the watch
// starts later.
func (s *lockStore) follow(ss *lockSession, h *lockHold, prefix string, rev int64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if h.followed || ss.keys[h.key] != h {
		return
	}
	h.followed = true
	if ss.names == nil {
		ss.names = map[string]*nameWatch{}
	}
	nw := ss.names[prefix]
	if nw == nil {
		nw = &nameWatch{from: rev}
		ss.names[prefix] = nw
		if ss.gen != nil {
			s.startLocked(ss.gen, prefix, nw)
		}
	}
	nw.refs++
}

// unfollowLocked ends one ref of follow; the last ends the name's watch.
func (ss *lockSession) unfollowLocked(prefix string) {
	nw := ss.names[prefix]
	if nw == nil {
		return
	}
	if nw.refs--; nw.refs > 0 {
		return
	}
	ss.idle = append(ss.idle, prefix)
	for len(ss.idle) > maxIdleNames {
		oldest := ss.idle[0]
		ss.idle = ss.idle[1:]
		if !slices.Contains(ss.idle, oldest) {
			ss.dropIdleLocked(oldest)
		}
	}
}

// dropIdleLocked ends the watch of a name without keys.
func (ss *lockSession) dropIdleLocked(prefix string) {
	if nw := ss.names[prefix]; nw != nil && nw.refs == 0 {
		delete(ss.names, prefix)
		if nw.cancel != nil {
			nw.cancel()
		}
	}
}

// startLocked starts the watch of a name in gen; its responses, and its
// end, go to gen.events.
func (s *lockStore) startLocked(gen *watchGen, prefix string, nw *nameWatch) {
	ctx, cancel := context.WithCancel(gen.ctx)
	nw.cancel = cancel
	from := nw.from
	s.spawn(func() {
		wch := s.cli.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithRev(from), clientv3.WithFilterPut())
		for resp := range wch {
			if ctx.Err() != nil {
				return // unfollowed, or the start ended
			}
			select {
			case gen.events <- nameEvent{prefix: prefix, nw: nw, resp: resp}:
			case <-ctx.Done():
				return
			}
		}
		if ctx.Err() == nil {
			select { // ended by the server or the client, not by us
			case gen.events <- nameEvent{prefix: prefix, nw: nw, closed: true}:
			case <-ctx.Done():
			}
		}
	})
}

// current reports whether ev comes from the name's watch still wanted:
// one a name no longer followed (or followed anew) ran is not news.
func (ss *lockSession) current(ev nameEvent) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.names[ev.prefix] == ev.nw
}

// seen advances a name's next revision past a response of its watch.
func (ss *lockSession) seen(prefix string, rev int64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if nw := ss.names[prefix]; nw != nil && rev >= nw.from {
		nw.from = rev + 1
	}
}

// watchDeletes runs the session's watches for its life, telling its own
// keys' holds and its waits of the deletes. A watch that ends starts
// again, all of them on a new stream, each after the last revision it
// reported; one whose revisions were compacted cannot replay them, so the
// keys are read again instead.
func (s *lockStore) watchDeletes(ss *lockSession) {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	starts := 0
	for attempt := 1; ; attempt++ {
		if s.watchHook != nil {
			s.watchHook()
		}
		// The member serving the watch may be cut off from the others while
		// they answer the keep-alives: a watch there would hear no delete
		// and the session would live on. Requiring a leader, the member
		// ends the watches once it has none; one that answers nothing at all
		// (stopped, its connection silent) is found by asking for the
		// stream's progress every third of the TTL, and left when the
		// previous question got no answer.
		// The client shares one stream among the watches of a context's
		// metadata, and keeps a stream whose member never confirmed a
		// watch: a mark of its own gives each start a new stream, on
		// whichever member the client picks next.
		mark := metadata.AppendToOutgoingContext(clientv3.WithRequireLeader(ctx), "cosid-lock-watch", fmt.Sprintf("%x-%d", int64(ss.id), starts))
		starts++
		wctx, wcancel := context.WithCancel(mark)
		gen := &watchGen{ctx: wctx, events: make(chan nameEvent, 16)}
		// The keeper: Watch itself waits for the member to confirm it.
		unanswered := time.AfterFunc(ss.ttl/3, wcancel)
		keeper := s.cli.Watch(wctx, s.key("lock"))
		unanswered.Stop()
		ss.mu.Lock()
		ss.gen = gen
		for prefix, nw := range ss.names {
			s.startLocked(gen, prefix, nw)
		}
		ss.mu.Unlock()
		probe := time.NewTicker(ss.ttl / 3)
		heard, compacted := true, false
	events:
		for {
			select {
			case <-ctx.Done():
				s.endGen(ss, gen, wcancel, probe)
				return
			case <-ss.lost:
				s.endGen(ss, gen, wcancel, probe)
				return
			case <-probe.C:
				if !heard {
					break events // deaf: watch elsewhere
				}
				heard = false
				s.spawn(func() { s.cli.RequestProgress(wctx) })
			case resp, ok := <-keeper:
				if !ok || resp.Err() != nil {
					compacted = ok && resp.CompactRevision != 0
					break events
				}
				heard, attempt = true, 1 // it works
			case ev := <-gen.events:
				if !ss.current(ev) {
					continue
				}
				if ev.closed || ev.resp.Err() != nil {
					compacted = !ev.closed && ev.resp.CompactRevision != 0
					break events
				}
				heard, attempt = true, 1
				s.tell(ss, ev)
			}
		}
		s.endGen(ss, gen, wcancel, probe)
		if compacted {
			next, err := s.recheckHolds(ctx, ss)
			if err != nil {
				return // the store closed or the session was lost
			}
			ss.mu.Lock()
			for _, nw := range ss.names {
				nw.from = max(nw.from, next)
			}
			ss.mu.Unlock()
			attempt = 1
			ss.wakeWaits() // deletes they wait for may be among those skipped
			continue
		}
		// Ended otherwise (no leader there, a broken stream): the next
		// watch may land on the same member; back off.
		if s.pause(ctx, ss, attempt) != nil {
			return
		}
	}
}

// tell passes a name's watch response to the holds and waits.
func (s *lockStore) tell(ss *lockSession, ev nameEvent) {
	for _, e := range ev.resp.Events {
		if e.Type == clientv3.EventTypeDelete {
			key := string(e.Kv.Key)
			if !strings.HasPrefix(key[strings.LastIndexByte(key, '/')+1:], fmt.Sprintf("%016x-", int64(ss.id))) {
				s.heard.Add(1) // another session's key
			}
			ss.sawDelete(key, e.Kv.ModRevision, fmt.Sprintf("deleted at revision %d", e.Kv.ModRevision))
			ss.tellWaits(key, e.Kv.ModRevision)
		}
		ss.seen(ev.prefix, e.Kv.ModRevision)
	}
	if ev.resp.IsProgressNotify() {
		ss.seen(ev.prefix, ev.resp.Header.Revision)
	}
}

// endGen stops a start's watches; the names keep their next revisions.
func (s *lockStore) endGen(ss *lockSession, gen *watchGen, wcancel context.CancelFunc, probe *time.Ticker) {
	ss.mu.Lock()
	if ss.gen == gen {
		ss.gen = nil
	}
	for _, nw := range ss.names {
		nw.cancel = nil
	}
	ss.mu.Unlock()
	wcancel()
	probe.Stop()
}
