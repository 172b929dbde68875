// Package memory is the in-process driver of package store: the reference
// semantics of ranges, slot leases and locks, and the default for examples
// and unit tests. It is also the commented reference for driver authors
// (see the walkthrough in package driver's documentation): slots.go is the
// slot rules of driver.SlotRecord on a map under one mutex.
//
// It is not persistent: a state lives in the process and ends with it, so
// its TCK test sets tck.Suite.NotPersistent.
//
// # Opening
//
//	import _ "github.com/cosid-go/store/drivers/memory"
//
//	st, err := store.Open("memory", map[string]string{"name": "orders"})
//
// or, without the registry, memory.OpenStore(&memory.Options{Name: "orders"}).
//
// # Options
//
//   - name: stores opened with the same non-empty name share one state, as
//     processes sharing one ZooKeeper ensemble would. Without a name a store
//     gets a private state of its own.
//   - create (true): false opens only a state of this name that the process
//     has already (ErrNotFound otherwise), creating none.
//
// Each state has a random identity, made with it (driver.Identifier).
//
// A named state lives as long as the program: it outlives the stores that
// use it, so a store reopened under the same name finds the data again, like
// a client reconnecting to a server. Tests that need a fresh state use a
// name of their own.
//
// # Clock
//
// Lease times are time.Now().UnixMilli(), the local clock standing in for
// the server's mtime.
package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

func init() { store.Register("memory", fromOptions) }

// fromOptions opens a memory store. It is the driver's factory; the only option is
// name (see the package documentation). An unknown option is an error.
func fromOptions(options map[string]string) (driver.Store, error) {
	o := driver.NewOptions(options)
	name := o.String("name", "")
	create := o.Bool(driver.OptionCreate, true)
	if err := o.Err(); err != nil {
		return nil, err
	}
	if !create && !exists(name) {
		return nil, fmt.Errorf("memory: no store at name %q in this process (create=false): %w", name, driver.ErrNotFound)
	}
	return newDriver(name), nil
}

// exists reports whether the process has a state called name.
func exists(name string) bool {
	registry.Lock()
	defer registry.Unlock()
	return registry.m[name] != nil
}

// Options configure a memory store opened with OpenStore.
type Options struct {
	// Name: stores opened with the same non-empty Name share one state, as
	// processes sharing one server would; with an empty Name a store gets
	// a private state of its own (see the package documentation).
	Name string
}

// OpenStore opens a memory store, on the shared state opts.Name, or on a
// private state when opts is nil or its Name is empty. storeOpts are the
// portable settings, as for store.Open.
func OpenStore(opts *Options, storeOpts ...store.Option) (*store.Store, error) {
	var name string
	if opts != nil {
		name = opts.Name
	}
	d := newDriver(name)
	st, err := store.OpenDriver(d, storeOpts...)
	if err != nil {
		d.Close()
		return nil, err
	}
	return st, nil
}

// newDriver opens a memory store on the shared state called name, or on a private
// state when name is empty.
func newDriver(name string) *driverStore {
	return &driverStore{st: sharedState(name), done: make(chan struct{}), entries: map[*lockEntry]struct{}{}}
}

// driverStore is an open memory store. It implements driver.Store,
// driver.RangeStore, driver.SlotLeaseStore and driver.Locker, and the optional
// driver.SlotSeeder, driver.Purger and driver.Pinger.
type driverStore struct {
	st   *state
	done chan struct{} // closed by Close: ends this store's lock waits

	// Guarded by st.mu, so that Close and the lock queues change together.
	closed  bool
	entries map[*lockEntry]struct{} // this store's lock holds and waits
}

var (
	_ driver.RangeStore     = (*driverStore)(nil)
	_ driver.RangeAdvancer  = (*driverStore)(nil)
	_ driver.SlotLeaseStore = (*driverStore)(nil)
	_ driver.Locker         = (*driverStore)(nil)
	_ driver.SlotSeeder     = (*driverStore)(nil)
	_ driver.LayoutKeeper   = (*driverStore)(nil)
	_ driver.Purger         = (*driverStore)(nil)
	_ driver.LockSealer     = (*driverStore)(nil)
	_ driver.Pinger         = (*driverStore)(nil)
	_ driver.Identifier     = (*driverStore)(nil)
)

// StoreID returns the state's identity (driver.Identifier).
func (s *driverStore) StoreID(ctx context.Context) (string, error) {
	if err := s.begin(ctx); err != nil {
		return "", err
	}
	defer s.st.mu.Unlock()
	return s.st.id, nil
}

// Ping takes the state's mutex once: the round trip of a memory store.
func (s *driverStore) Ping(ctx context.Context) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	s.st.mu.Unlock()
	return nil
}

// state is what stores of one name share: the stand-in for a server.
type state struct {
	mu     sync.Mutex
	id     string       // the identity, random
	clock  func() int64 // milliseconds since the epoch; replaced by tests
	ranges map[string]*rangeEntry
	spaces map[string]*namespace
	locks  map[string]*lockQueue
	// The keys and lock names sorted, for the listings' pages
	// (listing.go); purges counts the purges, which invalidate them.
	rangeIndex, lockIndex sortedKeys
	purges                int64
	fences                int64 // last lock fence handed out; only grows, like a czxid
	// locksSealed is closed by SealLocks: waiters queued before wake and
	// give up. A purge keeps it, like the fences.
	locksSealed chan struct{}
	// slotFenceFloor is the highest slot fence a purge deleted: slots of
	// namespaces created later start above it, so no fence repeats.
	slotFenceFloor int64
}

var registry = struct {
	sync.Mutex
	m map[string]*state
}{m: map[string]*state{}}

func sharedState(name string) *state {
	if name == "" {
		return newState()
	}
	registry.Lock()
	defer registry.Unlock()
	st, ok := registry.m[name]
	if !ok {
		st = newState()
		registry.m[name] = st
	}
	return st
}

func newState() *state {
	return &state{
		id:     driver.NewStoreID(),
		clock:  func() int64 { return time.Now().UnixMilli() },
		ranges: map[string]*rangeEntry{},
		spaces: map[string]*namespace{},
		locks:  map[string]*lockQueue{},

		locksSealed: make(chan struct{}),
	}
}

// begin starts an operation: it takes the state's mutex, unless the store is
// closed or ctx has ended. On success the caller must call s.st.mu.Unlock.
func (s *driverStore) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.st.mu.Lock()
	if s.closed {
		s.st.mu.Unlock()
		return driver.ErrClosed
	}
	return nil
}

// Close ends the store: its lock waits return ErrClosed, and the locks it
// holds or waits for leave their queues (the next waiter moves up) and have
// their Lost channels closed, as a ZooKeeper session's ephemeral nodes
// vanish with it. Leases are not touched: they expire as they would after a
// crash. Closing twice returns nil.
func (s *driverStore) Close() error {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	close(s.done)
	for e := range s.entries {
		s.st.dequeue(e)
		e.lose()
	}
	return nil
}
