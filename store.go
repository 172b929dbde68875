// Package store gives distributed ID generators their coordination
// primitives behind one pluggable API, the way database/sql does for SQL.
//
// # Capabilities
//
//   - Ranges (RangeStore): a counter per key, advanced in ranges, that never
//     hands out a value twice: segment IDs.
//   - Slots (SlotLeaseStore): worker slots 0..limit-1 of a namespace, leased
//     with a ttl, a fencing token and timestamp floors and ceilings: the worker
//     IDs of Snowflake-style generators.
//   - Locks (Locker): a fair lock with a fencing token and a lost signal.
//
// # Opening a store
//
// Drivers register themselves; an application imports the ones it uses:
//
//	import _ "github.com/cosid-go/store/drivers/zookeeper"
//
//	st, err := store.Open("zookeeper", map[string]string{"connectString": "zk1:2181"})
//	defer st.Close()
//	r, err := st.Ranges().Next(ctx, "orders", 1000) // [r.Start, r.End)
//
// Every operation takes a context, and a store-wide timeout (default 3s)
// bounds each operation as a whole, retries included. Errors wrap the
// sentinel values (ErrSealed, ErrExhausted, ...) for errors.Is; an operation
// that ran out of time with no server answering wraps ErrUnavailable as well
// as context.DeadlineExceeded.
//
// # Names
//
// A range key is one or more '/'-separated segments; a namespace, an owner
// key and a lock name are one segment. Every driver accepts the same names,
// checked before a driver sees them: a key or name is at most MaxKeyLen
// bytes of valid UTF-8; no segment is empty, "." or "..", or only white
// space; none holds a control or format character (Unicode categories Cc and Cf, such as the
// bidi control U+202E or the zero-width U+200B and U+FEFF, which make
// names that look alike or read reversed), and none of the characters
// ZooKeeper refuses in paths (U+D800-U+F8FF, U+FFF0-U+FFFF, and anything
// above U+FFFF). A refused name is ErrInvalidArgument, with a message that
// quotes it, a long one shortened to its first and last bytes and length.
//
// # Operating a store
//
// OpenContext bounds the opening by a context; Ping makes one round trip.
// WithLogger logs connection state changes, retries, writes with an unknown
// outcome and lost leases and locks (never each successful call); a store
// without it is silent. WithObserver is a hook without dependencies: it sees
// every call (operation, key, duration, outcome) and every event of the
// store, its driver and the generators of package idgen. Package otelstore,
// a module of its own, turns it into OpenTelemetry metrics.
package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/cosid-go/store/driver"
)

// DefaultTimeout bounds each store operation unless WithTimeout says otherwise.
const DefaultTimeout = 3 * time.Second

// Store is an open store. It is safe for concurrent use. Close it when done.
type Store struct {
	drv         driver.Store
	driverName  string // DriverName's
	timeout     time.Duration
	owner       string
	incarnation string
	label       string // WithIncarnation's, prefixed to the random incarnation
	maxStep     int64
	listPage    int // entries per driver call of a listing (listing.go)

	onStart []func(context.Context, OpStart) context.Context // Observer.Start of every WithObserver
	onEnd   []func(context.Context, OpEnd)                   // Observer.End of every WithObserver

	logger  *slog.Logger   // nil: silent
	onEvent []func(Event)  // Observer.Event of every WithObserver
	watches sync.WaitGroup // lock watchers (locks.go), ended by Close
	single  bool           // WithCoalescing(false): one write per Next
	batches coalescer      // Next calls sharing writes (coalesce.go)
	bounds  deadlines      // the timers of the store timeout (deadline.go)

	mu     sync.RWMutex
	closed bool
}

// Option sets a portable store setting.
type Option func(*Store) error

// WithTimeout bounds each operation as a whole, retries included. Calls
// share the timers of their deadlines, so each is given at least 63/64 of
// d, and ends within d.
func WithTimeout(d time.Duration) Option {
	return func(s *Store) error {
		if d <= 0 {
			return invalid("timeout %v must be positive", d)
		}
		s.timeout = d
		return nil
	}
}

// WithOwner sets the owner key recorded with the locks this store takes
// (default: the host name).
func WithOwner(owner string) Option {
	return func(s *Store) error {
		if err := checkName("owner", owner); err != nil {
			return err
		}
		s.owner = owner
		return nil
	}
}

// WithIncarnation gives this store's incarnation a readable label, such as
// a pod name. The incarnation the store's leases are taken under is the
// label, a '-' and a random 64-bit value chosen at open (without a label:
// the random value alone), so that it names one run however the label is
// chosen: two processes given the same owner and label never share a
// term, and a restarted process never continues its earlier run's term
// (a term of the same owner under another incarnation is taken over only
// with AcquireOptions.Reclaim, starting above anything it could have
// issued). The label is 1 to MaxIncarnationLabel bytes.
func WithIncarnation(label string) Option {
	return func(s *Store) error {
		if err := checkIncarnation(label, MaxIncarnationLabel); err != nil {
			return err
		}
		s.label = label
		return nil
	}
}

// DefaultMaxStep is the largest step RangeStore.Next accepts unless
// WithMaxStep says otherwise. A range is never given back, so a step typed
// wrong (math.MaxInt64 for 1000) would use up its key for good; a million
// (Leaf's cap too) is far above what a segment generator needs per call.
const DefaultMaxStep = 1_000_000

// WithMaxStep sets the largest step RangeStore.Next accepts (default
// DefaultMaxStep); math.MaxInt64 lifts the limit.
func WithMaxStep(n int64) Option {
	return func(s *Store) error {
		if n < 1 {
			return invalid("maximum step %d is less than 1", n)
		}
		s.maxStep = n
		return nil
	}
}

// MaxStep returns the largest step RangeStore.Next accepts.
func (s *Store) MaxStep() int64 { return s.maxStep }

func newStore(opts []Option) (*Store, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("store: incarnation: %w", err)
	}
	host, err := os.Hostname()
	if err != nil || checkName("owner", host) != nil {
		host = "unknown-host"
	}
	s := &Store{
		timeout:     DefaultTimeout,
		owner:       host,
		incarnation: hex.EncodeToString(b[:]),
		maxStep:     DefaultMaxStep,
		listPage:    DefaultListPage,
	}
	s.batches.bounds = &s.bounds
	for _, o := range opts {
		if err := o(s); err != nil {
			return nil, fmt.Errorf("store: %w", err)
		}
	}
	if s.label != "" {
		s.incarnation = s.label + "-" + s.incarnation
	}
	return s, nil
}

// Incarnation returns the incarnation of this store's leases: the
// WithIncarnation label, if any, and a random part chosen at open.
func (s *Store) Incarnation() string { return s.incarnation }

// Timeout returns the per-operation timeout.
func (s *Store) Timeout() time.Duration { return s.timeout }

// DriverName returns the name of the store's driver: the name given to
// Open, or, for a store opened by a driver's own constructor (OpenDriver),
// the last element of the driver's package path ("sqlite"). It is for
// status pages and metrics.
func (s *Store) DriverName() string { return s.driverName }

// Raw calls f with the store's driver, for what the portable API leaves
// out: asking which optional driver interfaces it implements, or calling a
// driver's own operations (as database/sql's Conn.Raw does). Calls made on
// d skip the store's argument checks, timeout and observers. d is f's only
// while f runs: f must not keep it or use it after returning. On a closed
// store Raw returns ErrClosed without calling f; otherwise f's error.
func (s *Store) Raw(f func(d driver.Store) error) error {
	if s.isClosed() {
		return &Error{Op: "Raw", Err: ErrClosed}
	}
	return f(s.drv)
}

// Ranges returns the store's RangeStore.
func (s *Store) Ranges() *RangeStore { return &RangeStore{s: s} }

// Slots returns the store's SlotLeaseStore.
func (s *Store) Slots() *SlotLeaseStore { return &SlotLeaseStore{s: s} }

// Locks returns the store's Locker.
func (s *Store) Locks() *Locker { return &Locker{s: s} }

// Close closes the driver store, ending everything it started, and makes
// every later operation fail with ErrClosed. Locks held through the store are
// lost. Closing twice returns nil.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.batches.close()
	err := s.drv.Close()
	s.watches.Wait() // the driver closed every lock's Lost
	s.batches.wait() // the driver ended the writes in flight
	if err != nil {
		return &Error{Op: "Close", Err: err}
	}
	return nil
}

// Ping makes one round trip to the backend, within the store timeout.
// Drivers without the capability give ErrUnsupported.
func (s *Store) Ping(ctx context.Context) error {
	return callErr(ctx, s, op{name: "Ping"}, func(ctx context.Context, d driver.Pinger) error {
		return d.Ping(ctx)
	})
}

func (s *Store) isClosed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed
}

// closedErr maps any failure after Close to ErrClosed, so callers see one
// reason rather than the driver's view of a torn-down connection.
func (s *Store) closedErr(err error) error {
	if s.isClosed() {
		return fmt.Errorf("%w (%v)", ErrClosed, err)
	}
	return err
}

// ID returns the store's identity: a random value kept in the store's own
// metadata since it was created, equal for every spelling of the options
// that reach the same storage (two paths to one file, two names of one
// server). Tools compare identities to refuse writing a store into itself.
// Drivers without the capability give ErrUnsupported; a store created
// before identities existed, opened with create=false, gives ErrNotFound
// (a store opened with create, the default, gives it one).
func (s *Store) ID(ctx context.Context) (string, error) {
	return call(ctx, s, op{name: "ID"}, func(ctx context.Context, d driver.Identifier) (string, error) {
		return d.StoreID(ctx)
	})
}

// Purge deletes everything the store keeps, and returns what it deleted.
// Run it only with every instance that uses the store stopped: a range key
// deleted under a running store would hand out its values again. While a
// lock is held or waited on, or a lease's term is not released and its
// ceiling is ahead of the store's clock, it deletes nothing and gives
// ErrLocked (see driver.Purger). Drivers without the capability give
// ErrUnsupported.
func (s *Store) Purge(ctx context.Context) ([]string, error) {
	return call(ctx, s, op{name: "Purge"}, func(ctx context.Context, d driver.Purger) ([]string, error) {
		return d.Purge(ctx)
	})
}

// nonNil makes listings empty rather than nil, whatever the driver returns,
// so callers and JSON output see [] for "nothing".
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
