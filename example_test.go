package store_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cosid-go/store"
	_ "github.com/cosid-go/store/drivers/memory"
)

func ExampleRangeStore_Next() {
	st, err := store.Open("memory", nil)
	if err != nil {
		panic(err)
	}
	defer st.Close()
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		r, err := st.Ranges().Next(ctx, "orders", 100)
		if err != nil {
			panic(err)
		}
		fmt.Printf("[%d, %d)\n", r.Start, r.End)
	}
	// Output:
	// [0, 100)
	// [100, 200)
	// [200, 300)
}

func ExampleRangeStore_Seal() {
	// Two stores sharing one storage act as two processes.
	old, _ := store.Open("memory", map[string]string{"name": "example-seal"})
	defer old.Close()
	ctx := context.Background()
	old.Ranges().Next(ctx, "invoices", 500)

	final, _ := old.Ranges().Seal(ctx, "invoices")
	_, err := old.Ranges().Next(ctx, "invoices", 1)
	fmt.Println("sealed at", final, "next:", errors.Is(err, store.ErrSealed))

	// Start the key in the new store where the old one ended.
	moved, _ := store.Open("memory", nil)
	defer moved.Close()
	moved.Ranges().Init(ctx, "invoices", final)
	r, _ := moved.Ranges().Next(ctx, "invoices", 10)
	fmt.Printf("continues at [%d, %d)\n", r.Start, r.End)
	// Output:
	// sealed at 500 next: true
	// continues at [500, 510)
}

func ExampleSlotLeaseStore_Acquire() {
	st, _ := store.Open("memory", nil)
	defer st.Close()
	ctx := context.Background()
	ns := store.Namespace{Name: "workers", Limit: 1024, Tolerance: time.Second}

	lease, err := st.Slots().Acquire(ctx, ns, "host-a", store.AcquireOptions{TTL: 30 * time.Second})
	if err != nil {
		panic(err)
	}
	fmt.Println("worker id:", lease.Slot, "fence:", lease.Fence, "floor:", lease.Floor)
	fmt.Println("ceiling - expiresAt:", time.Duration(lease.Ceiling-lease.ExpiresAt)*time.Millisecond)

	// The holder says which timestamps it used; the next term starts above them.
	used := lease.Floor + 41
	st.Slots().ReleaseUsed(ctx, lease, used)
	next, _ := st.Slots().Acquire(ctx, ns, "host-a", store.AcquireOptions{})
	fmt.Println("same slot again:", next.Slot, "fence:", next.Fence, "floor:", next.Floor)
	// Output:
	// worker id: 0 fence: 1 floor: 0
	// ceiling - expiresAt: 1s
	// same slot again: 0 fence: 2 floor: 42
}

func ExampleLocker_Lock() {
	a, _ := store.Open("memory", map[string]string{"name": "example-lock"})
	defer a.Close()
	b, _ := store.Open("memory", map[string]string{"name": "example-lock"})
	defer b.Close()
	ctx := context.Background()

	lock, err := a.Locks().Lock(ctx, "rebalance")
	if err != nil {
		panic(err)
	}
	_, err = b.Locks().TryLock(ctx, "rebalance")
	fmt.Println("b while a holds:", errors.Is(err, store.ErrLocked))

	select {
	case <-lock.Lost():
		fmt.Println("lost")
	default:
		fmt.Println("a still holds it")
	}
	lock.Unlock(ctx)

	next, err := b.Locks().TryLock(ctx, "rebalance")
	fmt.Println("b after a unlocked:", err == nil, "fence grew:", next.Fence() > lock.Fence())
	next.Unlock(ctx)
	// Output:
	// b while a holds: true
	// a still holds it
	// b after a unlocked: true fence grew: true
}
