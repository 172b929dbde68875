package postgres

import (
	"context"
	"net"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
)

// sockets tracks the network connections of a pool the store opened, so
// that Close can end them when the server does not answer: pgx gives each
// connection's goodbye 15 s, and a Close on a silent network would wait
// for every one of them (closeGrace).
type sockets struct {
	mu     sync.Mutex
	conns  map[*socket]struct{}
	closed bool
}

// wrap returns a dial function that dials with dial and tracks the result.
func (s *sockets) wrap(dial pgconn.DialFunc) pgconn.DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		sc := &socket{Conn: c, s: s}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.closed {
			c.Close()
			return nil, net.ErrClosed
		}
		if s.conns == nil {
			s.conns = map[*socket]struct{}{}
		}
		s.conns[sc] = struct{}{}
		return sc, nil
	}
}

// closeAll closes every connection and refuses new ones.
func (s *sockets) closeAll() {
	s.mu.Lock()
	conns := s.conns
	s.conns, s.closed = nil, true
	s.mu.Unlock()
	for c := range conns {
		c.Conn.Close()
	}
}

type socket struct {
	net.Conn
	s *sockets
}

func (c *socket) Close() error {
	c.s.mu.Lock()
	delete(c.s.conns, c)
	c.s.mu.Unlock()
	return c.Conn.Close()
}
