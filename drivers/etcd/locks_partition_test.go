package etcd

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/etcdtest"
	"github.com/cosid-go/store/internal/testing/netproxy"
)

// TestLockLostBeforeOtherGrant: a holder whose only member goes silent
// (its connection frozen by a proxy, or the member itself paused: a
// follower, or the leader, so that the others elect a new one) or is
// partitioned from its peers (a follower, or the leader: its client port
// still answers the holder) on a 3-member cluster. Another store, on the
// other members, waits for the lock. When it is granted, the holder's Lost
// must already be closed: the check is made at that instant, and both
// times are logged.
func TestLockLostBeforeOtherGrant(t *testing.T) {
	const (
		freeze    = iota // freeze the holder's connection (a proxy)
		pause            // pause the member
		partition        // partition the member from its peers
	)
	for _, tc := range []struct {
		name   string
		leader bool // the holder's member is the leader
		how    int
	}{
		{"ProxyFrozen", false, freeze},
		{"FollowerPaused", false, pause},
		{"LeaderPaused", true, pause},
		{"FollowerPartitioned", false, partition},
		{"LeaderPartitioned", true, partition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := etcdtest.Start(t, 3)
			x, others := pickMember(t, c, tc.leader)
			p := netproxy.New(t, strings.TrimPrefix(x.ClientURL, "http://"))
			endpoint := p.Addr()
			if tc.how == partition {
				endpoint = x.ClientURL // no proxy: only the peer links are cut
			}
			ctx := t.Context()
			prefix := freshPrefix("partition")
			holder, err := OpenStore(ctx, &Options{Endpoints: []string{endpoint}, Prefix: prefix, SessionTTL: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer holder.Close()
			// The waiter's session outlives the election a paused leader
			// causes: with 2s, its own keep-alives could fail meanwhile.
			other, err := OpenStore(ctx, &Options{Endpoints: others, Prefix: prefix, SessionTTL: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()

			l, err := holder.Locks().Lock(ctx, "p")
			if err != nil {
				t.Fatal(err)
			}
			lostAt := make(chan time.Time, 1)
			go func() { <-l.Lost(); lostAt <- time.Now() }()
			granted := make(chan *store.Lock, 1)
			waitCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			go func() {
				l2, err := other.Locks().Lock(waitCtx, "p")
				if err != nil {
					t.Errorf("the other store's Lock: %v", err)
					granted <- nil
					return
				}
				// The safety check, at the instant of the grant.
				select {
				case <-l.Lost():
				default:
					t.Errorf("another store was granted the lock while the holder's Lost was still open")
				}
				granted <- l2
			}()
			waitQueued(t, other, "p", 2)

			cutAt := time.Now()
			switch tc.how {
			case pause:
				x.Pause()
				defer x.Resume()
			case partition:
				c.Partition(t, x)
				defer c.Heal()
			default:
				p.Freeze()
				defer p.Thaw()
			}
			l2 := <-granted
			grantAt := time.Now()
			if l2 == nil {
				return
			}
			select {
			case lost := <-lostAt:
				t.Logf("cut at 0; holder's Lost at %v; other store granted at %v (fence %d > %d)",
					lost.Sub(cutAt).Round(time.Millisecond), grantAt.Sub(cutAt).Round(time.Millisecond), l2.Fence(), l.Fence())
				if !lost.Before(grantAt) {
					t.Errorf("Lost at %v is not before the other grant at %v", lost, grantAt)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Lost never closed")
			}
			if l2.Fence() <= l.Fence() {
				t.Errorf("new fence %d not above the old %d", l2.Fence(), l.Fence())
			}
			if err := l2.Unlock(ctx); err != nil {
				t.Error(err)
			}
		})
	}
}

// pickMember returns the leader or a follower, and the other members'
// endpoints.
func pickMember(t *testing.T, c *etcdtest.Cluster, leader bool) (*etcdtest.Member, []string) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for i, m := range c.Members {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		st, err := cli.Status(ctx, m.ClientURL)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if (st.Leader == st.Header.MemberId) == leader {
			var others []string
			for j, o := range c.Members {
				if j != i {
					others = append(others, o.ClientURL)
				}
			}
			return m, others
		}
	}
	t.Fatalf("no member with leader=%v", leader)
	return nil, nil
}
