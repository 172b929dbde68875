package zktest

import (
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy is a loopback TCP proxy in front of one server, to break a client's
// connection on purpose without touching the server.
type Proxy struct {
	target string
	ln     net.Listener

	mu       sync.Mutex
	cut      bool
	closed   bool
	accepted int
	open     map[net.Conn]struct{} // both ends of every forwarded connection
	wg       sync.WaitGroup
}

// NewProxy listens on a free 127.0.0.1 port and forwards each connection to
// target. It is closed, with all its connections and goroutines, when the
// test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("zktest: proxy listen: %v", err)
	}
	p := &Proxy{target: target, ln: ln, open: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.acceptLoop()
	t.Cleanup(p.close)
	return p
}

// Addr returns the address clients connect to, "127.0.0.1:port".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every open connection and, until Restore, closes each new one
// as soon as it is accepted, so the client sees a dead server.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.open {
		c.Close()
	}
}

// Restore makes the proxy forward new connections again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// Conns returns how many connections the proxy has accepted to forward so
// far; those closed at once while cut are not counted.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		if p.cut || p.closed {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.accepted++
		p.open[c] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.forward(c)
	}
}

// forward pipes client to the target until either side closes or the proxy
// cuts, then closes both.
func (p *Proxy) forward(client net.Conn) {
	defer p.wg.Done()
	defer p.drop(client)
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	defer p.drop(server)
	p.mu.Lock()
	if p.cut || p.closed {
		// Cut while dialing: Cut did not see this end yet.
		p.mu.Unlock()
		return
	}
	p.open[server] = struct{}{}
	p.mu.Unlock()

	done := make(chan struct{})
	go func() {
		io.Copy(server, client)
		// Closing both ends unblocks the other copy.
		client.Close()
		server.Close()
		close(done)
	}()
	io.Copy(client, server)
	client.Close()
	server.Close()
	<-done
}

func (p *Proxy) drop(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.open, c)
	p.mu.Unlock()
}

func (p *Proxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.open {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}
