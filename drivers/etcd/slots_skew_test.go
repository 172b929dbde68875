package etcd

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/poll"
)

// openShifted opens a driver store on prefix whose slot clock is the
// host's shifted by shift.
func openShifted(t *testing.T, prefix string, shift time.Duration) *driverStore {
	t.Helper()
	cfg, err := parseOptions(map[string]string{"endpoints": sharedServer(t).Endpoints()[0], "prefix": prefix})
	if err != nil {
		t.Fatal(err)
	}
	s := newStore(cfg, nil)
	s.now = func() int64 { return time.Now().Add(shift).UnixMilli() }
	if err := s.Connect(t.Context()); err != nil {
		s.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestSlotSkewedClocks: one slot, two stores whose clocks differ by far
// more than the tolerance, each way round. The store ahead takes the
// other's live term over (to it, expired); the new term's timestamps
// start at or above every timestamp the old holder may issue (its
// ceiling, as its last renewal told it), and the old holder's renewal
// fails with ErrLeaseLost.
func TestSlotSkewedClocks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		holder time.Duration // the holder's clock shift; the taker's is 0
	}{{"HolderBehind", -5 * time.Second}, {"HolderAhead", 5 * time.Second}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			prefix := freshPrefix("skew")
			holder := openShifted(t, prefix, tc.holder)
			taker := openShifted(t, prefix, 0)
			ns := driver.Namespace{Name: "n", Limit: 1, Tolerance: time.Second}
			req := func(owner string) driver.AcquireRequest {
				return driver.AcquireRequest{Namespace: ns, Owner: owner, Incarnation: owner + "-1", TTL: 3 * time.Second}
			}
			l, err := holder.Acquire(ctx, req("a"))
			if err != nil {
				t.Fatal(err)
			}
			if l, err = holder.Renew(ctx, l); err != nil {
				t.Fatal(err)
			}
			// The taker polls until it gets the slot (at once when the
			// holder is behind; after the holder's term ends in the
			// taker's time when it is ahead).
			var l2 driver.Lease
			poll.Succeeds(t, 60*time.Second, "the taker's Acquire", func() error {
				l2, err = taker.Acquire(ctx, req("b"))
				if err != nil && !errors.Is(err, driver.ErrExhausted) {
					t.Fatalf("the taker's Acquire: %v", err)
				}
				return err
			})
			if l2.Floor < l.Ceiling {
				t.Errorf("new term's floor %d is below the old term's ceiling %d: timestamps [%d,%d) and [%d,%d) overlap",
					l2.Floor, l.Ceiling, l.Floor, l.Ceiling, l2.Floor, l2.Ceiling)
			}
			if l2.Fence <= l.Fence {
				t.Errorf("new fence %d not above %d", l2.Fence, l.Fence)
			}
			if _, err := holder.Renew(ctx, l); !errors.Is(err, driver.ErrLeaseLost) {
				t.Errorf("the old holder's Renew after the takeover: %v; want ErrLeaseLost", err)
			}
		})
	}
}

// TestAcquireExhaustedCreatesNamespace: after a purge whose fence floor is
// at its end, no slot can be taken; an Acquire still creates its missing
// namespace, so the next one with other settings is ErrConfigMismatch.
func TestAcquireExhaustedCreatesNamespace(t *testing.T) {
	ctx := t.Context()
	s := openShifted(t, freshPrefix("exhausted-ns"), 0)
	if err := s.SeedSlot(ctx, driver.Namespace{Name: "n", Limit: 1}, 0, math.MaxInt64, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	req := driver.AcquireRequest{Namespace: driver.Namespace{Name: "m", Limit: 2}, Owner: "o", Incarnation: "i", TTL: time.Second}
	if _, err := s.Acquire(ctx, req); !errors.Is(err, driver.ErrExhausted) {
		t.Fatalf("Acquire above a purged MaxInt64 fence: %v; want ErrExhausted", err)
	}
	req.Namespace.Limit = 3
	if _, err := s.Acquire(ctx, req); !errors.Is(err, driver.ErrConfigMismatch) {
		t.Fatalf("Acquire with another limit: %v; want ErrConfigMismatch", err)
	}
}
