package etcd

import (
	"errors"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/poll"
)

// TestLockCorruptOffsetLeavesNoKey: a Lock whose create lands but reads a
// corrupt lock_fence_offset (edited by hand) fails with ErrCorrupt and
// leaves no waiter key: once the key is repaired, another store takes the
// lock (the key would otherwise sit on the store's live session, renewed
// for as long as it runs), and the store's next Lock of the name does not
// find a key of its own in the way (which abandons its session and loses
// its other holds).
func TestLockCorruptOffsetLeavesNoKey(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("corrupt-offset")
	a, b := openPair(t, prefix)
	other, err := a.Locks().Lock(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	cli := rawClient(t)
	if _, err := cli.Put(ctx, prefix+"/lock_fence_offset", "garbage"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Locks().TryLock(ctx, "x"); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("TryLock with a corrupt fence offset: %v, want ErrCorrupt", err)
	}
	if _, err := cli.Delete(ctx, prefix+"/lock_fence_offset"); err != nil {
		t.Fatal(err)
	}
	// The removal may run in the background; the session lasts 60s.
	poll.Until(t, 10*time.Second, "no key of lock x left", func() bool {
		_, err := a.Locks().Waiters(ctx, "x")
		return errors.Is(err, store.ErrNotFound)
	})
	l, err := b.Locks().TryLock(ctx, "x")
	if err != nil {
		t.Fatalf("another store's TryLock once the offset was repaired: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l, err = a.Locks().TryLock(ctx, "x")
	if err != nil {
		t.Fatalf("the store's own TryLock once the offset was repaired: %v", err)
	}
	select {
	case <-other.Lost():
		t.Fatalf("the store's hold of another lock was lost: %v", other.Unlock(ctx))
	default:
	}
	if err := l.Unlock(ctx); err != nil {
		t.Error(err)
	}
	if err := other.Unlock(ctx); err != nil {
		t.Error(err)
	}
}

// TestLockOffsetWrittenBack: lock_fence_offset restored from before a
// RaiseLockFences (a snapshot taken before it, or by hand) is below the
// offset the store read: the fences it grants would go back below those
// granted after the raise, revisions do not make up for it. The store's
// next Lock is refused (ErrCorrupt), of any name, until the fences are
// raised again.
func TestLockOffsetWrittenBack(t *testing.T) {
	ctx := t.Context()
	prefix := freshPrefix("offset-back")
	a, _ := openPair(t, prefix)
	l, err := a.Locks().TryLock(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	floor := l.Fence() + 1_000_000
	if err := a.Locks().RaiseFences(ctx, floor); err != nil {
		t.Fatal(err)
	}
	if l, err = a.Locks().TryLock(ctx, "job"); err != nil {
		t.Fatal(err)
	}
	raised := l.Fence()
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// As before the raise: no offset key.
	if _, err := rawClient(t).Delete(ctx, prefix+"/lock_fence_offset"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"job", "other"} {
		l, err := a.Locks().TryLock(ctx, name)
		if err == nil {
			if l.Fence() <= raised {
				t.Errorf("TryLock(%q) after lock_fence_offset went back to before RaiseLockFences(%d): fence %d, not above %d granted after it",
					name, floor, l.Fence(), raised)
			}
			_ = l.Unlock(ctx)
			continue
		}
		if !errors.Is(err, store.ErrCorrupt) {
			t.Errorf("TryLock(%q) after lock_fence_offset went back: %v, want ErrCorrupt", name, err)
		}
	}
	// storectl restore raises the fences again.
	if err := a.Locks().RaiseFences(ctx, raised+1_000); err != nil {
		t.Fatal(err)
	}
	if l, err = a.Locks().TryLock(ctx, "job"); err != nil {
		t.Fatalf("TryLock after the fences were raised again: %v", err)
	}
	if l.Fence() <= raised+1_000 {
		t.Errorf("TryLock after RaiseLockFences(%d): fence %d", raised+1_000, l.Fence())
	}
	_ = l.Unlock(ctx)
}
