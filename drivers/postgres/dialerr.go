package postgres

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// quietDial returns dial with errors that do not repeat the address: pgx
// names it already ("127.0.0.1:1 (127.0.0.1): dial error: ...").
func quietDial(dial pgconn.DialFunc) pgconn.DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if op, ok := errors.AsType[*net.OpError](err); ok && op.Err != nil && op.Op == "dial" {
			return nil, &dialError{op}
		}
		return c, err
	}
}

// dialError prints a dial's cause only; errors.As still finds the
// *net.OpError (pgx reads Timeout from it).
type dialError struct{ op *net.OpError }

func (e *dialError) Error() string { return e.op.Err.Error() }
func (e *dialError) Unwrap() error { return e.op }

// connectFailure returns pgx's failure to connect said once: pgx lists
// every attempt, and with sslmode prefer (the default) tries each address
// twice, so the same line came twice. It is nil for other errors.
func connectFailure(err error) error {
	ce, ok := errors.AsType[*pgconn.ConnectError](err)
	if !ok {
		return nil
	}
	causes := []error{ce.Unwrap()}
	if j, ok := causes[0].(interface{ Unwrap() []error }); ok {
		causes = j.Unwrap()
	}
	var lines []string
	for _, c := range causes {
		if !slices.Contains(lines, c.Error()) {
			lines = append(lines, c.Error())
		}
	}
	return &connectError{err: err, msg: fmt.Sprintf("failed to connect to PostgreSQL (user %q, database %q): %s",
		ce.Config.User, ce.Config.Database, strings.Join(lines, "; "))}
}

type connectError struct {
	err error
	msg string
}

func (e *connectError) Error() string { return e.msg }
func (e *connectError) Unwrap() error { return e.err }
