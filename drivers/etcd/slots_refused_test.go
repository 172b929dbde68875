package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"google.golang.org/grpc"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// This file: what an acquire's term write does when it is refused (its
// compares failed): it reads the slots its search tries next, and finds
// its own term when an attempt of the same write, cut by its deadline,
// was applied.

// txnCounter counts a store's Txn round trips, reads and writes (a
// transaction with compares).
type txnCounter struct {
	reads, writes atomic.Int64
	failed        atomic.Int64 // round trips that failed (a cut among them)
}

// set adds the counter to the store's interceptors.
func (c *txnCounter) set(d *driverStore) {
	d.dialOpt = append(d.dialOpt, grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any,
		cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if tr, ok := req.(*pb.TxnRequest); ok && strings.HasSuffix(method, "/Txn") {
			if len(tr.Compare) > 0 {
				c.writes.Add(1)
			} else {
				c.reads.Add(1)
			}
		}
		err := invoker(ctx, method, req, reply, cc, opts...)
		if err != nil {
			c.failed.Add(1)
		}
		return err
	}))
}

// refusedSetup opens stores a (counted; once armed, its second
// transaction, the first write, is preceded by hook: beforeTxn) and b on
// a fresh prefix, and returns the slot a's search starts at in namespace
// ns.
func refusedSetup(t *testing.T, ns driver.Namespace, hook func(b *driverStore)) (a, b *driverStore, c *txnCounter, armed *atomic.Bool, s0 int) {
	prefix := freshPrefix("refused")
	b = rawdriver.Of(openDriver(t, prefix, func(*driverStore) {})).(*driverStore)
	c, armed = &txnCounter{}, new(atomic.Bool)
	a = rawdriver.Of(openDriver(t, prefix, func(d *driverStore) {
		interceptCalls(beforeTxn(armed, 2, func() { hook(b) }))(d)
		c.set(d)
	})).(*driverStore)
	return a, b, c, armed, driver.SearchStart("a", "i", ns.Limit)
}

func acquireAt(ctx context.Context, t *testing.T, s *driverStore, ns driver.Namespace, owner string, slot int) driver.Lease {
	t.Helper()
	l, err := s.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: owner, Incarnation: "i", TTL: time.Minute, Preferred: slot})
	if err != nil || l.Slot != slot {
		t.Fatalf("%s's Acquire of slot %d: %+v, %v", owner, slot, l, err)
	}
	return l
}

// TestAcquireRefusedReadsAhead: between a's read (the slots its search
// starts at, free) and its write, other owners take the first three of
// them. Its refused write reads the next ones, so it writes once more,
// for the fourth, rather than once for each slot it had found free.
func TestAcquireRefusedReadsAhead(t *testing.T) {
	ctx := t.Context()
	ns := driver.Namespace{Name: "n", Limit: 16, Tolerance: time.Second}
	var s0 int
	a, b, c, armed, s0 := refusedSetup(t, ns, func(b *driverStore) {
		for i := range 3 {
			acquireAt(ctx, t, b, ns, fmt.Sprint("b", i), (s0+i)%ns.Limit)
		}
	})
	acquireAt(ctx, t, b, ns, "c", (s0+8)%ns.Limit) // the namespace exists: a's read sees its slots
	armed.Store(true)
	l, err := a.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "i", TTL: time.Minute, Preferred: -1})
	if err != nil {
		t.Fatal(err)
	}
	if want := (s0 + 3) % ns.Limit; l.Slot != want {
		t.Errorf("a holds slot %d, want %d (the first free after its start)", l.Slot, want)
	}
	if r, w := c.reads.Load(), c.writes.Load(); r != 1 || w != 2 {
		t.Errorf("a's acquire: %d reads, %d writes; want 1 and 2 (the refused write read ahead)", r, w)
	}
	infos, err := a.Slots(ctx, "n")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		if in.Owner != "" && in.Fence != 1 {
			t.Errorf("slot %d (%s): fence %d, want 1", in.Slot, in.Owner, in.Fence)
		}
	}
}

// TestAcquireRefusedSeesHole: between a's read and its write, b takes
// a's first slot and an operator deletes the key of its next one (used
// and released before). a's refused write reads that slot missing, and
// with it the tally, which tells a key was deleted: a does not start that
// slot again at fence 1 (a term of its old fence could still issue).
func TestAcquireRefusedSeesHole(t *testing.T) {
	ctx := t.Context()
	ns := driver.Namespace{Name: "n", Limit: 16, Tolerance: time.Second}
	var s0 int
	var ran bool
	a, b, _, armed, s0 := refusedSetup(t, ns, func(b *driverStore) {
		ran = true
		acquireAt(ctx, t, b, ns, "b", s0)
		if _, err := b.cli.Delete(ctx, b.slotKey("n", (s0+1)%ns.Limit)); err != nil {
			t.Fatal(err)
		}
	})
	old := acquireAt(ctx, t, b, ns, "c", (s0+1)%ns.Limit)
	if err := b.Release(ctx, old, old.Floor); err != nil {
		t.Fatal(err)
	}
	armed.Store(true)
	l, err := a.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "i", TTL: time.Minute, Preferred: -1})
	if !ran {
		t.Fatal("the hook did not run")
	}
	if err == nil && l.Slot == old.Slot {
		t.Fatalf("a took slot %d, whose key was deleted, at fence %d (its old term's fence was %d)", l.Slot, l.Fence, old.Fence)
	}
	if err != nil && !errors.Is(err, driver.ErrCorrupt) {
		t.Fatalf("Acquire: %v; want a slot other than %d, or ErrCorrupt", err, old.Slot)
	}
}

// TestAcquireCutWriteLanded: a's term write is applied, but its answer
// comes after the attempt deadline; clientv3 sends it again, and the
// resend is refused, as the first one changed what it compares. The
// refusal shows a's own term: that is the lease, without another read.
// When b sealed the namespace in between, the acquire fails ErrSealed.
func TestAcquireCutWriteLanded(t *testing.T) {
	for _, seal := range []bool{false, true} {
		t.Run(fmt.Sprintf("sealed=%v", seal), func(t *testing.T) {
			ctx := t.Context()
			ns := driver.Namespace{Name: "n", Limit: 16, Tolerance: time.Second}
			prefix := freshPrefix("cutlanded")
			b := rawdriver.Of(openDriver(t, prefix, func(*driverStore) {})).(*driverStore)
			acquireAt(ctx, t, b, ns, "b", 0)
			c := &txnCounter{}
			var late atomic.Bool
			late.Store(true)
			a := rawdriver.Of(openDriver(t, prefix, func(d *driverStore) {
				c.set(d)
				d.lateAnswer = func(req any) bool {
					tr, ok := req.(*pb.TxnRequest)
					if !ok || len(tr.Compare) == 0 || !late.CompareAndSwap(true, false) {
						return false
					}
					if seal {
						if err := b.SealNamespace(ctx, "n"); err != nil {
							t.Error(err)
						}
					}
					return true
				}
			})).(*driverStore)
			l, err := a.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "i", TTL: time.Minute, Preferred: -1})
			if late.Load() {
				t.Fatal("no answer came late")
			}
			if seal {
				if !errors.Is(err, driver.ErrSealed) {
					t.Fatalf("Acquire after its write landed and a seal: %+v, %v; want ErrSealed", l, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r, w := c.reads.Load(), c.writes.Load(); r != 1 || w != 2 {
				t.Errorf("a's acquire: %d reads, %d writes; want 1 and 2 (the write, cut, and its resend)", r, w)
			}
			infos, err := a.Slots(ctx, "n")
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range infos {
				if in.Slot == l.Slot && (in.Owner != "a" || in.Incarnation != "i" || in.Fence != l.Fence) {
					t.Errorf("slot %d holds %s/%s fence %d; the lease says a/i fence %d", in.Slot, in.Owner, in.Incarnation, in.Fence, l.Fence)
				}
			}
		})
	}
}
