package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
)

// What the store tells an operator (sqlstore.Health): connection state
// changes as driver events, and, when no server answered, an error that
// says so (driver.ErrUnavailable).

var _ driver.Notifier = (*driverStore)(nil)

// health follows whether the server answers, for events and errors. The
// database adapter and the lock code report to it.
type health struct {
	*sqlstore.Health

	hook atomic.Pointer[func(point string)] // tests only: called at named points ("pass", "enqueue", a query read)
}

// Notify sets the function the store reports events to (driver.Notifier).
func (s *driverStore) Notify(f func(driver.Event)) { s.health.Notify(f) }

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

func (s *driverStore) unavailable(err error) error { return s.health.Unavailable(err) }

// disconnected records a connection failure of the lock session.
func (s *driverStore) disconnected(err error) { s.health.Failed(err) }

func (s *driverStore) hook(point string) {
	if f := s.health.hook.Load(); f != nil {
		(*f)(point)
	}
}
