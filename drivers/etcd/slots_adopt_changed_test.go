package etcd

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
)

// TestAdoptRefusesChangedNamespace: between the read that found a
// namespace missing and the write of a term in it, another store creates
// it otherwise (sealed, other settings) or creates, uses and purges it:
// the write adopts none of them, the acquire fails as one after the
// change would, and a slot after a purge starts above its old term.
func TestAdoptRefusesChangedNamespace(t *testing.T) {
	ns := driver.Namespace{Name: "n", Limit: 8, Tolerance: time.Second}
	req := func(owner string) driver.AcquireRequest {
		return driver.AcquireRequest{Namespace: ns, Owner: owner, Incarnation: "i", TTL: time.Minute, Preferred: 0}
	}
	for _, tc := range []struct {
		name    string
		between func(ctx context.Context, b *driverStore) (driver.Lease, error)
		want    error // nil: a lease
	}{
		{"created then sealed", func(ctx context.Context, b *driverStore) (driver.Lease, error) {
			l, err := b.Acquire(ctx, req("b"))
			if err == nil {
				err = b.SealNamespace(ctx, "n")
			}
			return l, err
		}, driver.ErrSealed},
		{"sealed while missing", func(ctx context.Context, b *driverStore) (driver.Lease, error) {
			return driver.Lease{}, b.SealNamespace(ctx, "n")
		}, driver.ErrSealed},
		{"other settings", func(ctx context.Context, b *driverStore) (driver.Lease, error) {
			other := ns
			other.Limit = 4
			return b.Acquire(ctx, driver.AcquireRequest{Namespace: other, Owner: "b", Incarnation: "i", TTL: time.Minute, Preferred: 0})
		}, driver.ErrConfigMismatch},
		{"created, used, purged", func(ctx context.Context, b *driverStore) (driver.Lease, error) {
			l, err := b.Acquire(ctx, req("b"))
			if err == nil {
				err = b.Release(ctx, l, l.Floor+5)
			}
			if err == nil {
				_, err = b.Purge(ctx)
			}
			return l, err
		}, nil},
		{"purged, recreated same", func(ctx context.Context, b *driverStore) (driver.Lease, error) {
			l, err := b.Acquire(ctx, req("b"))
			if err == nil {
				err = b.Release(ctx, l, l.Floor+5)
			}
			if err == nil {
				_, err = b.Purge(ctx)
			}
			if err == nil {
				var l2 driver.Lease
				l2, err = b.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "c", Incarnation: "i", TTL: time.Minute, Preferred: 1})
				_ = l2
			}
			return l, err
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			prefix := freshPrefix("adoptchanged")
			b := openBeforeTxn(t, prefix, new(atomic.Bool), 0, func() {})
			var armed atomic.Bool
			armed.Store(true)
			var lb driver.Lease
			var errB error
			var ran bool
			a := openBeforeTxn(t, prefix, &armed, 2, func() { ran = true; lb, errB = tc.between(ctx, b) })
			la, err := a.Acquire(ctx, req("a"))
			if !ran {
				t.Fatal("nothing ran between a's read and its write")
			}
			if errB != nil {
				t.Fatalf("between: %v", errB)
			}
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("Acquire: %+v, %v; want %v", la, err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if la.Slot == lb.Slot && (la.Fence <= lb.Fence || la.Floor < lb.Floor+5) {
				t.Fatalf("slot %d again after a purge: fence %d floor %d, old fence %d, used up to %d", la.Slot, la.Fence, la.Floor, lb.Fence, lb.Floor+5)
			}
			t.Logf("a %d fence %d floor %d; b %d fence %d ceiling %d", la.Slot, la.Fence, la.Floor, lb.Slot, lb.Fence, lb.Ceiling)
		})
	}
}
