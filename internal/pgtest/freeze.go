package pgtest

import (
	"net"
	"sync"
	"testing"
)

// FreezeProxy forwards connections to a server and, while frozen, holds
// every byte in both directions with the sockets left open: a network that
// went silent (a partition), which neither end notices by itself.
type FreezeProxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	flow   chan struct{} // closed while not frozen
	conns  []net.Conn
	closed bool
	wg     sync.WaitGroup
}

// NewFreezeProxy listens on a free 127.0.0.1 port until the test ends.
func NewFreezeProxy(t testing.TB, target string) *FreezeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("pgtest: freeze proxy listen: %v", err)
	}
	p := &FreezeProxy{ln: ln, target: target, flow: make(chan struct{})}
	close(p.flow)
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

// Addr returns the address clients connect to.
func (p *FreezeProxy) Addr() string { return p.ln.Addr().String() }

// Freeze stops every byte until Thaw.
func (p *FreezeProxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flow = make(chan struct{})
}

// Thaw lets bytes through again.
func (p *FreezeProxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.flow:
	default:
		close(p.flow)
	}
}

func (p *FreezeProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			server.Close()
			return
		}
		p.conns = append(p.conns, c, server)
		p.wg.Go(func() { p.pipe(server, c) })
		p.wg.Go(func() { p.pipe(c, server) })
		p.mu.Unlock()
	}
}

// pipe copies src to dst, holding each read while frozen.
func (p *FreezeProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		flow := p.flow
		p.mu.Unlock()
		<-flow
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *FreezeProxy) close() {
	p.ln.Close()
	p.Thaw()
	p.mu.Lock()
	p.closed = true
	for _, c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
