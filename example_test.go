package store_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/cosid-go/store"
	_ "github.com/cosid-go/store/drivers/memory"
)

func ExampleRangeStore_Next() {
	st, err := store.Open("memory", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	for range 3 {
		r, err := st.Ranges().Next(ctx, "orders", 100)
		if err != nil {
			log.Fatal(err) // nothing of [r.Start, r.End) may be used
		}
		fmt.Printf("[%d, %d)\n", r.Start, r.End)
	}
	// Output:
	// [0, 100)
	// [100, 200)
	// [200, 300)
}

// Moving a key to another store: seal it in the old one, then start it in
// the new one where the old one ended.
func ExampleRangeStore_Seal() {
	ctx := context.Background()
	old, err := store.Open("memory", map[string]string{"name": "example-seal"})
	if err != nil {
		log.Fatal(err)
	}
	defer old.Close()
	if _, err := old.Ranges().Next(ctx, "invoices", 500); err != nil {
		log.Fatal(err)
	}

	final, err := old.Ranges().Seal(ctx, "invoices")
	if err != nil {
		log.Fatal(err)
	}
	_, err = old.Ranges().Next(ctx, "invoices", 1)
	fmt.Println("sealed at", final, "- the old store refuses Next:", errors.Is(err, store.ErrSealed))

	moved, err := store.Open("memory", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer moved.Close()
	if err := moved.Ranges().Init(ctx, "invoices", final); err != nil {
		log.Fatal(err)
	}
	r, err := moved.Ranges().Next(ctx, "invoices", 10)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("continues at [%d, %d)\n", r.Start, r.End)
	// Output:
	// sealed at 500 - the old store refuses Next: true
	// continues at [500, 510)
}

func ExampleSlotLeaseStore_Acquire() {
	st, err := store.Open("memory", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	ns := store.Namespace{Name: "workers", Limit: 1024, Tolerance: time.Second}

	lease, err := st.Slots().Acquire(ctx, ns, "host-a", store.AcquireOptions{TTL: 30 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	// Which free slot: one near a point of the instance's own, so that a
	// fleet starting at once spreads over the namespace.
	fmt.Println("worker id below the limit:", lease.Slot < ns.Limit, "fence:", lease.Fence, "floor:", lease.Floor)
	fmt.Println("ceiling - expiresAt:", time.Duration(lease.Ceiling-lease.ExpiresAt)*time.Millisecond)

	// The holder says which timestamps it used; the next term starts above them.
	used := lease.Floor + 41
	if err := st.Slots().ReleaseUsed(ctx, lease, used); err != nil {
		log.Fatal(err)
	}
	next, err := st.Slots().Acquire(ctx, ns, "host-a", store.AcquireOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("same slot again:", next.Slot == lease.Slot, "fence:", next.Fence, "floor:", next.Floor)
	// Output:
	// worker id below the limit: true fence: 1 floor: 0
	// ceiling - expiresAt: 1s
	// same slot again: true fence: 2 floor: 42
}

func ExampleLocker_Lock() {
	ctx := context.Background()
	// Two stores sharing one storage act as two processes.
	a, err := store.Open("memory", map[string]string{"name": "example-lock"})
	if err != nil {
		log.Fatal(err)
	}
	defer a.Close()
	b, err := store.Open("memory", map[string]string{"name": "example-lock"})
	if err != nil {
		log.Fatal(err)
	}
	defer b.Close()

	lock, err := a.Locks().Lock(ctx, "rebalance")
	if err != nil {
		log.Fatal(err)
	}
	_, err = b.Locks().TryLock(ctx, "rebalance")
	fmt.Println("b while a holds it:", errors.Is(err, store.ErrLocked))

	if err := lock.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	next, err := b.Locks().TryLock(ctx, "rebalance")
	if err != nil {
		log.Fatal(err)
	}
	defer next.Unlock(ctx)
	fmt.Println("b after a unlocked, fence grew:", next.Fence() > lock.Fence())
	// Output:
	// b while a holds it: true
	// b after a unlocked, fence grew: true
}

// A work loop under a lock: it checks Lost before each step and stops at
// once when the lock is lost, because another process may hold it by then.
// Each write carries the lock's fence, so the resource can refuse a holder
// that learns too late. Here the store is closed after two steps, which
// loses the lock just as an expired ZooKeeper session would.
func ExampleLock_Lost() {
	st, err := store.Open("memory", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()

	lock, err := st.Locks().Lock(ctx, "compaction")
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		// After a loss there is nothing to unlock; any other error is worth a log line.
		if err := lock.Unlock(ctx); err != nil && !errors.Is(err, store.ErrLeaseLost) && !errors.Is(err, store.ErrClosed) {
			log.Print(err)
		}
	}()

	for step := 1; step <= 4; step++ {
		select {
		case <-lock.Lost():
			fmt.Println("lock lost before step", step, "- stopping")
			return
		default:
		}
		fmt.Printf("step %d, written with fence %d\n", step, lock.Fence())
		if step == 2 {
			st.Close()
		}
	}
	// Output:
	// step 1, written with fence 1
	// step 2, written with fence 1
	// lock lost before step 3 - stopping
}
