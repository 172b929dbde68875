// Command reserve reserves ID ranges and leases a worker slot, the two calls
// an ID generator makes at start-up. It runs on the in-memory driver by
// default; point it at ZooKeeper with
//
//	go run ./examples/reserve -driver zookeeper -o connectString=127.0.0.1:2181
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cosid-go/store"
	_ "github.com/cosid-go/store/drivers/memory"
)

type optionFlags map[string]string

func (o optionFlags) String() string { return fmt.Sprint(map[string]string(o)) }
func (o optionFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("option %q is not key=value", s)
	}
	o[k] = v
	return nil
}

func main() {
	options := optionFlags{}
	driverName := flag.String("driver", "memory", "driver: one of "+strings.Join(store.Drivers(), ", "))
	flag.Var(options, "o", "driver option key=value (repeatable), e.g. -o connectString=127.0.0.1:2181")
	key := flag.String("key", "orders", "range key")
	step := flag.Int64("step", 100, "values per range")
	ranges := flag.Int("ranges", 3, "ranges to reserve")
	ns := flag.String("namespace", "workers", "slot namespace")
	limit := flag.Int("limit", 1024, "slots in the namespace")
	owner := flag.String("owner", "example-host", "owner key of the worker slot")
	flag.Parse()

	if err := run(*driverName, options, *key, *step, *ranges, store.Namespace{Name: *ns, Limit: *limit, Tolerance: time.Second}, *owner); err != nil {
		fmt.Fprintln(os.Stderr, "reserve:", err)
		os.Exit(1)
	}
}

func run(driverName string, options map[string]string, key string, step int64, n int, ns store.Namespace, owner string) error {
	st, err := store.Open(driverName, options)
	if err != nil {
		return err
	}
	defer st.Close()
	ctx := context.Background()

	for i := 0; i < n; i++ {
		r, err := st.Ranges().Next(ctx, key, step)
		if err != nil {
			return err
		}
		fmt.Printf("range %q: [%d, %d)\n", key, r.Start, r.End)
	}

	lease, err := st.Slots().Acquire(ctx, ns, owner, store.AcquireOptions{TTL: 30 * time.Second})
	if err != nil {
		return err
	}
	fmt.Printf("worker slot %d of %q for %s: fence %d, timestamps in [%s, %s)\n",
		lease.Slot, ns.Name, owner, lease.Fence, ms(lease.Floor), ms(lease.Ceiling))
	if lease, err = st.Slots().Renew(ctx, lease); err != nil {
		return err
	}
	fmt.Printf("renewed: expires at %s\n", ms(lease.ExpiresAt))
	if err := st.Slots().ReleaseUsed(ctx, lease, time.Now().UnixMilli()); err != nil {
		return err
	}
	fmt.Println("released")
	return nil
}

func ms(t int64) string {
	if t == 0 {
		return "0" // a slot never used before: no earlier term to stay above
	}
	return time.UnixMilli(t).UTC().Format("15:04:05.000")
}
