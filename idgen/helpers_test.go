package idgen_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	_ "github.com/cosid-go/store/drivers/memory"
	"github.com/cosid-go/store/idgen"
	"github.com/cosid-go/store/internal/testing/leakcheck"
	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/poll"
	"github.com/cosid-go/store/internal/testing/rawdriver"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestMain checks for leaked goroutines, and (zktest.Wrap, pgtest.Wrap)
// that no ZooKeeper or PostgreSQL server outlives the tests.
func TestMain(m *testing.M) { leakcheck.VerifyTestMain(pgtest.Wrap(zktest.Wrap(m))) }

// backend opens driver stores on one shared storage: each call acts as a
// separate process. Tests take one so that another driver can be swapped
// in (a ZooKeeper backend opens each store on one chroot).
type backend func(t *testing.T) driver.Store

var nameSeq atomic.Int64

// memoryBackend shares a memory state of the test's own.
func memoryBackend(t *testing.T) backend {
	name := fmt.Sprintf("idgen/%s#%d", t.Name(), nameSeq.Add(1))
	return func(t *testing.T) driver.Store { return rawDriver(t, "memory", map[string]string{"name": name}) }
}

// rawDriver opens a store through the registry and returns its driver, for
// a test wrapper (faulty) that sits between it and a store of its own; that
// store's Close closes the driver.
func rawDriver(t *testing.T, driverName string, options map[string]string) driver.Store {
	t.Helper()
	st, err := store.Open(driverName, options)
	if err != nil {
		t.Fatalf("open a %s store: %v", driverName, err)
	}
	return rawdriver.Of(st)
}

// faulty wraps a driver store; its gates decide each Next, Acquire and
// Renew, and skew moves the expiry an Acquire returns back by that many
// milliseconds, as a store whose clock is behind would.
type faulty struct {
	driver.Store
	driver.RangeStore
	driver.SlotLeaseStore
	driver.LayoutKeeper  // passed through: every driver these tests use has it
	next, acquire, renew gate
	skew                 atomic.Int64
}

func (f *faulty) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	if err := f.acquire.pass(ctx); err != nil {
		return driver.Lease{}, err
	}
	l, err := f.SlotLeaseStore.Acquire(ctx, req)
	l.ExpiresAt -= f.skew.Load()
	return l, err
}

func (f *faulty) Next(ctx context.Context, key string, step int64) (int64, error) {
	if err := f.next.pass(ctx); err != nil {
		return 0, err
	}
	return f.RangeStore.Next(ctx, key, step)
}

func (f *faulty) Renew(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	if err := f.renew.pass(ctx); err != nil {
		return l, err
	}
	return f.SlotLeaseStore.Renew(ctx, l)
}

// gate lets calls through, fails them, or holds them until released.
type gate struct {
	mu      sync.Mutex
	free    int           // calls let through before holding starts (with held set)
	held    chan struct{} // non-nil: calls wait until it is closed
	fail    error         // non-nil: calls fail with it
	calls   int
	entered chan struct{} // gets a token each time a call is held
}

func (g *gate) pass(ctx context.Context) error {
	g.mu.Lock()
	g.calls++
	fail, held := g.fail, g.held
	if held != nil && g.free > 0 {
		g.free--
		held = nil
	}
	entered := g.entered
	g.mu.Unlock()
	if fail != nil {
		return fail
	}
	if held != nil {
		select {
		case entered <- struct{}{}:
		default:
		}
		select {
		case <-held:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// hold makes calls after the next free ones wait; the returned function
// lets every held and later call through.
func (g *gate) hold(free int) (release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	held := make(chan struct{})
	g.held, g.free, g.entered = held, free, make(chan struct{}, 100)
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.held = nil
			close(held)
		})
	}
}

// waitHeld waits until a call is held.
func (g *gate) waitHeld(t *testing.T) {
	t.Helper()
	g.mu.Lock()
	entered := g.entered
	g.mu.Unlock()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no store call was held within 10s")
	}
}

func (g *gate) setFail(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.fail = err
}

func (g *gate) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls
}

// open opens a portable store on b, over a faulty wrapper; it is closed when
// the test ends.
func open(t *testing.T, b backend, opts ...store.Option) (*store.Store, *faulty) {
	t.Helper()
	d := b(t)
	f := &faulty{Store: d}
	f.RangeStore, _ = d.(driver.RangeStore)
	f.SlotLeaseStore, _ = d.(driver.SlotLeaseStore)
	f.LayoutKeeper, _ = d.(driver.LayoutKeeper)
	st, err := store.OpenDriver(f, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, f
}

// fakeClock is a settable wall clock; waitReads lets a test know a
// generator has looked at it (and so is waiting for it).
type fakeClock struct {
	ms    atomic.Int64
	reads atomic.Int64
	read  chan struct{}
}

func newFakeClock(ms int64) *fakeClock {
	c := &fakeClock{read: make(chan struct{}, 1)}
	c.ms.Store(ms)
	return c
}

func (c *fakeClock) Now() time.Time {
	c.reads.Add(1)
	select {
	case c.read <- struct{}{}:
	default:
	}
	return time.UnixMilli(c.ms.Load())
}

func (c *fakeClock) set(ms int64)        { c.ms.Store(ms) }
func (c *fakeClock) add(d time.Duration) { c.ms.Add(d.Milliseconds()) }
func (c *fakeClock) readsSoFar() int64   { return c.reads.Load() }
func (c *fakeClock) waitReads(t *testing.T, n int64) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for c.reads.Load() < n {
		select {
		case <-c.read:
		case <-deadline:
			t.Fatalf("the clock was read %d times, want %d", c.reads.Load(), n)
		}
	}
}

// eventually polls cond (a state no event announces) until it holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 10*time.Second, what, cond)
}

// waitUntil waits for the local clock to reach ms: a known instant, such as
// a lease's expiry.
func waitUntil(ms int64) {
	if d := time.Until(time.UnixMilli(ms)); d > 0 {
		time.Sleep(d)
	}
}

// unique reports the first value found twice, if any.
func unique(t *testing.T, what string, ids []int64) {
	t.Helper()
	s := slices.Clone(ids)
	slices.Sort(s)
	for i := 1; i < len(s); i++ {
		if s[i] == s[i-1] {
			t.Fatalf("%s: %d issued twice (of %d IDs)", what, s[i], len(s))
		}
	}
}

// increasing reports a value not above its predecessor.
func increasing(t *testing.T, what string, ids []int64) {
	t.Helper()
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("%s: ID %d (%d) is not above the one before (%d)", what, i, ids[i], ids[i-1])
		}
	}
}

// closedAtEnd returns a generator just opened, closed when the test ends,
// or stops the test on the error that refused it.
func closedAtEnd[G idgen.Generator](t *testing.T, g G, err error) G {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close(context.Background()) })
	return g
}

// takeInOrder is one goroutine's share of a no-duplicates test: n IDs from
// g, each above the one before. A failing NextID is reported, and then
// none of the goroutine's IDs are (the test's count comes up short).
func takeInOrder(t *testing.T, g idgen.Generator, n int) []int64 {
	ids := make([]int64, 0, n)
	for range n {
		id, err := g.NextID(t.Context())
		if err != nil {
			t.Errorf("NextID: %v", err)
			return nil
		}
		ids = append(ids, id)
	}
	increasing(t, "one goroutine's IDs", ids)
	return ids
}

// collector gathers IDs from goroutines.
type collector struct {
	mu  sync.Mutex
	ids []int64
}

func (c *collector) add(ids ...int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ids = append(c.ids, ids...)
}

func (c *collector) all() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.ids)
}

// wantUnique wants n IDs gathered, none twice.
func (c *collector) wantUnique(t *testing.T, what string, n int) {
	t.Helper()
	ids := c.all()
	if len(ids) != n {
		t.Fatalf("got %d IDs, want %d", len(ids), n)
	}
	unique(t, what, ids)
}
