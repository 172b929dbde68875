package etcd

import (
	"context"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"

	"github.com/cosid-go/store/internal/bootclock"
)

// keepAlive renews ss every third of its TTL until it is lost or the store
// closes, and loses it when its deadline passes first.
func (s *lockStore) keepAlive(ss *lockSession) {
	every := ss.ttl / 3
	tick := make(chan struct{}, 1)
	s.spawn(func() { s.renewLoop(ss, tick, every) })
	next := time.NewTimer(every)
	defer next.Stop()
	for {
		ss.mu.Lock()
		wait := ss.deadline - ss.now()
		ss.mu.Unlock()
		// Go's timers do not count time suspended: look at the lock
		// clock again at least every bootclock.Step.
		expire := time.NewTimer(min(wait, bootclock.Step))
		select {
		case <-s.ctx.Done():
			expire.Stop()
			return
		case <-ss.lost:
			expire.Stop()
			return
		case <-expire.C:
			ss.alive() // loses it once the deadline passed
			continue
		case <-next.C:
		}
		expire.Stop()
		next.Reset(every)
		select {
		case tick <- struct{}{}:
		default: // the last one is still out (bounded by every)
		}
	}
}

// renewLoop sends the session's keep-alives, on each tick, one at a time
// on one stream of its own, opened at first and again only after a
// failure. clientv3's KeepAliveOnce opens a stream per call, and with
// etcd authentication on every new stream authenticates (a bcrypt check
// and a raft write on the members): one per keep-alive. With one request
// in flight, the answer is to the request just sent, whose send time
// bounds the lease's life (session).
func (s *lockStore) renewLoop(ss *lockSession, tick <-chan struct{}, every time.Duration) {
	var ka *keepAliveStream
	defer func() { ka.close() }()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-ss.lost:
			return
		case <-tick:
		}
		if ka == nil {
			if ka = s.openKeepAlive(every); ka == nil {
				continue // the next tick tries again
			}
		}
		sent := ss.now()
		ttl, err := ka.renew(ss.id, every)
		switch {
		case err != nil:
			ka.close()
			ka = nil
		case ttl <= 0:
			s.expired(ss, fmt.Errorf("etcd lease %x expired: the server ended the session", int64(ss.id)))
		default:
			s.check(s.ctx, nil)
			ss.confirm(sent, ttl)
		}
	}
}

// keepAliveStream is a lease keep-alive stream and the cancel that ends it.
type keepAliveStream struct {
	cancel context.CancelFunc
	st     pb.Lease_LeaseKeepAliveClient
}

// openKeepAlive opens a keep-alive stream within every, or returns nil. It
// requires a leader: a member cut off from the others ends it.
func (s *lockStore) openKeepAlive(every time.Duration) *keepAliveStream {
	ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(s.ctx))
	late := time.AfterFunc(every, cancel)
	st, err := pb.NewLeaseClient(s.cli.ActiveConnection()).LeaseKeepAlive(ctx, grpc.WaitForReady(true))
	if !late.Stop() || err != nil {
		cancel()
		return nil
	}
	return &keepAliveStream{cancel: cancel, st: st}
}

// renew sends one keep-alive and returns the TTL answered (0: no such
// lease), ending the stream if no answer comes within every.
func (k *keepAliveStream) renew(id clientv3.LeaseID, every time.Duration) (time.Duration, error) {
	late := time.AfterFunc(every, k.cancel)
	defer late.Stop()
	if err := k.st.Send(&pb.LeaseKeepAliveRequest{ID: int64(id)}); err != nil {
		return 0, err
	}
	resp, err := k.st.Recv()
	if err != nil {
		return 0, err
	}
	return time.Duration(resp.TTL) * time.Second, nil
}

func (k *keepAliveStream) close() {
	if k != nil {
		k.cancel()
	}
}
