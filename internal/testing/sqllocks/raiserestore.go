package sqllocks

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/poll"
)

// raisedFenceAcrossARestore: a waiter queued before RaiseLockFences is
// granted its ticket plus the raise's offset (sqlstore.RaisedFence), a
// fence above every ticket the store was given. The namespace is then put
// back from a dump taken before the raise, with that store left open
// across it (its session gone meanwhile, as a restart of the server or
// an operator would end it). The counter went back to the waiter's
// ticket, not to the fence the store was granted: its next Locks must be
// refused (ErrCorrupt) as SessionIDsAcrossARestore's are, not be granted
// fences below that one and then, ticket by ticket, the same again.
func raisedFenceAcrossARestore(t *testing.T, d Dialect) {
	sc := parallelScene(t, d, time.Second, 3, false)
	holder, across, raiser := sc.stores[0], sc.stores[1], sc.stores[2]
	ctx := t.Context()
	const name = "job"

	// A hold of another name tells when the session is seen lost.
	probe, err := across.Lock(ctx, "probe", "across", true)
	if err != nil {
		t.Fatal(err)
	}
	h, err := holder.Lock(ctx, name, "holder", true)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan lockResult, 1)
	go func() {
		l, err := across.Lock(ctx, name, "across", true)
		ch <- lockResult{l: l, err: err}
	}()
	var queued []driver.Waiter
	poll.Until(t, 10*time.Second, "the waiter queued", func() bool {
		queued, err = raiser.Waiters(ctx, name)
		return err == nil && len(queued) == 2
	})
	restore := d.Dump(t, sc.srv, sc.ns) // the waiter's row is in the dump

	// Just above the waiter's fence: the raised fences are then close to
	// the tickets the restored counter gives again.
	floor := queued[1].Fence + 2
	if err := raiser.(driver.LockSealer).RaiseLockFences(ctx, floor); err != nil {
		t.Fatal(err)
	}
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatalf("the waiter queued before RaiseLockFences(%d): %v", floor, r.err)
	}
	granted := r.l.Fence()
	if granted <= floor {
		t.Fatalf("the waiter queued before RaiseLockFences(%d) was granted fence %d", floor, granted)
	}
	if err := r.l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	d.KillSession(t, sc.srv, sc.ns, across)
	select {
	case <-probe.Lost():
	case <-time.After(30 * time.Second):
		t.Fatal("the store did not see its session end")
	}
	_ = holder.Close()
	_ = raiser.Close()
	restore()

	// Each try takes a ticket of the restored counter when it is not
	// refused: enough tries to reach the fence granted before.
	var after []string
	for i := range int(granted-queued[1].Fence) + 3 {
		l, err := across.Lock(ctx, name, "across", true)
		if errors.Is(err, driver.ErrCorrupt) {
			continue
		}
		if err != nil {
			t.Fatalf("Lock %d across the restore: %v", i, err)
		}
		if l.Fence() <= granted {
			after = append(after, fmt.Sprint(l.Fence()))
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(after) > 0 {
		t.Errorf("the store granted fence %d (a waiter queued before RaiseLockFences(%d)), then, open across a restore of a dump taken before the raise, fences %v: not above it",
			granted, floor, after)
	}
}
