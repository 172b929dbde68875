package idgen_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cosid-go/store"
	_ "github.com/cosid-go/store/drivers/memory"
	"github.com/cosid-go/store/idgen"
)

func ExampleSegment() {
	st, err := store.Open("memory", nil)
	if err != nil {
		panic(err)
	}
	defer st.Close()
	ctx := context.Background()

	seg, err := idgen.NewSegment(ctx, st, "orders", idgen.SegmentOptions{Step: 100})
	if err != nil {
		panic(err)
	}
	defer seg.Close()
	for range 3 {
		id, err := seg.Next(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Println(id)
	}
	// Output:
	// 0
	// 1
	// 2
}

func ExampleSnowflake() {
	st, err := store.Open("memory", nil)
	if err != nil {
		panic(err)
	}
	defer st.Close()
	ctx := context.Background()

	ns := store.Namespace{Name: "workers", Limit: 1024, Tolerance: time.Second}
	sf, err := idgen.NewSnowflake(ctx, st, ns, "host-a", idgen.SnowflakeOptions{})
	if err != nil {
		panic(err)
	}
	defer sf.Close(ctx) // releases the slot with the highest timestamp used

	a, _ := sf.NextID(ctx)
	b, _ := sf.NextID(ctx)
	ts, worker, _ := sf.Layout().Decode(b)
	fmt.Println("increasing:", b > a)
	fmt.Println("worker:", worker)
	fmt.Println("about now:", time.Since(sf.Layout().Time(ts)) < time.Minute)
	// Output:
	// increasing: true
	// worker: 0
	// about now: true
}

func ExampleSession() {
	st, err := store.Open("memory", nil)
	if err != nil {
		panic(err)
	}
	defer st.Close()
	ctx := context.Background()

	ns := store.Namespace{Name: "workers", Limit: 16, Tolerance: time.Second}
	s, err := idgen.NewSession(ctx, st, ns, "host-a", store.AcquireOptions{TTL: 30 * time.Second})
	if err != nil {
		panic(err)
	}
	// A generator of its own checks the lease before each timestamp t it
	// issues, and keeps Floor <= t < Ceiling.
	lease, err := s.Check(time.Now().UnixMilli())
	fmt.Println("slot:", lease.Slot, "valid:", err == nil)

	s.Close(ctx)
	<-s.Done()
	fmt.Println("after Close:", s.Err())
	// Output:
	// slot: 0 valid: true
	// after Close: idgen: closed
}
