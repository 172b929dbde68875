package etcd

import (
	"errors"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
)

// TestPurgeFastClock: a purge judges "a term may still issue" on its own
// host's clock. A purging host 3 minutes ahead takes a live term (3s ttl,
// renewed) for one past its ceiling and deletes it; the next term of the
// slot, taken by a host with the right time, must still start at or above
// the live term's ceiling (the purge keeps the floor), and the live term's
// Renew fails. Likewise for a term released by a host 3 minutes ahead and
// purged by a host 4 minutes ahead: the next term after the purge starts
// above what it used.
func TestPurgeFastClock(t *testing.T) {
	ctx := t.Context()
	ns := driver.Namespace{Name: "n", Limit: 1, Tolerance: time.Second}
	req := func(owner string) driver.AcquireRequest {
		return driver.AcquireRequest{Namespace: ns, Owner: owner, Incarnation: owner, TTL: 3 * time.Second}
	}
	t.Run("Live", func(t *testing.T) {
		prefix := freshPrefix("purgefast")
		holder, purger := openShifted(t, prefix, 0), openShifted(t, prefix, 3*time.Minute)
		l, err := holder.Acquire(ctx, req("a"))
		if err != nil {
			t.Fatal(err)
		}
		if l, err = holder.Renew(ctx, l); err != nil {
			t.Fatal(err)
		}
		if _, err := purger.Purge(ctx); err != nil {
			if errors.Is(err, driver.ErrLocked) {
				return // refused: the term is safe
			}
			t.Fatal(err)
		}
		l2, err := openShifted(t, prefix, 0).Acquire(ctx, req("b"))
		if err != nil {
			t.Fatal(err)
		}
		if l2.Floor < l.Ceiling {
			t.Errorf("after a purge by a host 3 minutes ahead, the next term's window [%d, %d) overlaps the live term's [%d, %d)",
				l2.Floor, l2.Ceiling, l.Floor, l.Ceiling)
		}
		if l2.Fence <= l.Fence {
			t.Errorf("fence %d after the purge, not above %d", l2.Fence, l.Fence)
		}
		if _, err := holder.Renew(ctx, l); !errors.Is(err, driver.ErrLeaseLost) {
			t.Errorf("the purged term's Renew: %v; want ErrLeaseLost", err)
		}
	})
	t.Run("Released", func(t *testing.T) {
		prefix := freshPrefix("purgefastrel")
		fast := openShifted(t, prefix, 3*time.Minute)
		l, err := fast.Acquire(ctx, req("a"))
		if err != nil {
			t.Fatal(err)
		}
		used := time.Now().Add(3 * time.Minute).UnixMilli()
		if err := fast.Release(ctx, l, used); err != nil {
			t.Fatal(err)
		}
		// A purge on the right clock refuses: the next floor is ahead of
		// it (driver.Purger). A host further ahead takes it for past.
		right := openShifted(t, prefix, 0)
		if _, err := right.Purge(ctx); !errors.Is(err, driver.ErrLocked) {
			t.Fatalf("Purge with a next floor 3 minutes ahead: %v, want ErrLocked", err)
		}
		if _, err := openShifted(t, prefix, 4*time.Minute).Purge(ctx); err != nil {
			t.Fatal(err)
		}
		l2, err := right.Acquire(ctx, req("b"))
		if err != nil {
			t.Fatal(err)
		}
		if l2.Floor <= used {
			t.Errorf("after a purge, the next term's floor %d is not above %d, used by a released term", l2.Floor, used)
		}
	})
}

// TestPurgedKeyFormats: the purged key as an older driver wrote it (the
// fence floor alone) still reads, the floor at 0; a second line that is
// not a slot floor is ErrCorrupt, not guessed.
func TestPurgedKeyFormats(t *testing.T) {
	ctx := t.Context()
	ns := driver.Namespace{Name: "n", Limit: 1, Tolerance: time.Second}
	req := driver.AcquireRequest{Namespace: ns, Owner: "o", Incarnation: "i", TTL: time.Minute}
	for _, tc := range []struct {
		value        string
		fence, floor int64
	}{
		{"slot_fence_floor=7", 8, 0},
		{"slot_fence_floor=7\nslot_floor=1234", 8, 1234},
		{"slot_fence_floor=7\nslot_floor=-1", 0, 0},
		{"slot_fence_floor=7\nfloor=12", 0, 0},
		{"slot_fence_floor=7\nslot_floor=12\n", 0, 0},
	} {
		prefix := freshPrefix("purgedfmt")
		s := openShifted(t, prefix, 0)
		if _, err := rawClient(t).Put(ctx, prefix+"/purged", tc.value); err != nil {
			t.Fatal(err)
		}
		l, err := s.Acquire(ctx, req)
		if tc.fence == 0 {
			if !errors.Is(err, driver.ErrCorrupt) {
				t.Errorf("purged key %q: Acquire = %+v, %v; want ErrCorrupt", tc.value, l, err)
			}
			continue
		}
		if err != nil || l.Fence != tc.fence || l.Floor != tc.floor {
			t.Errorf("purged key %q: Acquire = fence %d, floor %d, %v; want fence %d, floor %d", tc.value, l.Fence, l.Floor, err, tc.fence, tc.floor)
		}
	}
}
