package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/cosid-go/store/driver"
)

// Health follows whether a driver's server answers, for what the store
// tells an operator, as every driver does: connection state changes as
// driver events (driver.Notifier; the portable layer logs them and hands
// them to observers), and, when no server answered, an error that says so
// (driver.ErrUnavailable). The PostgreSQL and MySQL drivers report each
// statement's outcome to one (Check).
type Health struct {
	kind, server string           // "PostgreSQL", host:port or socket: for messages
	connFailure  func(error) bool // the database's: an error that is the want of an answer

	notify atomic.Pointer[func(driver.Event)]
	down   atomic.Bool // the last statement failed for want of a server

	mu      sync.Mutex
	lastErr error // the last connection failure
}

// NewHealth follows a server of kind (for messages: "PostgreSQL") at
// server; connFailure tells an error that is not the server's answer but
// the want of one (a refused, broken or killed connection).
func NewHealth(kind, server string, connFailure func(error) bool) *Health {
	return &Health{kind: kind, server: server, connFailure: connFailure}
}

// Server is the server's address, for messages and events.
func (h *Health) Server() string { return h.server }

// Notify sets the function events are reported to (driver.Notifier).
func (h *Health) Notify(f func(driver.Event)) { h.notify.Store(&f) }

// Report reports e.
func (h *Health) Report(e driver.Event) {
	if f := h.notify.Load(); f != nil {
		(*f)(e)
	}
}

// OK records an answer of the server: after a failure, a Connected event.
func (h *Health) OK() {
	if h.down.Load() && h.down.CompareAndSwap(true, false) {
		h.Report(driver.Event{Kind: driver.Connected, Server: h.server})
	}
}

// Failed records err; a connection failure after answers is a
// Disconnected event.
func (h *Health) Failed(err error) {
	if !h.connFailure(err) {
		return
	}
	h.mu.Lock()
	h.lastErr = err
	h.mu.Unlock()
	if h.down.CompareAndSwap(false, true) {
		h.Report(driver.Event{Kind: driver.Disconnected, Server: h.server, Err: err})
	}
}

// Check records the outcome of a statement, an answer (nil, ErrNoRows)
// or err, and returns err as Unavailable does.
func (h *Health) Check(err error) error {
	if err == nil || errors.Is(err, ErrNoRows) {
		h.OK()
		return err
	}
	return h.Unavailable(err)
}

// Unavailable returns err as driver.ErrUnavailable (and err) when it is a
// connection failure, or a context error while the server has not
// answered since the last failure; otherwise err itself. It records err
// (Failed).
func (h *Health) Unavailable(err error) error {
	if err == nil || errors.Is(err, driver.ErrUnavailable) {
		return err
	}
	h.Failed(err)
	ctxErr := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
	if !h.connFailure(err) && !(ctxErr && h.down.Load()) {
		return err
	}
	msg := "no " + h.kind + " server answered at " + h.server
	h.mu.Lock()
	if h.lastErr != nil && h.lastErr != err {
		msg += " (last failure: " + h.lastErr.Error() + ")"
	}
	h.mu.Unlock()
	return &unavailableError{msg: msg, err: err}
}

// unavailableError is driver.ErrUnavailable and err.
type unavailableError struct {
	msg string
	err error
}

func (e *unavailableError) Error() string { return fmt.Sprintf("%s: %v", e.msg, e.err) }

func (e *unavailableError) Unwrap() []error { return []error{driver.ErrUnavailable, e.err} }
