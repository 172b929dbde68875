package zookeeper

import (
	"errors"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestWrittenBack: a node written back from a copy under a running store
// that saw it further ahead is refused (ErrCorrupt), in the cases the TCK's
// Operator/Restore* checks do not reach: a fence is not all the guard
// compares (slot_guard.go).
func TestWrittenBack(t *testing.T) {
	onEachVersion(t, func(_ *zktest.Server) []serverCheck {
		return []serverCheck{
			{"SealedKey", testWrittenBackSealedKey},
			{"ReleasedTerm", testWrittenBackReleasedTerm},
			{"RenewedTerm", testWrittenBackRenewedTerm},
			{"RaisedLockRoot", testWrittenBackRaisedLockRoot},
		}
	})
}

// testWrittenBackSealedKey: a key sealed (moved to another store) and
// written back unsealed at the same value would hand out the values the
// other store now hands out.
func testWrittenBackSealedKey(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	ctx := t.Context()
	if _, err := s.Next(ctx, "k", 10); err != nil {
		t.Fatal(err)
	}
	conn := rawConn(t, addr)
	path := s.rangePath("k")
	data, _, err := conn.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Seal(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set(path, data, -1); err != nil {
		t.Fatal(err)
	}
	start, err := s.Next(ctx, "k", 10)
	wantIs(t, err, driver.ErrCorrupt, "Next of a sealed key written back unsealed (got start %d)", start)
}

// testWrittenBackReleasedTerm: a term the store released, written back
// live, is not given back to the same owner and incarnation with the
// floor it had: its timestamps were issued.
func testWrittenBackReleasedTerm(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	ns := driver.Namespace{Name: "back", Limit: 1, Tolerance: time.Second}
	req := slotRequest(ns, "a", "1")
	l := mustAcquire(t, s, req)
	conn := rawConn(t, addr)
	path := s.slotPath(ns.Name, l.Slot)
	data, _, err := conn.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(t.Context(), l, l.Floor+1000); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set(path, data, -1); err != nil {
		t.Fatal(err)
	}
	again, err := s.Acquire(t.Context(), req)
	if err == nil {
		t.Fatalf("a released term written back was given again: fence %d, floor %d (released having used up to %d)",
			again.Fence, again.Floor, l.Floor+1000)
	}
	wantIs(t, err, driver.ErrCorrupt, "Acquire of a slot whose released term was written back live")
}

// testWrittenBackRenewedTerm: a term written back as it was before its
// renewal has a lower ceiling_min than the store saw: its Renew is refused
// (after a restore of the ensemble the mtime goes back too, and the term's
// ceiling with it).
func testWrittenBackRenewedTerm(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	ns := driver.Namespace{Name: "back", Limit: 1, Tolerance: time.Second}
	l := mustAcquire(t, s, slotRequest(ns, "a", "1"))
	conn := rawConn(t, addr)
	path := s.slotPath(ns.Name, l.Slot)
	data, _, err := conn.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err = s.Renew(t.Context(), l)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set(path, data, -1); err != nil {
		t.Fatal(err)
	}
	_, err = s.Renew(t.Context(), l)
	wantIs(t, err, driver.ErrCorrupt, "Renew of a term written back as it was before its renewal")
	if errors.Is(err, driver.ErrCorrupt) {
		if _, err := s.Acquire(t.Context(), slotRequest(ns, "b", "1")); !errors.Is(err, driver.ErrCorrupt) {
			t.Errorf("Acquire of the slot written back: %v; want ErrCorrupt", err)
		}
	}
}

// testWrittenBackRaisedLockRoot: the locks' root written back as it was
// before RaiseLockFences (a restore of a backup taken before the raise)
// has a lower fence offset than the store read: its fences would go back
// below those it granted after the raise (czxids do not make up for an
// offset), so its next Lock is refused, until the fences are raised again.
func testWrittenBackRaisedLockRoot(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	ctx := t.Context()
	l, err := s.Lock(ctx, "job", "a", false)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	conn := rawConn(t, addr)
	data, _, err := conn.Get(s.lockRootPath())
	if err != nil {
		t.Fatal(err)
	}
	floor := l.Fence() + 1_000_000
	if err := s.RaiseLockFences(ctx, floor); err != nil {
		t.Fatal(err)
	}
	if l, err = s.Lock(ctx, "job", "a", false); err != nil {
		t.Fatal(err)
	}
	raised := l.Fence()
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Set(s.lockRootPath(), data, -1); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"job", "other"} {
		l, err := s.Lock(ctx, name, "a", false)
		if err == nil {
			if l.Fence() <= raised {
				t.Errorf("Lock(%q) after the locks' root was written back as before RaiseLockFences(%d): fence %d, not above %d granted after the raise",
					name, floor, l.Fence(), raised)
			}
			_ = l.Unlock(ctx)
			continue
		}
		wantIs(t, err, driver.ErrCorrupt, "Lock(%q) after the locks' root was written back as before the raise", name)
	}
	// storectl restore raises the fences again: the locks are granted
	// above every fence so far.
	if err := s.RaiseLockFences(ctx, raised+1_000); err != nil {
		t.Fatal(err)
	}
	if l, err = s.Lock(ctx, "job", "a", false); err != nil {
		t.Fatalf("Lock after the fences were raised again: %v", err)
	}
	if l.Fence() <= raised+1_000 {
		t.Errorf("Lock after RaiseLockFences(%d): fence %d", raised+1_000, l.Fence())
	}
	_ = l.Unlock(ctx)
}
