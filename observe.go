package store

import (
	"context"
	"errors"
	"time"

	"github.com/cosid-go/store/driver"
)

// Observer receives what a store does, for metrics and tracing; it depends
// on nothing, and adapters (package otelstore) turn it into metrics. Nil
// fields are skipped. The functions are called synchronously on the
// caller's goroutine (a driver's events during a coalesced Next's write, on
// the store's goroutine making it), possibly concurrently: they must be
// quick and must not block, nor call Close.
type Observer struct {
	// Start is called once per call of the portable API, as it begins,
	// with the caller's context; the context it returns is the one the
	// driver gets and End is given (a tracer puts its span there). It must
	// derive from ctx. The Start hooks of several observers are chained in
	// the order of WithObserver.
	Start func(ctx context.Context, e OpStart) context.Context
	// End is called once per call of the portable API, when it returns,
	// with the context Start returned (the caller's if no Start).
	End func(ctx context.Context, e OpEnd)
	// Event is called for everything that is not the result of a call:
	// connection state changes and retries from drivers that report them
	// (driver.Notifier), locks taken, released and lost, leases lost, and
	// the events of the generators of package idgen.
	Event func(Event)
}

// WithObserver adds o to the store's observers. Every driver gets the End
// calls; Event calls come from what the driver and the caller report.
func WithObserver(o Observer) Option {
	return func(s *Store) error {
		if o.Start != nil {
			s.onStart = append(s.onStart, o.Start)
		}
		if o.End != nil {
			s.onEnd = append(s.onEnd, o.End)
		}
		if o.Event != nil {
			s.onEvent = append(s.onEvent, o.Event)
		}
		return nil
	}
}

// OpStart is a call of the portable API as it begins.
type OpStart struct {
	Op  string // "Next", "Acquire", "Lock", ...
	Key string // the key, namespace, slot ("ns/3") or lock name; "" for listings
}

// OpEnd is one call of the portable API, once it returned.
type OpEnd struct {
	Op       string // "Next", "Acquire", "Lock", ...
	Key      string // the key, namespace, slot ("ns/3") or lock name; "" for listings
	Duration time.Duration
	Err      error  // nil on success
	Outcome  string // "ok", or the kind of Err (see Outcome)
	// Retries counts the times the driver tried the operation again after
	// a connection loss (drivers that retry: zookeeper). The retries of a
	// write shared by coalesced calls of Next are counted once, by the call
	// whose context the write carries (the first of its batch).
	Retries int
}

// Outcome names the kind of err in a few words fit for a metric label:
// "ok" for nil, the sentinel it wraps ("sealed", "lease_lost", ...),
// "unavailable" (before "deadline_exceeded": an unavailable error is both),
// "deadline_exceeded", "canceled", or "other".
func Outcome(err error) string {
	if err == nil {
		return "ok"
	}
	for _, k := range outcomes {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "other"
}

var outcomes = []struct {
	err  error
	name string
}{
	{ErrUnavailable, "unavailable"},
	{ErrSealed, "sealed"},
	{ErrExhausted, "exhausted"},
	{ErrLeaseLost, "lease_lost"},
	{ErrInvalidArgument, "invalid_argument"},
	{ErrCorrupt, "corrupt"},
	{ErrRecreated, "recreated"},
	{ErrConfigMismatch, "config_mismatch"},
	{ErrUnsupported, "unsupported"},
	{ErrClosed, "closed"},
	{ErrLocked, "locked"},
	{ErrNotFound, "not_found"},
	{context.DeadlineExceeded, "deadline_exceeded"},
	{context.Canceled, "canceled"},
}

// EventKind says what an Event reports.
type EventKind string

// The events of a store and of the generators built on it. The first five
// are the driver's (driver.EventKind), passed on as they are (eventOf).
const (
	// Connected: a session with Server (SessionID, negotiated Timeout).
	Connected = EventKind(driver.Connected)
	// Disconnected: the connection was lost; the session may live on.
	Disconnected = EventKind(driver.Disconnected)
	// Expired: the server ended the session; locks held on it are lost.
	Expired = EventKind(driver.Expired)
	// Retry: an operation on Key is tried again (Attempt) after Err.
	Retry = EventKind(driver.Retry)
	// UnknownOutcome: a write on Key whose outcome is unknown was given up;
	// Count values from Value on are skipped, never handed out (a gap).
	UnknownOutcome = EventKind(driver.UnknownOutcome)

	// LockAcquired, LockReleased, LockLost: lock Key (with its Fence) was
	// taken, unlocked, or lost (Err says why).
	LockAcquired EventKind = "lock_acquired"
	LockReleased EventKind = "lock_released"
	LockLost     EventKind = "lock_lost"

	// LeaseAcquired, LeaseRenewed: the lease of slot Key ("ns/3") runs until
	// Deadline, in the local clock. LeaseLost: Renew or Release found that
	// the slot is no longer the holder's, or a generator gave it up (Err).
	LeaseAcquired EventKind = "lease_acquired"
	LeaseRenewed  EventKind = "lease_renewed"
	LeaseLost     EventKind = "lease_lost"
	// LeaseReleased: the lease of Key was released.
	LeaseReleased EventKind = "lease_released"

	// FloorWait: a generator waited Wait for its clock to reach a floor.
	FloorWait EventKind = "floor_wait"
	// PrefetchGrown: a segment generator of Key now fetches Count values at
	// a time.
	PrefetchGrown EventKind = "prefetch_grown"
)

// Event is something a store, its driver or a generator reports. Fields
// that do not apply to the Kind are zero.
type Event struct {
	Kind      EventKind
	Key       string        // the key, namespace, slot ("ns/3") or lock name
	Server    string        // Connected: the server's address
	SessionID int64         // Connected
	Timeout   time.Duration // Connected: the negotiated session timeout
	Attempt   int           // Retry: 1 for the first retry
	Value     int64         // UnknownOutcome: the first value skipped
	Count     int64         // UnknownOutcome: values skipped; PrefetchGrown: the new size
	Fence     int64         // locks and leases
	Deadline  time.Time     // LeaseAcquired, LeaseRenewed: when the holder stops issuing
	Wait      time.Duration // FloorWait
	Err       error         // the cause, if any
}

// Report sends e to the store's observers and logger. It is for packages
// built on a store (idgen) that report through the same hook.
func (s *Store) Report(e Event) {
	s.log(e)
	for _, f := range s.onEvent {
		f(e)
	}
}

// observed reports whether anything listens to the store's events.
func (s *Store) observed() bool { return len(s.onEvent) > 0 || s.logger != nil }

// opStart reports the start of a call of the portable API and returns the
// context the call goes on with.
func (s *Store) opStart(ctx context.Context, o op) context.Context {
	for _, f := range s.onStart {
		ctx = f(ctx, OpStart{Op: o.name, Key: o.key})
	}
	return ctx
}

// opDone reports the end of a call of the portable API.
func (s *Store) opDone(ctx context.Context, o op, d time.Duration, retries int64, err error) {
	e := OpEnd{Op: o.name, Key: o.key, Duration: d, Err: err, Outcome: Outcome(err), Retries: int(retries)}
	for _, f := range s.onEnd {
		f(ctx, e)
	}
}
