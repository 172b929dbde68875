package mysql

import (
	"context"
	"database/sql/driver"
	"errors"
	"net"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"
)

// go-sql-driver watches the context of each call with a goroutine of the
// connection's: a call with a context that can end wakes it twice (the
// watch, then its end). Every call of a store has such a context (the
// store's timeout), and on a loaded 2-core machine the two wake-ups were
// most of what Next cost above the raw statement (medians: 50-59 µs a
// Next, 36-37 µs the statement; 37-39 µs a Next without them). So a statement run with
// ExecContext goes to the driver with a context that cannot end, and the
// call's own context is watched by context.AfterFunc, which costs no
// goroutine: when it ends, the connection's socket is closed, so the
// driver's read or write fails at once and the connection is dropped, as
// the driver's watcher would do. The driver logs what its reads and
// writes fail with, except after its own watcher closed the socket:
// quietLogger keeps a socket cut here just as quiet (a closed socket,
// net.ErrClosed, is only ever this side's doing). Queries and transactions
// keep the driver's watcher (their rows outlive the call).

// dialSlot carries the socket a Connect dials back to the connector.
type dialSlot struct{ c net.Conn }

type dialSlotKey struct{}

// dial is the driver's DialFunc: a plain dial, whose socket it records in
// the Connect's slot.
func dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	if slot, ok := ctx.Value(dialSlotKey{}).(*dialSlot); ok {
		slot.c = c
	}
	return c, nil
}

// dialsItself says whether network is one dial serves (a network a
// program registered with go-sql-driver keeps its own dial, and the
// driver's watcher).
func dialsItself(network string) bool {
	switch network {
	case "tcp", "tcp4", "tcp6", "unix":
		return true
	}
	return false
}

// cutConn is a connection of the driver with its socket.
type cutConn struct {
	driver.Conn
	sock   net.Conn
	broken atomic.Bool // its socket was cut: never used again
	cut    func()      // cuts the socket: made once, not per call
}

func newCutConn(c driver.Conn, sock net.Conn) *cutConn {
	cc := &cutConn{Conn: c, sock: sock}
	cc.cut = func() {
		cc.broken.Store(true)
		_ = cc.sock.Close()
	}
	return cc
}

// The interfaces of go-sql-driver's connection that database/sql looks
// for, passed through.
var (
	_ driver.ExecerContext      = (*cutConn)(nil)
	_ driver.QueryerContext     = (*cutConn)(nil)
	_ driver.ConnPrepareContext = (*cutConn)(nil)
	_ driver.ConnBeginTx        = (*cutConn)(nil)
	_ driver.SessionResetter    = (*cutConn)(nil)
	_ driver.Validator          = (*cutConn)(nil)
	_ driver.NamedValueChecker  = (*cutConn)(nil)
	_ driver.Pinger             = (*cutConn)(nil)
)

// ExecContext runs q with ctx watched by context.AfterFunc (see above).
func (c *cutConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	ex := c.Conn.(driver.ExecerContext)
	if ctx.Done() == nil {
		return ex.ExecContext(ctx, q, args)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, c.cut)
	// go-sql-driver reads nothing of a context but its end, which it is
	// not to watch here.
	res, err := ex.ExecContext(context.Background(), q, args)
	if !stop() {
		// Cut (perhaps just after the answer): the outcome is the
		// context's, as with the driver's watcher, and the connection
		// is dropped (Validator, SessionResetter). Not ErrBadConn: that
		// would let database/sql run the statement again elsewhere.
		return nil, ctx.Err()
	}
	return res, err
}

func (c *cutConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, q, args)
}

func (c *cutConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
}

func (c *cutConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *cutConn) ResetSession(ctx context.Context) error {
	if c.broken.Load() {
		return driver.ErrBadConn
	}
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

func (c *cutConn) IsValid() bool {
	return !c.broken.Load() && c.Conn.(driver.Validator).IsValid()
}

func (c *cutConn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.Conn.(driver.NamedValueChecker).CheckNamedValue(nv)
}

func (c *cutConn) Ping(ctx context.Context) error { return c.Conn.(driver.Pinger).Ping(ctx) }

// quietLogger is the driver's logger without the errors of a socket cut
// by cutConn (net.ErrClosed).
type quietLogger struct{ l mysql.Logger }

func (q quietLogger) Print(v ...any) {
	for _, x := range v {
		if err, ok := x.(error); ok && errors.Is(err, net.ErrClosed) {
			return
		}
	}
	q.l.Print(v...)
}
