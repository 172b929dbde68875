package etcd

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/netproxy"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// This file: a read is not cut by its attempt deadline (attempts.go,
// hedgeRead). Its answer is waited for; past the deadline, with another
// member to send it to, it is sent again beside the first.

// holdFirstRead holds the answer of the store's first read attempt (a
// Txn without compares) until release closes; nil: until another attempt
// answers.
func holdFirstRead(release <-chan struct{}, held *atomic.Bool) func(*driverStore) {
	return func(d *driverStore) {
		d.heldRead = func(req any) <-chan struct{} {
			if tr, ok := req.(*pb.TxnRequest); !ok || len(tr.Compare) > 0 || !held.CompareAndSwap(false, true) {
				return nil
			}
			if release == nil {
				return make(chan struct{}) // never: a frozen member
			}
			return release
		}
	}
}

// made returns prefix once another store has made the store there (its
// metadata key, which a store's first write makes otherwise).
func made(t *testing.T, prefix string) string {
	b := rawdriver.Of(openPlain(t, prefix)).(*driverStore)
	acquireAt(t.Context(), t, b, driver.Namespace{Name: "m", Limit: 1}, "b", 0)
	return prefix
}

// TestReadLateNotResent: with one member, a read answered after its
// attempt deadline is waited for, not cut and sent again into the same
// member's queue (a fleet's thousand acquires each resent their reads).
func TestReadLateNotResent(t *testing.T) {
	ctx := t.Context()
	release := make(chan struct{})
	var held atomic.Bool
	c := &txnCounter{}
	prefix := made(t, freshPrefix("readlate"))
	a := rawdriver.Of(openDriver(t, prefix, func(d *driverStore) {
		c.set(d)
		holdFirstRead(release, &held)(d)
	})).(*driverStore)
	// Its answer comes at three times the attempt deadline (a fault the
	// test puts on the answer, not a wait for anything).
	time.AfterFunc(3*a.latency.deadline(), func() { close(release) })
	ns := driver.Namespace{Name: "n", Limit: 8, Tolerance: time.Second}
	l, err := a.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "i", TTL: time.Minute, Preferred: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !held.Load() {
		t.Fatal("no read was held")
	}
	if r, w, f := c.reads.Load(), c.writes.Load(), c.failed.Load(); r != 1 || w != 1 || f != 0 {
		t.Errorf("Acquire with its read answered late: %d reads, %d writes, %d failed; want 1, 1, 0 (the read waited for)", r, w, f)
	}
	t.Logf("slot %d; attempt deadline now %v", l.Slot, a.latency.deadline())
}

// TestReadHedgedPastFrozen: with two members (here one member, reached
// directly and through a proxy), a read whose first attempt is never
// answered (a frozen member) is sent again past its deadline, and the
// second attempt's answer is the call's: the acquire holds its slot, as
// listed, from one read and one write.
func TestReadHedgedPastFrozen(t *testing.T) {
	ctx := t.Context()
	ep := sharedServer(t).Endpoints()[0]
	proxy := netproxy.New(t, strings.TrimPrefix(ep, "http://"))
	var held atomic.Bool
	c := &txnCounter{}
	prefix := made(t, freshPrefix("readhedge"))
	a := rawdriver.Of(openDriverOn(t, []string{ep, proxy.Addr()}, prefix, func(d *driverStore) {
		c.set(d)
		holdFirstRead(nil, &held)(d)
	})).(*driverStore)
	ns := driver.Namespace{Name: "n", Limit: 8, Tolerance: time.Second}
	bounded, cancel := context.WithTimeout(ctx, 30*time.Second) // never sent again: it would wait for ever
	defer cancel()
	l, err := a.Acquire(bounded, driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "i", TTL: time.Minute, Preferred: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !held.Load() {
		t.Fatal("no read was held")
	}
	if r, w, f := c.reads.Load(), c.writes.Load(), c.failed.Load(); r != 1 || w != 1 || f != 0 {
		t.Errorf("Acquire with its first read attempt frozen: %d reads, %d writes, %d failed; want 1, 1, 0", r, w, f)
	}
	infos, err := a.Slots(ctx, "n")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].Slot != l.Slot || infos[0].Owner != "a" || infos[0].Fence != l.Fence {
		t.Errorf("slots listed %+v; the lease is slot %d fence %d", infos, l.Slot, l.Fence)
	}
}
