package idgen_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/cosid-go/store"
	_ "github.com/cosid-go/store/drivers/memory"
	"github.com/cosid-go/store/idgen"
)

func ExampleSegment() {
	st, err := store.Open("memory", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()

	seg, err := idgen.NewSegment(ctx, st, "orders", idgen.SegmentOptions{Step: 100})
	if err != nil {
		log.Fatal(err) // a bad key, or a store that did not answer
	}
	defer seg.Close(ctx)
	for range 3 {
		id, err := seg.NextID(ctx)
		if err != nil {
			log.Fatal(err) // nothing fetched and the store down: idgen.ErrNoRange
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
		log.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()

	ns := store.Namespace{Name: "workers", Limit: 1024, Tolerance: time.Second}
	sf, err := idgen.NewSnowflake(ctx, st, ns, "host-a", idgen.SnowflakeOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		// Close releases the slot with the highest timestamp used, so the
		// slot's next holder starts above it.
		if err := sf.Close(ctx); err != nil {
			log.Print(err)
		}
	}()

	a, err := sf.NextID(ctx)
	if err != nil {
		log.Fatal(err) // e.g. idgen.ErrLeaseLost: stop issuing, open a new one
	}
	b, err := sf.NextID(ctx)
	if err != nil {
		log.Fatal(err)
	}
	ts, worker, _ := sf.Layout().Decode(b)
	fmt.Println("increasing:", b > a)
	fmt.Println("worker is the lease's slot:", int(worker) == sf.Session().Lease().Slot)
	fmt.Println("about now:", time.Since(sf.Layout().Time(ts)) < time.Minute)
	// Output:
	// increasing: true
	// worker is the lease's slot: true
	// about now: true
}

// A program chooses its kind of IDs in one line: both generators are a
// Generator.
func ExampleGenerator() {
	st, err := store.Open("memory", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()

	for _, kind := range []string{"segment", "snowflake"} {
		var gen idgen.Generator
		switch kind {
		case "segment":
			gen, err = idgen.NewSegment(ctx, st, "orders", idgen.SegmentOptions{})
		case "snowflake":
			ns := store.Namespace{Name: "workers", Limit: 1024, Tolerance: time.Second}
			gen, err = idgen.NewSnowflake(ctx, st, ns, "host-a", idgen.SnowflakeOptions{})
		}
		if err != nil {
			log.Fatal(err)
		}
		a, err := gen.NextID(ctx)
		if err != nil {
			log.Fatal(err)
		}
		b, err := gen.NextID(ctx)
		if err != nil {
			log.Fatal(err)
		}
		if err := gen.Close(ctx); err != nil {
			log.Fatal(err)
		}
		fmt.Println(kind, "IDs increase:", b > a)
	}
	// Output:
	// segment IDs increase: true
	// snowflake IDs increase: true
}

func ExampleSession() {
	st, err := store.Open("memory", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()

	ns := store.Namespace{Name: "workers", Limit: 16, Tolerance: time.Second}
	s, err := idgen.NewSession(ctx, st, ns, "host-a", idgen.SessionOptions{Acquire: store.AcquireOptions{TTL: 30 * time.Second}})
	if err != nil {
		log.Fatal(err)
	}
	// A generator of its own checks the lease before each timestamp t it
	// issues, and keeps Floor <= t < Ceiling.
	lease, err := s.Check(time.Now().UnixMilli())
	fmt.Println("slot below the limit:", lease.Slot < ns.Limit, "valid:", err == nil)

	if err := s.Close(ctx); err != nil {
		log.Fatal(err)
	}
	<-s.Done()
	fmt.Println("after Close:", s.Err())
	// Output:
	// slot below the limit: true valid: true
	// after Close: idgen: closed
}
