package etcd

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/netproxy"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// This file: with one member, a read is not cut by its attempt deadline
// (attempts.go, awaitRead): its answer is waited for. With several, it is
// cut and sent to the next.

// firstRead reports, once, whether req is a read (a Txn without compares).
func firstRead(req any, seen *atomic.Bool) bool {
	tr, ok := req.(*pb.TxnRequest)
	return ok && len(tr.Compare) == 0 && seen.CompareAndSwap(false, true)
}

// holdFirstRead holds the answer of the store's first read until release
// closes.
func holdFirstRead(release <-chan struct{}, held *atomic.Bool) func(*driverStore) {
	return func(d *driverStore) {
		d.heldRead = func(req any) <-chan struct{} {
			if !firstRead(req, held) {
				return nil
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

// TestReadCutWithTwoMembers: with two endpoints (here one member,
// reached directly and through a proxy), a read whose answer comes after
// its attempt deadline (a frozen member) is cut, and clientv3 sends it
// again, to the next: the acquire holds its slot, as listed.
func TestReadCutWithTwoMembers(t *testing.T) {
	ctx := t.Context()
	ep := sharedServer(t).Endpoints()[0]
	proxy := netproxy.New(t, strings.TrimPrefix(ep, "http://"))
	var held atomic.Bool
	c := &txnCounter{}
	prefix := made(t, freshPrefix("readcut"))
	a := rawdriver.Of(openDriverOn(t, []string{ep, proxy.Addr()}, prefix, func(d *driverStore) {
		c.set(d)
		d.lateAnswer = func(req any) bool { return firstRead(req, &held) }
	})).(*driverStore)
	ns := driver.Namespace{Name: "n", Limit: 8, Tolerance: time.Second}
	l, err := a.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "i", TTL: time.Minute, Preferred: -1})
	if err != nil {
		t.Fatal(err)
	}
	if !held.Load() {
		t.Fatal("no read came late")
	}
	if r, w, f := c.reads.Load(), c.writes.Load(), c.failed.Load(); r != 2 || w != 1 || f != 1 {
		t.Errorf("Acquire with its first read answered late: %d reads, %d writes, %d failed; want 2, 1, 1 (the read cut and sent again)", r, w, f)
	}
	infos, err := a.Slots(ctx, "n")
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].Slot != l.Slot || infos[0].Owner != "a" || infos[0].Fence != l.Fence {
		t.Errorf("slots listed %+v; the lease is slot %d fence %d", infos, l.Slot, l.Fence)
	}
}
