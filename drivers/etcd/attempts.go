package etcd

import (
	"context"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/protobuf/proto"
	"slices"
	"sync"
	"sync/atomic"
	"time"

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
// it is sent again beside the first, hedgeRead), and asks for a member
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
// by its attempt deadline (slot_renew.go: a cut write is found by
// landed). Otherwise clientv3's retry takes the cut's deadline error for
// its own and sends the write again, unseen: harmless where a repeat
// fails its compare and the call reads again (a gap for Next, found in
// place by the others), which keeps failover to one round trip.
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
	narrowed atomic.Int64 // when answers last narrowed widen (sinceEpoch); 0: never
}

// epoch is the origin of latency.narrowed, on the monotonic clock.
var epoch = time.Now()

func sinceEpoch(t time.Time) int64 { return int64(t.Sub(epoch)) }

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
	if l.narrowed.Load() > sinceEpoch(start) {
		return
	}
	l.widen.Store(int64(min(max(2*d, time.Duration(l.widen.Load())), attemptMax)))
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
		l.narrowed.Store(sinceEpoch(time.Now()))
	}
	l.widen.Store(int64(w))
}

// late notes a read's answer that came after its attempt deadline (reads
// are not cut: hedgeRead): the member answers, late, so the next attempts
// get twice as long as it took, as a cut then would have given them.
func (l *latency) late(took time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.widen.Store(int64(min(max(2*took, time.Duration(l.widen.Load())), attemptMax)))
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
// attempt deadline (the caller's, if sooner; a read's: hedgeRead) and
// requires a leader; it notes every answer's latency.
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
		if !isRead(req) {
			ctx, cancel = context.WithTimeout(ctx, bound)
			defer cancel()
		}
	}
	if ctx != call && isRead(req) {
		return s.hedgeRead(ctx, call, bound, method, req, reply, cc, invoker, opts...)
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

// A read is not cut by its attempt deadline: sent again, it would wait in
// the same queue from its end. A fleet starting at once queues thousands
// of requests on its members; each read cut and sent again was one more
// in the queue, and, cut again, the next: most of a thousand acquirers'
// round trips were cut, and their resends doubled the members' work.
// Instead, past its deadline, a read is sent again beside the first, when
// the client has another member to send it to (the balancer takes the
// next), and the first answer wins: a frozen member's read is answered by
// another, a busy member's keeps its place. A write is still cut
// (attemptInterceptor): a write a follower forwarded to a leader that
// died is never answered, and only a resend goes through the new leader.

// maxHedges bounds the resends of one read attempt (each at twice the
// last deadline), and so the work a read adds to a busy cluster.
const maxHedges = 2

// isRead reports whether req reads only: a Range, or a transaction of
// Ranges with no compares.
func isRead(req any) bool {
	switch r := req.(type) {
	case *pb.RangeRequest:
		return true
	case *pb.TxnRequest:
		if len(r.Compare) > 0 || len(r.Failure) > 0 {
			return false
		}
		for _, op := range r.Success {
			if op.GetRequestRange() == nil {
				return false
			}
		}
		return true
	}
	return false
}

// hedgeRead sends read req (ctx: the call's, requiring a leader), and
// again past each attempt deadline (bound, then twice it) when the client
// has several members, at most maxHedges times; the first answer is the
// call's, the others are cancelled. An answer later than bound widens the
// next attempts' deadline (latency.late).
func (s *etcdStore) hedgeRead(ctx, call context.Context, bound time.Duration, method string, req, reply any,
	cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		reply any
		err   error
		took  time.Duration
	}
	answers := make(chan answer, 1+maxHedges)
	// A resend is given no call option that writes into the caller's
	// memory (clientv3's Peer, for its log): the first attempt's would
	// race with it.
	resendOpts := slices.DeleteFunc(slices.Clone(opts), func(o grpc.CallOption) bool {
		switch o.(type) {
		case grpc.PeerCallOption, grpc.HeaderCallOption, grpc.TrailerCallOption:
			return true
		}
		return false
	})
	send := func(r any, opts []grpc.CallOption) {
		start := time.Now()
		go func() {
			err := invoker(ctx, method, req, r, cc, opts...)
			if held := s.heldRead; err == nil && held != nil {
				if release := held(req); release != nil {
					select { // the answer comes when the test says, or is not needed
					case <-release:
					case <-ctx.Done():
						err = status.FromContextError(ctx.Err()).Err()
					}
				}
			}
			answers <- answer{r, err, time.Since(start)}
		}()
	}
	send(reply, opts)
	pending, hedges := 1, 0
	if len(s.cli.Endpoints()) < 2 {
		hedges = maxHedges // the same member would get it again
	}
	timer := time.NewTimer(bound)
	defer timer.Stop()
	first, wait := bound, bound
	var won *answer
	var failed error
	for pending > 0 {
		select {
		case a := <-answers:
			pending--
			switch {
			case a.err == nil && won == nil:
				won = &a
				cancel() // the others: their answers are not needed
			case a.err != nil && failed == nil && won == nil:
				failed = a.err
			}
		case <-timer.C:
			if won == nil && hedges < maxHedges && call.Err() == nil {
				hedges++
				pending++
				send(reply.(proto.Message).ProtoReflect().New().Interface(), resendOpts)
				wait *= 2
				timer.Reset(wait)
			}
		}
	}
	// Every attempt has returned: none writes into reply any more.
	if won == nil {
		return failed
	}
	s.latency.observe(won.took)
	if won.took > first {
		s.latency.late(won.took)
	}
	if won.reply != reply {
		m := reply.(proto.Message)
		proto.Reset(m)
		proto.Merge(m, won.reply.(proto.Message))
	}
	return nil
}
