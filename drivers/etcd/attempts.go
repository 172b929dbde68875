package etcd

import (
	"context"
	"slices"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// Failover. When the leader dies, a write a follower forwarded to it is
// lost: the follower waits for its answer until the call's deadline,
// although a new leader is elected in one or two election timeouts. So a
// call that retries (and resolves an unknown outcome by reading, never by
// writing again: range_store.go's Next compares the mod revision, which
// a lost write's stale memo can never match) gives each round trip a
// deadline of its own, shorter than the call's, and asks for a member
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

// latency keeps the latencies of the last answers, for the attempt
// deadline.
type latency struct {
	mu   sync.Mutex
	last [31]time.Duration
	n    int // answers noted
}

// observe notes an answer that took d.
func (l *latency) observe(d time.Duration) {
	l.mu.Lock()
	l.last[l.n%len(l.last)] = d
	l.n++
	l.mu.Unlock()
}

// deadline is the next attempt's.
func (l *latency) deadline() time.Duration {
	l.mu.Lock()
	ds := l.last
	n := min(l.n, len(ds))
	l.mu.Unlock()
	if n == 0 {
		return attemptMin
	}
	slices.Sort(ds[:n])
	return min(max(attemptFactor*ds[n/2], attemptMin), attemptMax)
}

// attemptInterceptor gives each unary round trip of a marked context its
// attempt deadline (the caller's, if sooner) and requires a leader; it
// notes every answer's latency.
func (s *etcdStore) attemptInterceptor(ctx context.Context, method string, req, reply any,
	cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	start := time.Now()
	if ctx.Value(attemptsKey{}) != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(clientv3.WithRequireLeader(ctx), s.latency.deadline())
		defer cancel()
	}
	err := invoker(ctx, method, req, reply, cc, opts...)
	if err == nil {
		s.latency.observe(time.Since(start))
	}
	return err
}
