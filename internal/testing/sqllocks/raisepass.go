package sqllocks

import (
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
)

// raiseBeforeFirstPass: RaiseLockFences(floor) commits after a Lock's
// waiter row (its ticket, below floor) and before the Lock's first look
// at the queue, which finds it first. That Lock returns after the raise
// returned: its fence, handed out later, is above floor
// (driver.LockSealer), not the ticket it queued with; the next holder's is
// above it, and so is the fence of a Lock of the same store after it (its
// regression guard keeps the raised fence, not the ticket).
func raiseBeforeFirstPass(t *testing.T, d Dialect) {
	sc := parallelScene(t, d, 2*time.Second, 2, false)
	s, raiser := sc.stores[0], sc.stores[1]
	ctx := t.Context()
	const floor = 1_000_000
	var once sync.Once
	raised := make(chan error, 1)
	d.SetHook(s, func(point string) {
		if point == "pass" {
			once.Do(func() { raised <- raiser.(driver.LockSealer).RaiseLockFences(ctx, floor) })
		}
	})
	l, err := s.Lock(ctx, "x", "s", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-raised; err != nil {
		t.Fatalf("RaiseLockFences(%d) at the first pass: %v", floor, err)
	}
	if l.Fence() <= floor {
		t.Errorf("a Lock queued before RaiseLockFences(%d) and first after it was granted fence %d", floor, l.Fence())
	}
	if ws, err := raiser.Waiters(ctx, "x"); err != nil || len(ws) != 1 || ws[0].Fence != l.Fence() {
		t.Errorf("Waiters = %+v, %v; want the holder at fence %d", ws, err, l.Fence())
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	prev := l.Fence()
	for _, st := range []Store{raiser, s} {
		l, err := st.Lock(ctx, "x", "next", true)
		if err != nil {
			t.Fatal(err)
		}
		if l.Fence() <= prev {
			t.Errorf("Lock after a holder with fence %d got fence %d", prev, l.Fence())
		}
		prev = l.Fence()
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
