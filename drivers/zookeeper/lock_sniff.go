package zookeeper

import (
	"encoding/binary"
	"net"
	"time"
)

// The wire sniffer: go-zookeeper does not expose the session timeout the
// server granted, which the Locker's liveness rule needs (lock_watch.go), so
// a store that makes its own connection reads it off the handshake answer.

// sniff returns a wrapper for the store's network connections that reads
// the handshake answer, around the given one (a test hook, or nil).
func (lk *lockState) sniff(requested time.Duration, inner func(net.Conn) net.Conn) func(net.Conn) net.Conn {
	lk.sniffing, lk.requested = true, requested
	return func(c net.Conn) net.Conn {
		if inner != nil {
			c = inner(c)
		}
		return &sniffConn{Conn: c, lk: lk}
	}
}

// sniffConn reads the start of a connection's first frame, the answer to the
// session handshake: length, protocol version, timeout (ms), session ID.
type sniffConn struct {
	net.Conn
	lk   *lockState
	head [20]byte
	got  int // only go-zookeeper's reading goroutine reads
}

func (c *sniffConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		if c.got < len(c.head) {
			c.got += copy(c.head[c.got:], p[:n])
			// Session ID 0 is the server saying the session expired; its
			// timeout field means nothing then.
			if sid := int64(binary.BigEndian.Uint64(c.head[12:20])); c.got == len(c.head) && sid != 0 {
				c.lk.negotiated.Store(int64(int32(binary.BigEndian.Uint32(c.head[8:12]))))
				c.lk.sessionID.Store(sid)
			}
		}
	}
	return n, err
}

// Write tells the Lock calls waiting for their create to be written
// (lock_create.go). go-zookeeper writes one request per call.
func (c *sniffConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err == nil {
		c.lk.creates.wrote(p)
	}
	return n, err
}

// handshake is the session ID and timeout of the last handshake answer.
func (lk *lockState) handshake() (int64, time.Duration) {
	return lk.sessionID.Load(), time.Duration(lk.negotiated.Load()) * time.Millisecond
}
