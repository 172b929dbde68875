package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cosid-go/store/driver"
)

// This file is what the store tells an operator, as the ZooKeeper driver
// does: connection state changes as driver events (the portable layer logs
// them and hands them to observers), and, when no server answered, an
// error that says so (driver.ErrUnavailable).

var _ driver.Notifier = (*driverStore)(nil)

// health follows whether the server answers, for events and errors. The
// database adapter and the lock code report to it.
type health struct {
	server string // host:port, for messages
	notify atomic.Pointer[func(driver.Event)]
	down   atomic.Bool // the last statement failed for want of a server

	mu      sync.Mutex
	lastErr error // the last connection failure

	hook atomic.Pointer[func(point string)] // tests only: called at named points ("pass", "enqueue", a query read)
}

// Notify sets the function the store reports events to (driver.Notifier).
func (s *driverStore) Notify(f func(driver.Event)) { s.health.notify.Store(&f) }

func (h *health) report(e driver.Event) {
	if f := h.notify.Load(); f != nil {
		(*f)(e)
	}
}

// ok records an answer of the server: after a failure, a Connected event.
func (h *health) ok() {
	if h.down.Load() && h.down.CompareAndSwap(true, false) {
		h.report(driver.Event{Kind: driver.Connected, Server: h.server})
	}
}

// failed records err; a connection failure after answers is a
// Disconnected event.
func (h *health) failed(err error) {
	if !connFailure(err) {
		return
	}
	h.mu.Lock()
	h.lastErr = err
	h.mu.Unlock()
	if h.down.CompareAndSwap(false, true) {
		h.report(driver.Event{Kind: driver.Disconnected, Server: h.server, Err: err})
	}
}

// connFailure reports an error that is not the server's answer but the
// want of one: a refused or broken connection.
func connFailure(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	var connErr *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &pgErr):
		// The server's goodbye: shutting down, or not yet accepting.
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	case errors.As(err, &connErr), errors.As(err, &netErr),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return true
	}
	return pgconn.SafeToRetry(err)
}

// unavailable returns err as an unavailableError (driver.ErrUnavailable,
// and err) when it is a connection failure, or a context error while the
// server has not answered since the last failure; otherwise err itself.
func (h *health) unavailable(err error) error {
	if err == nil || errors.Is(err, driver.ErrUnavailable) {
		return err
	}
	h.failed(err)
	ctxErr := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
	if !connFailure(err) && !(ctxErr && h.down.Load()) {
		return err
	}
	msg := "no PostgreSQL server answered at " + h.server
	h.mu.Lock()
	if h.lastErr != nil && h.lastErr != err {
		msg += " (last failure: " + h.lastErr.Error() + ")"
	}
	h.mu.Unlock()
	return &unavailableError{msg: msg, err: err}
}

func (s *driverStore) unavailable(err error) error { return s.health.unavailable(err) }

// disconnected records a connection failure of the lock session.
func (s *driverStore) disconnected(err error) { s.health.failed(err) }

// connected reports a new lock session: the store's session, as the
// ZooKeeper driver's, with its id and T.
func (s *driverStore) connected(se *session) {
	s.health.ok()
	s.health.report(driver.Event{Kind: driver.Connected, Server: s.health.server, SessionID: se.id, Timeout: se.t})
}

// expired reports a lock session that another store took over, or a purge
// deleted: its holds are lost.
func (s *driverStore) expired(err error) {
	s.health.report(driver.Event{Kind: driver.Expired, Err: err})
}

func (s *driverStore) hook(point string) {
	if f := s.health.hook.Load(); f != nil {
		(*f)(point)
	}
}

// unavailableError is driver.ErrUnavailable and err.
type unavailableError struct {
	msg string
	err error
}

func (e *unavailableError) Error() string { return fmt.Sprintf("%s: %v", e.msg, e.err) }

func (e *unavailableError) Unwrap() []error { return []error{driver.ErrUnavailable, e.err} }
