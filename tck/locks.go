package tck

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cosid-go/store"
)

func lockChecks() []check {
	return []check{
		{"Exclusion", needLocks, checkExclusion},
		{"FIFO", needLocks, checkFIFO},
		{"TryLock", needLocks, checkTryLock},
		{"Cancel", needLocks, checkCancel},
		{"UnlockTwice", needLocks, checkUnlockTwice},
		{"LostOnClose", needLocks, checkLostOnClose},
		{"NotReentrant", needLocks, checkNotReentrant},
		{"Names", needLocks, checkLockNames},
		{"ListPages", needLocks, checkLockPages},
		{"InvalidArguments", needLocks, checkLockArguments},
		{"TryLockAtHandover", needLocks, checkTryLockAtHandover},
		{"CancelAtGrant", needLocks, checkCancelAtGrant},
		{"MiddleCancel", needLocks, checkMiddleCancel},
		{"FIFOArrival", needLocks, checkFIFOArrival},
		{"UnlockAfterLost", needLocks, checkUnlockAfterLost},
		{"LostBeforeGrant", needLocks, checkLostBeforeGrant},
		{"WaiterFences", needLocks, checkWaiterFences},
		{"Seal", needLocks, checkLockSeal},
		{"RaiseFences", needLocks, checkRaiseLockFences},
		{"SealRaiseQueued", needLocks, checkLockSealRaiseQueued},
		{"RaiseQueued", needLocks, checkLockRaiseQueued},
		{"RaiseTwiceQueued", needLocks, checkLockRaiseTwiceQueued},
	}
}

// lock takes name through st, waiting at most lockWait.
func (e *env) lock(st *store.Store, name string) *store.Lock {
	e.t.Helper()
	l, err := st.Locks().Lock(e.timeout(e.lockWait), name)
	e.fatalIf(err, "Lock(%q)", name)
	return l
}

func (e *env) unlock(l *store.Lock) {
	e.t.Helper()
	e.fatalIf(l.Unlock(e.ctx), "Unlock(%q)", l.Name())
}

// waiters returns the owners of a lock's holder and waiters, in order; a
// lock never taken has none.
func (e *env) waiters(st *store.Store, name string) []string {
	e.t.Helper()
	ws, err := st.Locks().Waiters(e.ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	e.fatalIf(err, "Waiters(%q)", name)
	owners := []string{}
	for _, w := range ws {
		owners = append(owners, w.Owner)
	}
	return owners
}

// awaitWaiters polls until the lock's holder and waiters are want, in
// order, and stops the check if they do not become so promptly.
func (e *env) awaitWaiters(st *store.Store, name string, want ...string) {
	e.t.Helper()
	var got []string
	if !e.eventually(e.prompt, func() bool {
		got = e.waiters(st, name)
		return cmp.Equal(want, got, cmpopts.EquateEmpty())
	}) {
		e.t.Fatalf("Waiters(%q) = %q, want %q (holder first, then waiters in arrival order)", name, got, want)
	}
}

// lockAsync starts Lock(name) in a goroutine with ctx; the result comes on
// the returned channel.
func (e *env) lockAsync(ctx context.Context, st *store.Store, name string) <-chan lockResult {
	ch := make(chan lockResult, 1)
	e.goroutine(func() {
		l, err := st.Locks().Lock(ctx, name)
		ch <- lockResult{l, err}
	})
	return ch
}

type lockResult struct {
	l   *store.Lock
	err error
}

// await waits promptly for a lock result.
func (e *env) await(ch <-chan lockResult, what string) lockResult {
	e.t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(e.prompt):
		e.t.Fatalf("%s: no result within %v", what, e.prompt)
	}
	return lockResult{} // not reached: Fatalf ends the check
}

// checkExclusion: stores and goroutines increment a counter under the lock;
// critical sections never overlap, no increment is lost, and the fences of
// successive holders strictly increase. The counter is compared with the
// critical sections that ran: a failed Lock or Unlock (reported as that)
// ends its worker, and must not read as a lost update.
func checkExclusion(e *env) {
	const stores, workers, rounds = 4, 4, 10
	const name = "exclusion"
	var (
		inside   atomic.Int32
		overlaps atomic.Int32
		counter  atomic.Int64 // read and written in two steps, so an overlap loses updates
		sections atomic.Int64 // critical sections that ran: increments made
		mu       sync.Mutex
		fences   []int64
	)
	var wg sync.WaitGroup
	for s := range stores {
		st := e.open(store.WithOwner(fmt.Sprintf("store-%d", s)))
		for range workers {
			wg.Go(func() {
				for range rounds {
					l, err := st.Locks().Lock(e.timeout(e.lockWait), name)
					if err != nil {
						e.errorf("Lock: %v", err)
						return
					}
					if inside.Add(1) != 1 {
						overlaps.Add(1)
					}
					mu.Lock()
					fences = append(fences, l.Fence())
					mu.Unlock()
					n := counter.Load()
					runtime.Gosched() // let an overlapping holder run here
					counter.Store(n + 1)
					sections.Add(1)
					inside.Add(-1)
					if err := l.Unlock(e.ctx); err != nil {
						e.errorf("Unlock: %v", err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	if n := overlaps.Load(); n > 0 {
		e.t.Errorf("%d critical sections overlapped", n)
	}
	if got, want := counter.Load(), sections.Load(); got != want {
		e.t.Errorf("counter = %d after %d increments under the lock: %d lost to overlapping critical sections", got, want, want-got)
	}
	for i := 1; i < len(fences); i++ {
		if fences[i] <= fences[i-1] {
			e.t.Errorf("holder %d has fence %d, not above the previous holder's %d", i, fences[i], fences[i-1])
			break
		}
	}
	if len(fences) > 0 && fences[0] < 1 {
		e.t.Errorf("first fence %d, want at least 1", fences[0])
	}
}

// checkFIFO: waiters enqueued one at a time get the lock in that order.
func checkFIFO(e *env) {
	const name = "fifo"
	holder := e.open(store.WithOwner("holder"))
	h := e.lock(holder, name)
	arrival := []string{"waiter-0", "waiter-1", "waiter-2", "waiter-3"}
	granted := e.queueInOrder(holder, name, arrival)
	ws, err := holder.Locks().Waiters(e.ctx, name)
	e.fatalIf(err, "Waiters")
	if len(ws) == 0 || ws[0].Fence != h.Fence() {
		e.t.Errorf("Waiters = %+v: want the holder first, with the lock's fence %d", ws, h.Fence())
	}
	e.unlock(h)
	e.wantGrantOrder(granted, arrival)
}

// queueInOrder has a store per owner wait for name behind holder's hold,
// one at a time (each is seen queued before the next arrives); each
// unlocks once granted, and the returned channel gives the owners in the
// order they were granted.
func (e *env) queueInOrder(holder *store.Store, name string, owners []string) <-chan string {
	granted := make(chan string, len(owners))
	want := []string{"holder"}
	ctx := e.timeout(e.lockWait)
	for _, owner := range owners {
		st := e.open(store.WithOwner(owner))
		e.goroutine(func() {
			l, err := st.Locks().Lock(ctx, name)
			if err != nil {
				e.errorf("%s: Lock: %v", owner, err)
				return
			}
			granted <- owner
			if err := l.Unlock(ctx); err != nil {
				e.errorf("%s: Unlock: %v", owner, err)
			}
		})
		want = append(want, owner)
		e.awaitWaiters(holder, name, want...)
	}
	return granted
}

// wantGrantOrder checks that the waiters of queueInOrder are granted the
// lock in arrival order, each within e.prompt of the one before.
func (e *env) wantGrantOrder(granted <-chan string, arrival []string) {
	e.t.Helper()
	var got []string
	for range arrival {
		select {
		case o := <-granted:
			got = append(got, o)
		case <-time.After(e.prompt):
			e.t.Fatalf("waiters got the lock in order %q, then nobody within %v", got, e.prompt)
		}
	}
	if diff := cmp.Diff(arrival, got); diff != "" {
		e.t.Errorf("order in which waiters got the lock: -arrival +actual:\n%s", diff)
	}
}

// checkTryLock: TryLock takes a free lock and refuses a held one at once.
func checkTryLock(e *env) {
	const name = "try"
	a := e.open(store.WithOwner("a"))
	b := e.open(store.WithOwner("b"))
	c := e.open(store.WithOwner("c"))
	try := func(st *store.Store, what string) {
		e.t.Helper()
		start := time.Now()
		l, err := st.Locks().TryLock(e.ctx, name)
		if err == nil {
			e.t.Errorf("%s: TryLock of a held lock succeeded (fence %d)", what, l.Fence())
			_ = l.Unlock(e.ctx) // the failure is reported; free the lock
			return
		}
		e.wantIs(err, store.ErrLocked, "%s: TryLock of a held lock", what)
		if d := time.Since(start); d > e.prompt {
			e.t.Errorf("%s: TryLock of a held lock took %v: it must not wait", what, d)
		}
	}
	la, err := a.Locks().TryLock(e.ctx, name)
	e.fatalIf(err, "TryLock of a free lock")
	try(b, "another store")
	try(a, "the holder's store")
	// A try concerns one name: another name, free, is taken.
	other, err := b.Locks().TryLock(e.ctx, name+"-other")
	e.fatalIf(err, "TryLock of a free name while another name is held (see driver.Locker.Lock: "+
		"ErrLocked if another holds or waits for the lock)")
	e.unlock(other)

	// With a waiter queued too.
	chB := e.lockAsync(e.timeout(e.lockWait), b, name)
	e.awaitWaiters(c, name, "a", "b")
	try(c, "a third store, with a waiter queued")
	e.unlock(la)
	rb := e.await(chB, "Lock by the waiter after Unlock")
	e.fatalIf(rb.err, "Lock by the waiter")
	try(c, "a third store, after the lock passed to the waiter")
	e.unlock(rb.l)
	// The failed tries' entries may be removed in the background (see
	// driver.Locker.Lock), and may fail a try until then: at a CI load of
	// 36 etcd's had not gone yet.
	e.awaitWaiters(c, name)
	lc, err := c.Locks().TryLock(e.ctx, name)
	e.fatalIf(err, "TryLock of the lock after its holders unlocked")
	if !(la.Fence() < rb.l.Fence() && rb.l.Fence() < lc.Fence()) {
		e.t.Errorf("fences of successive holders %d, %d, %d do not increase", la.Fence(), rb.l.Fence(), lc.Fence())
	}
	e.unlock(lc)
}

// queueAB queues a (its Lock ends with cancelA) and then b behind it for
// name, held by the owner "holder": each is in the queue before queueAB
// returns. b waits at most the lock wait.
func (e *env) queueAB(holder, sa, sb *store.Store, name string) (cancelA func(), chA, chB <-chan lockResult) {
	e.t.Helper()
	ctxA, cancelA := context.WithCancel(e.ctx)
	chA = e.lockAsync(ctxA, sa, name)
	e.awaitWaiters(holder, name, "holder", "a")
	chB = e.lockAsync(e.timeout(e.lockWait), sb, name)
	e.awaitWaiters(holder, name, "holder", "a", "b")
	return cancelA, chA, chB
}

// checkCancel: a waiter whose context ends returns promptly with the
// context's error, leaves the queue, and does not hold up the next waiter.
func checkCancel(e *env) {
	const name = "cancel"
	holder := e.open(store.WithOwner("holder"))
	sa := e.open(store.WithOwner("a"))
	sb := e.open(store.WithOwner("b"))
	h := e.lock(holder, name)
	cancelA, chA, chB := e.queueAB(holder, sa, sb, name)
	defer cancelA()

	cancelA()
	ra := e.await(chA, "Lock whose context was cancelled")
	if ra.err == nil {
		e.t.Errorf("Lock whose context was cancelled got the lock")
		_ = ra.l.Unlock(e.ctx) // the failure is reported; free the lock
	} else {
		e.wantIs(ra.err, context.Canceled, "Lock whose context was cancelled")
	}
	e.awaitWaiters(holder, name, "holder", "b")
	e.unlock(h)
	rb := e.await(chB, "Lock by the waiter behind a cancelled one")
	e.fatalIf(rb.err, "Lock by the waiter behind a cancelled one")
	e.awaitWaiters(holder, name, "b")
	e.unlock(rb.l)
}

// checkUnlockTwice: a second Unlock returns nil and, at the driver, does
// not remove a later holder.
func checkUnlockTwice(e *env) {
	const name = "twice"
	a := e.open(store.WithOwner("a"))
	b := e.open(store.WithOwner("b"))
	l := e.lock(a, name)
	e.fatalIf(l.Unlock(e.ctx), "first Unlock")
	e.fatalIf(l.Unlock(e.ctx), "second Unlock")
	select {
	case <-l.Lost():
		e.t.Errorf("Unlock closed Lost: only a loss may close it")
	default:
	}

	// The portable layer answers a second Unlock itself; the driver's lock
	// must also be safe when a retried Unlock arrives after another store
	// took the lock.
	la := e.driverLock(a, name, "a")
	e.fatalIf(la.Unlock(e.ctx), "driver Unlock by a")
	lb := e.driverLock(b, name, "b") // after a unlocked
	e.fatalIf(la.Unlock(e.ctx), "second driver Unlock by a, while b holds the lock")
	e.awaitWaiters(a, name, "b")
	if _, err := a.Locks().TryLock(e.ctx, name); !errors.Is(err, store.ErrLocked) {
		e.t.Errorf("TryLock after a stale second Unlock: got %v, want ErrLocked (b still holds the lock)", err)
	}
	e.fatalIf(lb.Unlock(e.ctx), "driver Unlock by b")
	e.fatalIf(lb.Unlock(e.ctx), "second driver Unlock by b")
	e.awaitWaiters(a, name)
}

// checkLostOnClose: closing the holder's store closes Lost and passes the
// lock to the next waiter, in another store.
func checkLostOnClose(e *env) {
	const name = "lost"
	first := e.open(store.WithOwner("first"))
	second := e.open(store.WithOwner("second"))
	l1 := e.lock(first, name)
	ch2 := e.lockAsync(e.timeout(e.lockWait), second, name)
	e.awaitWaiters(second, name, "first", "second")
	select {
	case <-l1.Lost():
		e.t.Fatal("Lost closed while the lock is held and the store open")
	default:
	}
	e.fatalIf(first.Close(), "Close of the holder's store")
	select {
	case <-l1.Lost():
	case <-time.After(e.prompt):
		e.t.Errorf("Lost not closed within %v of closing the holder's store", e.prompt)
	}
	r2 := e.await(ch2, "Lock by the waiter after the holder's store closed")
	e.fatalIf(r2.err, "Lock by the waiter after the holder's store closed")
	if r2.l.Fence() <= l1.Fence() {
		e.t.Errorf("next holder's fence %d is not above the lost holder's %d", r2.l.Fence(), l1.Fence())
	}
	e.awaitWaiters(second, name, "second")

	// The second store's hold came after a wait: its Close ends it too,
	// and passes the lock on.
	third := e.open(store.WithOwner("third"))
	ch3 := e.lockAsync(e.timeout(e.lockWait), third, name)
	e.awaitWaiters(third, name, "second", "third")
	e.fatalIf(second.Close(), "Close of the store holding the lock it waited for")
	select {
	case <-r2.l.Lost():
	case <-time.After(e.prompt):
		e.t.Errorf("Lost of a hold granted after a wait not closed within %v of closing its store "+
			"(see driver.Store.Close: it ends every lock hold of the store)", e.prompt)
	}
	r3 := e.await(ch3, "Lock by the next waiter after the store of a hold granted after a wait closed "+
		"(see driver.Locker.Lock: a store's Close ends its holds, the next waiter gets the lock)")
	e.fatalIf(r3.err, "Lock by the next waiter after the second holder's store closed")
	e.unlock(r3.l)
}

// checkNotReentrant: the holder's store locking the same name again waits
// (until its context ends), and leaves no trace.
func checkNotReentrant(e *env) {
	const name = "reentrant"
	st := e.open(store.WithOwner("holder"))
	l := e.lock(st, name)
	ctx, cancel := context.WithTimeout(e.ctx, e.short)
	defer cancel()
	again, err := st.Locks().Lock(ctx, name)
	if err == nil {
		e.t.Errorf("a second Lock of a held name from the same store got it (fences %d and %d)", l.Fence(), again.Fence())
		_ = again.Unlock(e.ctx) // the failure is reported; free the lock
	} else {
		e.wantIs(err, context.DeadlineExceeded, "second Lock of a held name from the same store")
	}
	e.awaitWaiters(st, name, "holder")
	_, err = st.Locks().TryLock(e.ctx, name)
	e.wantIs(err, store.ErrLocked, "TryLock of a held name from the same store")
	e.unlock(l)
}

// checkLockNames: Locks lists every name that has a holder or waiter,
// sorted. A released name may stay listed or vanish (a driver may delete
// unused names, docs/design.md, Locks): Waiters of it then shows no one, or ErrNotFound.
func checkLockNames(e *env) {
	st := e.open()
	names, err := st.Locks().List(e.ctx)
	e.fatalIf(err, "Locks of an empty store")
	e.wantEmpty("Locks of an empty store", names)
	_, err = st.Locks().Waiters(e.ctx, "never-taken")
	e.wantIs(err, store.ErrNotFound, "Waiters of a lock never taken")
	var held []*store.Lock
	for _, name := range []string{"b", "a.b", "a", "\u00e9t\u00e9"} {
		held = append(held, e.lock(st, name))
	}
	names, err = e.open().Locks().List(e.ctx)
	e.fatalIf(err, "Locks")
	if diff := cmp.Diff([]string{"a", "a.b", "b", "\u00e9t\u00e9"}, names); diff != "" {
		e.t.Errorf("Locks: -want +got:\n%s", diff)
	}
	for _, l := range held {
		e.unlock(l)
	}
	ws, err := st.Locks().Waiters(e.ctx, "b")
	if !errors.Is(err, store.ErrNotFound) {
		e.fatalIf(err, "Waiters of a lock taken and released")
		e.wantEmpty("Waiters of a lock taken and released", ws)
	}
}

// checkLockArguments: bad lock names are refused with ErrInvalidArgument
// and create nothing.
func checkLockArguments(e *env) {
	st := e.open()
	k := st.Locks()
	for _, name := range badNames() {
		q := quoteShort(name)
		_, err := k.Lock(e.ctx, name)
		e.wantIs(err, store.ErrInvalidArgument, "Lock(%s)", q)
		_, err = k.TryLock(e.ctx, name)
		e.wantIs(err, store.ErrInvalidArgument, "TryLock(%s)", q)
		_, err = k.Waiters(e.ctx, name)
		e.wantIs(err, store.ErrInvalidArgument, "Waiters(%s)", q)
	}
	names, err := k.List(e.ctx)
	e.fatalIf(err, "Locks")
	e.wantEmpty("Locks after refused calls", names)
}

// checkWaiterFences: Waiters shows each entry's fence: the holder's own,
// and for each waiter the one it gets when granted, growing along the
// queue.
func checkWaiterFences(e *env) {
	const name = "waiter-fences"
	const rule = "(see driver.Waiter.Fence: the fence the entry holds, or will hold if granted, growing along the queue)"
	a := e.open(store.WithOwner("a"))
	b := e.open(store.WithOwner("b"))
	c := e.open(store.WithOwner("c"))
	la := e.lock(a, name)
	chB := e.lockAsync(e.timeout(e.lockWait), b, name)
	e.awaitWaiters(a, name, "a", "b")
	chC := e.lockAsync(e.timeout(e.lockWait), c, name)
	e.awaitWaiters(a, name, "a", "b", "c")
	ws, err := a.Locks().Waiters(e.ctx, name)
	e.fatalIf(err, "Waiters")
	if len(ws) != 3 {
		e.t.Fatalf("Waiters lists %v, want the holder and two waiters", ws)
	}
	if ws[0].Fence != la.Fence() {
		e.t.Errorf("Waiters shows the holder with fence %d, its lock has %d %s", ws[0].Fence, la.Fence(), rule)
	}
	if !(ws[0].Fence < ws[1].Fence && ws[1].Fence < ws[2].Fence) {
		e.t.Errorf("Waiters shows fences %d, %d, %d: not growing along the queue %s", ws[0].Fence, ws[1].Fence, ws[2].Fence, rule)
	}
	e.unlock(la)
	rb := e.await(chB, "Lock by the first waiter")
	e.fatalIf(rb.err, "Lock by the first waiter")
	if rb.l.Fence() != ws[1].Fence {
		e.t.Errorf("the first waiter was granted fence %d, Waiters showed %d %s", rb.l.Fence(), ws[1].Fence, rule)
	}
	e.unlock(rb.l)
	rc := e.await(chC, "Lock by the second waiter")
	e.fatalIf(rc.err, "Lock by the second waiter")
	if rc.l.Fence() != ws[2].Fence {
		e.t.Errorf("the second waiter was granted fence %d, Waiters showed %d %s", rc.l.Fence(), ws[2].Fence, rule)
	}
	e.unlock(rc.l)
}
