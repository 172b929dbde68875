package driver

import (
	"context"
	"sync/atomic"
	"time"
)

// Connector is an optional interface of a Store whose factory only parses
// its options and defers the connection. The portable layer calls Notify (if
// the store is a Notifier), then Connect once, before any other method, with
// the context of store.OpenContext. Connect must return when ctx ends, with
// an error that wraps ctx.Err() (and ErrUnavailable when no server
// answered). If Connect fails, the portable layer calls Close.
type Connector interface {
	Connect(ctx context.Context) error
}

// Pinger is an optional interface: Ping makes one round trip to the backend.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Notifier is an optional interface of a driver with something to report
// besides the results of calls: connection state changes, retries, writes
// with an unknown outcome. The portable layer calls Notify once, before
// Connect and before any other method; f is safe for concurrent use, must
// not be called after Close returns, and does not block for long.
type Notifier interface {
	Notify(f func(Event))
}

// LostCause is an optional interface of a Lock: once Lost is closed,
// LostErr says why (the session expired, the connection was down too long,
// the store closed). The portable layer logs and reports it.
type LostCause interface {
	LostErr() error
}

// EventKind says what an Event reports.
type EventKind string

// The events a driver reports.
const (
	// Connected: a session was established (or re-established) with Server.
	Connected EventKind = "connected"
	// Disconnected: the connection to the backend was lost; the session may
	// still be alive.
	Disconnected EventKind = "disconnected"
	// Expired: the backend ended the session; what hung on it is gone.
	Expired EventKind = "expired"
	// Retry: an operation is tried again after Err (a connection loss).
	Retry EventKind = "retry"
	// UnknownOutcome: a write whose outcome is unknown was given up; the
	// values it may have taken (Value: the first, Count: how many) are
	// skipped, never handed out.
	UnknownOutcome EventKind = "unknown_outcome"
)

// Event is one thing a driver reports. Fields that do not apply are zero.
type Event struct {
	Kind      EventKind
	Key       string        // the key, namespace or lock concerned
	Server    string        // Connected: the server's address
	SessionID int64         // Connected: the session
	Timeout   time.Duration // Connected: the negotiated session timeout
	Attempt   int           // Retry: 1 for the first retry
	Value     int64         // UnknownOutcome: the first value skipped
	Count     int64         // UnknownOutcome: how many values
	Err       error         // the failure behind the event, if any
}

// Retried is a driver's one report of a retry: the call running under ctx
// tries its operation again (attempt 1 for the first retry) after err.
// report, the function the portable layer gave Notify (nil if none), gets
// it as a Retry event for the store's logger and observers, and the call's
// observers count it (OpEnd.Retries and the traces built on it).
func Retried(ctx context.Context, report func(Event), attempt int, err error) {
	if c, ok := ctx.Value(retriesKey{}).(*RetryCounter); ok {
		c.n.Add(1)
	}
	if report != nil {
		report(Event{Kind: Retry, Attempt: attempt, Err: err})
	}
}

// RetryCounter is a context that counts the retries of the call running
// under it (Retried); the portable layer makes one per observed call. It is
// one allocation, where a context value and a counter would be two.
type RetryCounter struct {
	context.Context
	n atomic.Int64
}

type retriesKey struct{}

// CountRetries returns a context derived from ctx that counts retries.
func CountRetries(ctx context.Context) *RetryCounter { return &RetryCounter{Context: ctx} }

// Value finds the counter for Retried, and ctx's values.
func (c *RetryCounter) Value(key any) any {
	if key == (retriesKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// N is the number of retries counted.
func (c *RetryCounter) N() int64 { return c.n.Load() }
