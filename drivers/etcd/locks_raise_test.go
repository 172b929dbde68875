package etcd

import "testing"

// TestLockFenceAboveRaiseWhileQueued: a waiter queued before
// RaiseLockFences(floor) and granted after it gets a fence above floor
// (driver.LockSealer: every fence handed out later is above it; the
// locks' holders elsewhere had fences up to it), the fence Waiters showed
// for it after the raise.
func TestLockFenceAboveRaiseWhileQueued(t *testing.T) {
	ctx := t.Context()
	holder, waiter := openPair(t, freshPrefix("raisequeued"))
	h, got := holdAndQueue(t, holder, waiter, "x")
	floor := h.Fence() + 1_000_000
	if err := holder.Locks().RaiseFences(ctx, floor); err != nil {
		t.Fatal(err)
	}
	ws, err := holder.Locks().Waiters(ctx, "x")
	if err != nil || len(ws) != 2 {
		t.Fatalf("Waiters: %v, %v", ws, err)
	}
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := awaitLock(t, got)
	if r.err != nil {
		t.Fatalf("the waiter's Lock: %v", r.err)
	}
	if r.l.Fence() <= floor {
		t.Errorf("a waiter queued before RaiseLockFences(%d) was granted after it with fence %d", floor, r.l.Fence())
	}
	if r.l.Fence() != ws[1].Fence {
		t.Errorf("granted fence %d, Waiters said %d", r.l.Fence(), ws[1].Fence)
	}
	if err := r.l.Unlock(ctx); err != nil {
		t.Error(err)
	}
}
