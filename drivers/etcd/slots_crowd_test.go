package etcd

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// TestAcquireAdoptsNamespaceCreatedMeanwhile: a fleet's acquirers all find
// a new namespace missing, and all but one lost the write that created it,
// and started over. A write in a namespace found missing now takes its
// slot in one created meanwhile as it would have made it (unsealed, same
// settings): one read, one write. Both hold a slot, one term each.
func TestAcquireAdoptsNamespaceCreatedMeanwhile(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("adopt")
	ns := driver.Namespace{Name: "n", Limit: 8, Tolerance: time.Second}
	// Owners whose searches start at different slots.
	other := "b"
	for i := 0; driver.SearchStart(other, "i", ns.Limit) == driver.SearchStart("a", "i", ns.Limit); i++ {
		other = "b" + strings.Repeat("x", i)
	}
	b := rawdriver.Of(openDriver(t, prefix, func(*driverStore) {})).(*driverStore)
	var txns atomic.Int64
	var lb driver.Lease
	var errB error
	a := rawdriver.Of(openDriver(t, prefix, func(d *driverStore) {
		d.dialOpt = []grpc.DialOption{grpc.WithChainUnaryInterceptor(func(ictx context.Context, method string, req, reply any,
			cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			if strings.HasSuffix(method, "/Txn") && txns.Add(1) == 2 {
				// a read the namespace missing; b creates it first.
				lb, errB = b.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: other, Incarnation: "i", TTL: time.Minute, Preferred: -1})
			}
			return invoker(ictx, method, req, reply, cc, opts...)
		})}
	})).(*driverStore)
	la, err := a.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "i", TTL: time.Minute, Preferred: -1})
	if err != nil || errB != nil {
		t.Fatalf("Acquire: a %v, b %v", err, errB)
	}
	if la.Slot == lb.Slot {
		t.Fatalf("slot %d given to both", la.Slot)
	}
	if n := txns.Load(); n != 2 {
		t.Errorf("a's acquire made %d transactions, want 2 (its read and its write)", n)
	}
	infos, err := a.Slots(ctx, "n")
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]int{}
	for _, in := range infos {
		if in.Owner != "" {
			held[in.Owner] = in.Slot
			if in.Fence != 1 {
				t.Errorf("slot %d: fence %d, want 1 (one term)", in.Slot, in.Fence)
			}
		}
	}
	if len(held) != 2 || held["a"] != la.Slot || held[other] != lb.Slot {
		t.Errorf("slots held: %v, want a on %d and %s on %d", held, la.Slot, other, lb.Slot)
	}
}
