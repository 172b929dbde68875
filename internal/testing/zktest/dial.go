package zktest

import (
	"net"
	"time"
)

// handshakeWait bounds a test client's wait for the answer to its connect
// request.
const handshakeWait = 10 * time.Second

// BoundedHandshake is a dialer for go-zookeeper (zk.WithDialer) that waits
// at most 10s for the answer to the connect request. A request that reaches
// a server still starting can stay unanswered (cons shows it: recved=1,
// sent=0), and go-zookeeper would wait ten receive timeouts (200s for a 30s
// session) before it tries again: a restarted server then looks dead to a
// test's own client. The drivers bound their handshakes themselves.
func BoundedHandshake(network, addr string, timeout time.Duration) (net.Conn, error) {
	c, err := net.DialTimeout(network, addr, timeout)
	if err != nil {
		return nil, err
	}
	return &handshakeConn{Conn: c}, nil
}

// handshakeConn caps the first read deadline set on it: go-zookeeper's
// wait for the connect answer. Later ones, the session's, are left alone.
type handshakeConn struct {
	net.Conn
	capped bool // only go-zookeeper's connecting goroutine sets deadlines
}

func (c *handshakeConn) SetReadDeadline(t time.Time) error {
	if !c.capped && !t.IsZero() {
		c.capped = true
		if limit := time.Now().Add(handshakeWait); t.After(limit) {
			t = limit
		}
	}
	return c.Conn.SetReadDeadline(t)
}
