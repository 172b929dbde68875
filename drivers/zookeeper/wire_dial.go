package zookeeper

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// dialer makes the network connections of a connection the store owns.
//
// go-zookeeper bounds a dial by its own fixed 1s and the session handshake
// by ten times two thirds of the session timeout (400s by default), and
// nothing of it watches Close. The dialer applies connectionTimeout to both
// the dial and the handshake answer, cancels a dial in progress on close,
// and closes the live sockets so a handshake stuck on a silent server ends.
type dialer struct {
	timeout time.Duration
	tls     *tls.Config             // nil: plaintext (wire_tls.go)
	wrap    func(net.Conn) net.Conn // tests watch the traffic through it
	ctx     context.Context         // cancelled by close
	cancel  context.CancelFunc

	mu      sync.Mutex
	conns   map[*trackedConn]struct{}
	closed  bool
	lastErr error // the last dial or handshake failure, for Open's error

	heard     atomic.Int64        // monoNow() when a server was last read from (session_events.go)
	heardFrom func(server string) // called on each read that got bytes; must not block
}

func newDialer(timeout time.Duration, tlsConfig *tls.Config, wrap func(net.Conn) net.Conn) *dialer {
	ctx, cancel := context.WithCancel(context.Background())
	return &dialer{timeout: timeout, tls: tlsConfig, wrap: wrap, ctx: ctx, cancel: cancel, conns: map[*trackedConn]struct{}{}}
}

// dial is the zk.Dialer; go-zookeeper's timeout argument is replaced by
// connectionTimeout.
func (d *dialer) dial(network, address string, _ time.Duration) (net.Conn, error) {
	// go-zookeeper uses one socket at a time and dials only once it is done
	// with the last, but does not close a socket whose handshake found the
	// session expired: close whatever is left here.
	d.closeAll()
	ctx, cancel := context.WithTimeout(d.ctx, d.timeout)
	defer cancel()
	var nd net.Dialer
	c, err := nd.DialContext(ctx, network, address)
	if err == nil && d.tls != nil {
		c, err = d.handshake(ctx, c, address)
	}
	if err != nil {
		d.fail(err)
		return nil, err
	}
	tc := &trackedConn{Conn: c, d: d, address: address}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		c.Close()
		return nil, net.ErrClosed
	}
	d.conns[tc] = struct{}{}
	tc.timer = time.AfterFunc(d.timeout, tc.handshakeTimeout)
	d.mu.Unlock()
	if d.wrap != nil {
		return d.wrap(tc), nil
	}
	return tc, nil
}

func (d *dialer) fail(err error) {
	d.mu.Lock()
	d.lastErr = err
	d.mu.Unlock()
}

func (d *dialer) lastError() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastErr
}

// close ends a dial in progress and closes every live socket.
func (d *dialer) close() {
	d.cancel()
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.closeAll()
}

func (d *dialer) closeAll() {
	d.mu.Lock()
	conns := d.conns
	d.conns = map[*trackedConn]struct{}{}
	d.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

// trackedConn is one socket of the dialer. It watches the bytes read until
// the session handshake's answer (the first length-prefixed frame) has
// arrived, and closes the socket if that takes longer than the timeout.
type trackedConn struct {
	net.Conn
	d       *dialer
	address string
	timer   *time.Timer
	expired atomic.Bool // the timer closed the socket

	// Only go-zookeeper's reading goroutine touches these.
	answered bool
	head     [4]byte // the answer's length prefix
	headLen  int
	left     int // bytes of the answer still to come
}

func (c *trackedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.d.heard.Store(int64(monoNow()))
		if c.d.heardFrom != nil {
			c.d.heardFrom(c.address)
		}
	}
	if !c.answered {
		c.count(p[:n])
		if err != nil && !c.answered && !c.expired.Load() {
			c.d.fail(fmt.Errorf("%s closed the connection during the session handshake%s: %w", c.address, c.hint(), err))
		}
	}
	return n, err
}

// count follows the handshake answer through the bytes b just read.
func (c *trackedConn) count(b []byte) {
	if c.headLen < len(c.head) {
		k := copy(c.head[c.headLen:], b)
		c.headLen += k
		b = b[k:]
		if c.headLen < len(c.head) {
			return
		}
		c.left = int(binary.BigEndian.Uint32(c.head[:]))
	}
	c.left -= min(len(b), c.left)
	if c.left == 0 {
		c.answered = true
		c.timer.Stop()
	}
}

// hint explains a server that closed a plaintext connection without a
// byte of answer: what a TLS port (secureClientPort) does.
func (c *trackedConn) hint() string {
	if c.d.tls != nil || c.headLen > 0 {
		return ""
	}
	return " without answering (if it is a TLS port, secureClientPort, set the tls options)"
}

func (c *trackedConn) handshakeTimeout() {
	c.expired.Store(true)
	c.d.fail(fmt.Errorf("%s did not answer the session handshake within %v (connectionTimeout)", c.address, c.d.timeout))
	c.Conn.Close()
}

func (c *trackedConn) Close() error {
	c.timer.Stop()
	c.d.mu.Lock()
	delete(c.d.conns, c)
	c.d.mu.Unlock()
	return c.Conn.Close()
}
