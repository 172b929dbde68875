// Command reserve issues IDs from the two generators of package idgen (a
// segment generator on a range key, and a Snowflake generator on a leased
// worker slot), then shows the store calls underneath: reserving ranges and
// leasing a slot. By default it runs on SQLite, in a file in the user's
// cache directory (its path is printed), so a second run continues above
// every value of the first. Point it elsewhere with
//
//	go run ./examples/reserve -o path=/tmp/ids.db
//	go run ./examples/reserve -driver zookeeper -o connectString=127.0.0.1:2181
//	go run ./examples/reserve -driver postgres -o connString=postgres://localhost/ids
//	go run ./examples/reserve -driver memory
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cosid-go/store"
	_ "github.com/cosid-go/store/drivers/memory"
	_ "github.com/cosid-go/store/drivers/postgres"
	_ "github.com/cosid-go/store/drivers/sqlite"
	_ "github.com/cosid-go/store/drivers/zookeeper"
	"github.com/cosid-go/store/idgen"
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
	driverName := flag.String("driver", "sqlite", "driver: one of "+strings.Join(store.Drivers(), ", "))
	flag.Var(options, "o", "driver option key=value (repeatable), e.g. -o connectString=127.0.0.1:2181")
	key := flag.String("key", "orders", "range key")
	step := flag.Int64("step", 100, "values per range")
	ranges := flag.Int("ranges", 3, "ranges to reserve")
	ns := flag.String("namespace", "workers", "slot namespace")
	limit := flag.Int("limit", 1024, "slots in the namespace")
	owner := flag.String("owner", "example-host", "owner key of the worker slot")
	ids := flag.Int("ids", 5, "IDs to issue from each generator")
	flag.Parse()

	space := store.Namespace{Name: *ns, Limit: *limit, Tolerance: time.Second}
	if *driverName == "sqlite" && options["path"] == "" {
		path, err := defaultPath()
		if err != nil {
			fmt.Fprintln(os.Stderr, "reserve:", err)
			os.Exit(1)
		}
		options["path"] = path
	}
	if p := options["path"]; *driverName == "sqlite" {
		fmt.Printf("store: SQLite file %s (run again: it continues above these values)\n", p)
	}
	if err := reserve(*driverName, options, *key, *step, *ids, *ranges, space, *owner); err != nil {
		fmt.Fprintln(os.Stderr, "reserve:", err)
		os.Exit(1)
	}
}

// defaultPath is the example's SQLite file in the user's cache directory.
func defaultPath() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the default SQLite file (give -o path=...): %w", err)
	}
	dir = filepath.Join(dir, "cosid-store")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return filepath.Join(dir, "reserve.db"), nil
}

func reserve(driverName string, options map[string]string, key string, step int64, ids, ranges int, ns store.Namespace, owner string) error {
	st, err := store.Open(driverName, options)
	if err != nil {
		return err
	}
	defer st.Close()
	ctx := context.Background()
	if err := generate(ctx, st, key, step, ids, ns, owner); err != nil {
		return err
	}
	return run(ctx, st, key, step, ranges, ns, owner)
}

// generate issues n IDs from each generator: what a service does.
func generate(ctx context.Context, st *store.Store, key string, step int64, n int, ns store.Namespace, owner string) error {
	seg, err := idgen.NewSegment(ctx, st, key, idgen.SegmentOptions{Step: step})
	if err != nil {
		return err
	}
	defer seg.Close(ctx)
	var out []string
	for i := 0; i < n; i++ {
		id, err := seg.NextID(ctx)
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprint(id))
	}
	fmt.Printf("segment IDs from %q (ranges of %d): %s\n", key, step, strings.Join(out, " "))

	sf, err := idgen.NewSnowflake(ctx, st, ns, owner, idgen.SnowflakeOptions{Acquire: store.AcquireOptions{TTL: 30 * time.Second}})
	if err != nil {
		return err
	}
	var first int64
	out = out[:0]
	for i := 0; i < n; i++ {
		id, err := sf.NextID(ctx)
		if err != nil {
			sf.Close(ctx)
			return err
		}
		if i == 0 {
			first = id
		}
		out = append(out, fmt.Sprint(id))
	}
	fmt.Printf("snowflake IDs from worker %d of %q: %s\n", sf.Worker(), ns.Name, strings.Join(out, " "))
	l := sf.Layout()
	ts, worker, seq := l.Decode(first)
	fmt.Printf("  %d = time %s, worker %d, sequence %d (%d/%d/%d bits)\n", first,
		l.Time(ts).UTC().Format("2006-01-02 15:04:05.000"), worker, seq, l.TimestampBits, l.WorkerBits, l.SequenceBits)
	// Close releases the slot with the highest timestamp used: the slot's
	// next term (below) starts right above it.
	return sf.Close(ctx)
}

// run makes the store calls the generators make.
func run(ctx context.Context, st *store.Store, key string, step int64, n int, ns store.Namespace, owner string) error {
	fmt.Println("underneath:")
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
