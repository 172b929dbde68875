package mysql

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/go-sql-driver/mysql"

	stdriver "github.com/cosid-go/store/driver"
)

// What the store tells an operator (sqlstore.Health): connection state
// changes as driver events, and, when no server answered, an error that
// says so (driver.ErrUnavailable).

var _ stdriver.Notifier = (*driverStore)(nil)

// Notify sets the function the store reports events to (driver.Notifier).
func (s *driverStore) Notify(f func(stdriver.Event)) { s.health.Notify(f) }

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
