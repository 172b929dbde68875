package etcd

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Failover. When the leader dies, a write a follower forwarded to it is
// lost: the follower waits for its answer until the call's deadline,
// although a new leader is elected in one or two election timeouts. So a
// call that retries (and resolves an unknown outcome by reading, never by
// writing again: range_store.go's Next compares the mod revision, which
// a lost write's stale memo can never match) gives each round trip a
// deadline of its own, shorter than the call's (a read: a time after which
// a read on one member is waited for, awaitRead), and asks for a member
// with a leader: a member that knows it has none answers ErrNoLeader at
// once instead of holding the request. The retry goes to another member
// when the client's balancer has one ready.

// The attempt deadline: attemptFactor times the median of the last
// answers' latencies, within [attemptMin, attemptMax]. The floor keeps a
// healthy but briefly slow member from having its writes cut (each cut is
// a write whose outcome is unknown: a gap in a range); the factor follows
// a slow disk or a loaded machine. A median, as the few slow answers of a
// failover (the first after an election) must not lengthen the next one's.
const (
	attemptMin    = 300 * time.Millisecond
	attemptMax    = 2 * time.Second
	attemptFactor = 10
)

type attemptsKey struct{}

// attempts marks ctx for calls that retry a round trip cut short by its
// attempt deadline, resolving its outcome by reading.
func attempts(ctx context.Context) context.Context {
	return context.WithValue(ctx, attemptsKey{}, true)
}

type seenCutsKey struct{}

// seenCuts marks an attempts context whose calls must see every write cut
// by its attempt deadline (slot_renew.go: a cut write is found by landed;
// range_store.go: Next reports the gap a cut write may leave). Otherwise
// clientv3's retry takes the cut's deadline error for its own and sends
// the write again, unseen: harmless where a repeat fails its compare and
// the call reads again and nothing is skipped (Seal, Advance), which
// keeps failover to one round trip.
func seenCuts(ctx context.Context) context.Context {
	return context.WithValue(attempts(ctx), seenCutsKey{}, true)
}

// latency keeps the latencies of the last answers, and the attempt
// deadline they give, recomputed every few answers (off the calls' path).
//
// A cut widens the deadline: a server that answers, but later than the
// deadline (a fleet of stores acquiring at once queues thousands of
// requests), would otherwise have every attempt cut and sent again, each
// resend one more request in its queue, until the calls' own deadlines:
// a load that feeds itself. So each cut doubles the next attempts'
// deadline (within attemptMax), as TCP backs off its retransmission
// timeout, and then each answer sets it to attemptFactor times its
// latency, halving it at most: a slow server keeps it wide (the answer
// that came after a cut tells how slow), a fast one (a failover's new
// member) closes it in a few answers. A cut of an attempt that started
// before answers narrowed the deadline widens nothing: those answers, in
// its time, came sooner than it was given (a frozen member among live
// ones, with calls under way on each: its attempts would otherwise
// widen it again and again, each of them then waiting longer on it).
type latency struct {
	mu       sync.Mutex
	last     [31]time.Duration
	n        int          // answers noted
	cur      atomic.Int64 // the attempt deadline; 0: none computed yet
	widen    atomic.Int64 // the deadline after cuts, while above cur; 0: none
	narrowed time.Time    // when answers last narrowed widen (guarded by mu); zero: never
}

// observe notes an answer that took d.
func (l *latency) observe(d time.Duration) {
	if l.widen.Load() > 0 {
		l.narrow(d)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last[l.n%len(l.last)] = d
	l.n++
	if l.n%8 != 1 {
		return
	}
	ds := l.last
	n := min(l.n, len(ds))
	slices.Sort(ds[:n])
	l.cur.Store(int64(min(max(attemptFactor*ds[n/2], attemptMin), attemptMax)))
}

// cut notes an attempt started at start and cut at its deadline d: the
// next ones get twice d, unless answers narrowed the deadline since start.
func (l *latency) cut(start time.Time, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if start.Before(l.narrowed) {
		return
	}
	l.widenTo(2 * d)
}

// widenTo widens the deadline to d, within attemptMax; l.mu is held.
func (l *latency) widenTo(d time.Duration) {
	l.widen.Store(int64(min(max(d, time.Duration(l.widen.Load())), attemptMax)))
}

// narrow sets a widened deadline after an answer that took d.
func (l *latency) narrow(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := time.Duration(l.widen.Load())
	if w == 0 {
		return
	}
	if w = min(max(w/2, attemptFactor*d), attemptMax); w <= max(attemptMin, time.Duration(l.cur.Load())) {
		w = 0 // back to the answers' median
	}
	if w < time.Duration(l.widen.Load()) {
		l.narrowed = time.Now()
	}
	l.widen.Store(int64(w))
}

// late notes a read's answer that came after its attempt deadline (a read
// on one member is not cut: awaitRead): the member answers, late, so the
// next attempts get twice as long as it took, as a cut then would have
// given them.
func (l *latency) late(took time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.widenTo(2 * took)
}

// deadline is the next attempt's.
func (l *latency) deadline() time.Duration {
	d := max(time.Duration(l.cur.Load()), time.Duration(l.widen.Load()))
	if d > 0 {
		return d
	}
	return attemptMin
}

// attemptInterceptor gives each unary round trip of a marked context its
// attempt deadline (the caller's, if sooner; a read on one member is
// waited for: awaitRead) and requires a leader; it notes every answer's latency.
func (s *etcdStore) attemptInterceptor(ctx context.Context, method string, req, reply any,
	cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	start := time.Now()
	call := ctx
	var bound time.Duration
	if ctx.Value(attemptsKey{}) != nil {
		var cancel context.CancelFunc
		// clientv3.WithRequireLeader, without copying the metadata.
		ctx = metadata.AppendToOutgoingContext(ctx, rpctypes.MetadataRequireLeaderKey, rpctypes.MetadataHasLeader)
		bound = s.latency.deadline()
		if s.waitRead(req) {
			return s.awaitRead(ctx, bound, method, req, reply, cc, invoker, opts...)
		}
		ctx, cancel = context.WithTimeout(ctx, bound)
		defer cancel()
	}
	err := invoker(ctx, method, req, reply, cc, opts...)
	if err == nil && ctx != call && s.lateAnswer != nil && s.lateAnswer(req) {
		<-ctx.Done() // the answer comes after the attempt's deadline
		err = status.FromContextError(ctx.Err()).Err()
	}
	if err == nil {
		s.latency.observe(time.Since(start))
	}
	cut := err != nil && ctx != call && ctx.Err() != nil && call.Err() == nil
	if cut {
		s.latency.cut(start, bound)
	}
	if cut && call.Value(seenCutsKey{}) != nil {
		// Cut by the attempt's deadline, not the call's: clientv3's retry
		// would take a deadline error for a cut of its own and send the
		// write again, unseen by the store, whose handling of the unknown
		// outcome it skips (a Release applied, then found released,
		// reported ErrLeaseLost). Unavailable it resends only if never
		// sent (reads: always, which is safe), and the store sees it.
		return status.Errorf(codes.Unavailable, "no answer within the attempt deadline (the outcome is unknown): %v", err)
	}
	return err
}

// With one member, a read is not cut by its attempt deadline: sent again,
// it would wait in the same member's queue from its end. A fleet starting
// at once queues thousands of requests on the member; each read cut and
// sent again was one more in the queue and, cut again, the next: most of
// a thousand acquirers' round trips were cut, and their resends doubled
// the work. The read is waited for (within the call's deadline), and an
// answer later than the attempt deadline widens the next attempts' as a
// cut would have (latency.late), so the write that follows is not cut in
// its turn. With several members a read is still cut, and clientv3 sends
// it to the next (a frozen member's read is answered by another); sending
// it again beside the first instead, tried, made a fleet on three members
// slower (every read of the burst was sent twice). A write is cut either
// way: a write a follower forwarded to a leader that died is never
// answered, and only a resend goes through the new leader.

// waitRead reports whether req, a round trip with an attempt deadline,
// is a read to be waited for: a Range, or a transaction of Ranges with no
// compares, on a client of one member.
func (s *etcdStore) waitRead(req any) bool {
	switch r := req.(type) {
	case *pb.RangeRequest:
	case *pb.TxnRequest:
		if len(r.Compare) > 0 || len(r.Failure) > 0 {
			return false
		}
		for _, op := range r.Success {
			if op.GetRequestRange() == nil {
				return false
			}
		}
	default:
		return false
	}
	return len(s.cli.Endpoints()) < 2
}

// awaitRead sends read req (ctx: the call's, requiring a leader) and waits
// for its answer; one later than bound widens the next attempts' deadline.
func (s *etcdStore) awaitRead(ctx context.Context, bound time.Duration, method string, req, reply any,
	cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	start := time.Now()
	err := invoker(ctx, method, req, reply, cc, opts...)
	if held := s.heldRead; err == nil && held != nil {
		if release := held(req); release != nil {
			select { // the answer comes when the test says
			case <-release:
			case <-ctx.Done():
				err = status.FromContextError(ctx.Err()).Err()
			}
		}
	}
	if err != nil {
		return err
	}
	took := time.Since(start)
	s.latency.observe(took)
	if took > bound {
		s.latency.late(took)
	}
	return nil
}
