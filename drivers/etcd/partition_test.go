package etcd

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/etcdtest"
	"github.com/cosid-go/store/internal/testing/poll"
)

// TestPartitionedMemberHandsOutNothingTwice: a store whose only member is
// partitioned from its peers (a follower, then the leader) while another
// store on the others goes on. Its Next and Acquire fail, within their
// context's bound and a margin, with ErrUnavailable or the context's error;
// healed, they succeed again. No value is handed out twice across both
// stores on x, the one on the others, and every round, and no slot term overlaps another of its slot.
func TestPartitionedMemberHandsOutNothingTwice(t *testing.T) {
	const (
		callWait = 3 * time.Second  // each call through the partitioned member
		slack    = 10 * time.Second // for a loaded machine: the call returns within callWait+slack
		bound    = 60 * time.Second // the cluster noticing a partition or its end
	)
	c := etcdtest.Start(t, 3)
	ctx := t.Context()
	prefix := freshPrefix("partnext")
	ns := store.Namespace{Name: "w", Limit: 8, Tolerance: time.Second}
	var ranges []store.Range
	var leases []store.Lease
	for round, leader := range []bool{false, true} {
		x, others := pickMember(t, c, leader)
		xs, err := OpenStore(ctx, &Options{Endpoints: []string{x.ClientURL}, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		defer xs.Close()
		quiet, err := OpenStore(ctx, &Options{Endpoints: []string{x.ClientURL}, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		defer quiet.Close()
		maj, err := OpenStore(ctx, &Options{Endpoints: others, Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		defer maj.Close()
		next := func(st *store.Store) error {
			r, err := st.Ranges().Next(ctx, "k", 10)
			if err == nil {
				ranges = append(ranges, r)
			}
			return err
		}
		acquire := func(st *store.Store, owner string) error {
			l, err := st.Slots().Acquire(ctx, ns, owner, store.AcquireOptions{})
			if err == nil {
				leases = append(leases, l)
			}
			return err
		}
		for _, st := range []*store.Store{xs, quiet, maj} {
			if err := next(st); err != nil {
				t.Fatalf("round %d: Next before the partition: %v", round, err)
			}
		}

		c.Partition(t, x)
		t.Logf("round %d: %s partitioned (leader: %v)", round, x.Name, leader)
		for i := range 2 {
			callCtx, cancel := context.WithTimeout(ctx, callWait)
			start := time.Now()
			r, err := xs.Ranges().Next(callCtx, "k", 10)
			took := time.Since(start)
			cancel()
			if err == nil {
				ranges = append(ranges, r)
				t.Errorf("round %d: Next %d through the partitioned %s handed out %v", round, i, x.Name, r)
			} else if !errors.Is(err, store.ErrUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("round %d: Next %d through the partitioned %s: %v; want ErrUnavailable or the deadline", round, i, x.Name, err)
			}
			if took > callWait+slack {
				t.Errorf("round %d: Next %d through the partitioned %s took %v", round, i, x.Name, took)
			}
			t.Logf("round %d: Next %d through %s: %v after %v", round, i, x.Name, err, took.Round(time.Millisecond))
		}
		callCtx, cancel := context.WithTimeout(ctx, callWait)
		start := time.Now()
		l, err := xs.Slots().Acquire(callCtx, ns, fmt.Sprintf("x%d-early", round), store.AcquireOptions{})
		took := time.Since(start)
		cancel()
		if err == nil {
			leases = append(leases, l)
			t.Errorf("round %d: Acquire through the partitioned %s got slot %d", round, x.Name, l.Slot)
		} else if !errors.Is(err, store.ErrUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("round %d: Acquire through the partitioned %s: %v; want ErrUnavailable or the deadline", round, x.Name, err)
		}
		if took > callWait+slack {
			t.Errorf("round %d: Acquire through the partitioned %s took %v", round, x.Name, took)
		}
		t.Logf("round %d: Acquire through %s: %v after %v", round, x.Name, err, took.Round(time.Millisecond))
		// Meanwhile the others go on (after an election, if x led).
		poll.Succeeds(t, bound, "Next on the others", func() error { return next(maj) })
		poll.Succeeds(t, bound, "Acquire on the others", func() error { return acquire(maj, fmt.Sprintf("maj%d", round)) })
		for range 3 {
			if err := next(maj); err != nil {
				t.Fatalf("round %d: Next on the others: %v", round, err)
			}
		}

		c.Heal()
		poll.Succeeds(t, bound, "Next through the healed "+x.Name, func() error { return next(xs) })
		poll.Succeeds(t, bound, "Acquire through the healed "+x.Name, func() error { return acquire(xs, fmt.Sprintf("x%d", round)) })
		for _, st := range []*store.Store{quiet, xs, maj} {
			if err := next(st); err != nil {
				t.Fatalf("round %d: Next after healing: %v", round, err)
			}
		}
	}

	sort.Slice(ranges, func(i, j int) bool { return ranges[i].Start < ranges[j].Start })
	for i := 1; i < len(ranges); i++ {
		if ranges[i].Start < ranges[i-1].End {
			t.Errorf("values handed out twice: %v and %v", ranges[i-1], ranges[i])
		}
	}
	for i, a := range leases {
		for _, b := range leases[i+1:] {
			if a.Slot == b.Slot && (a.Fence == b.Fence || (a.Floor < b.Ceiling && b.Floor < a.Ceiling)) {
				t.Errorf("slot %d handed out twice: to %s (fence %d, [%d,%d)) and %s (fence %d, [%d,%d))",
					a.Slot, a.Owner, a.Fence, a.Floor, a.Ceiling, b.Owner, b.Fence, b.Floor, b.Ceiling)
			}
		}
	}
	t.Logf("%d ranges, %d slot terms checked", len(ranges), len(leases))
}
