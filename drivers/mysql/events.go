package mysql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/go-sql-driver/mysql"

	stdriver "github.com/cosid-go/store/driver"
)

// This file is what the store tells an operator, as the other drivers do:
// connection state changes as driver events, and, when no server
// answered, an error that says so (driver.ErrUnavailable).

var _ stdriver.Notifier = (*driverStore)(nil)

// health follows whether the server answers, for events and errors.
type health struct {
	server string // host:port or socket, for messages
	notify atomic.Pointer[func(stdriver.Event)]
	down   atomic.Bool // the last statement failed for want of a server

	mu      sync.Mutex
	lastErr error // the last connection failure
}

// Notify sets the function the store reports events to (driver.Notifier).
func (s *driverStore) Notify(f func(stdriver.Event)) { s.health.notify.Store(&f) }

func (h *health) report(e stdriver.Event) {
	if f := h.notify.Load(); f != nil {
		(*f)(e)
	}
}

// ok records an answer of the server: after a failure, a Connected event.
func (h *health) ok() {
	if h.down.Load() && h.down.CompareAndSwap(true, false) {
		h.report(stdriver.Event{Kind: stdriver.Connected, Server: h.server})
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
		h.report(stdriver.Event{Kind: stdriver.Disconnected, Server: h.server, Err: err})
	}
}

// The server's error numbers that mean it is going away, not answering.
const (
	serverShutdown   = 1053 // ER_SERVER_SHUTDOWN
	connectionKilled = 1927 // MariaDB's ER_CONNECTION_KILLED
	queryInterrupted = 1317 // ER_QUERY_INTERRUPTED, as the server stops
	tooManyConns     = 1040
)

// connFailure reports an error that is not the server's answer but the
// want of one: a refused, broken or killed connection.
func connFailure(err error) bool {
	if err == nil {
		return false
	}
	var myErr *mysql.MySQLError
	var netErr net.Error
	switch {
	case errors.As(err, &myErr):
		switch myErr.Number {
		case serverShutdown, connectionKilled, tooManyConns:
			return true
		}
		return false
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	case errors.As(err, &netErr), errors.Is(err, driver.ErrBadConn), errors.Is(err, mysql.ErrInvalidConn),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET):
		return true
	}
	return false
}

// unavailable returns err as an unavailableError (driver.ErrUnavailable,
// and err) when it is a connection failure, or a context error while the
// server has not answered since the last failure; otherwise err itself.
func (h *health) unavailable(err error) error {
	if err == nil || errors.Is(err, stdriver.ErrUnavailable) {
		return err
	}
	h.failed(err)
	ctxErr := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
	if !connFailure(err) && !(ctxErr && h.down.Load()) {
		return err
	}
	msg := "no MySQL server answered at " + h.server
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

func (e *unavailableError) Unwrap() []error { return []error{stdriver.ErrUnavailable, e.err} }
