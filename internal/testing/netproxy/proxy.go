// Package netproxy is a loopback TCP proxy for tests: put in front of one
// server, it can cut a client's connections, freeze them (a network gone
// silent, as in a partition), or delay the server's answers (a slow or
// crowded server), without touching the server. Told how to name
// who opened each connection (SetOrigin), it can cut one dialer's
// connections and leave the others' alone.
//
// It is a test helper: import it from _test.go files and test helpers only.
package netproxy

import (
	"net"
	"slices"
	"sync"
	"testing"
	"time"
)

// Proxy is a loopback TCP proxy in front of one server.
type Proxy struct {
	target string
	ln     net.Listener

	mu       sync.Mutex
	thawed   *sync.Cond // signalled by Thaw and close
	frozen   bool
	delay    time.Duration // of the server's bytes (Delay)
	delayed  chan struct{} // closed when delay changes
	cut      bool
	closed   bool
	accepted int
	open     map[net.Conn]string // both ends of every forwarded connection: its origin
	origin   func(net.Conn) string
	cutFrom  map[string]bool
	wg       sync.WaitGroup
}

// New listens on a free 127.0.0.1 port and forwards each connection to
// target. It is closed, with all its connections and goroutines, when the
// test ends.
func New(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("netproxy: listen: %v", err)
	}
	p := &Proxy{target: target, ln: ln, open: map[net.Conn]string{}, cutFrom: map[string]bool{}, delayed: make(chan struct{})}
	p.thawed = sync.NewCond(&p.mu)
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
	p.thawed.Broadcast()
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

// SetOrigin makes the proxy name each connection it accepts after this by
// origin(conn), the one that opened it ("" when it cannot tell), for
// CutFrom.
func (p *Proxy) SetOrigin(origin func(c net.Conn) string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.origin = origin
}

// CutFrom closes every open connection opened by origin and, until
// RestoreFrom(origin), closes each new one as soon as it is accepted; the
// other origins' connections go on. While any origin is cut, connections of
// unknown origin are cut too: the one cut off may have opened them.
func (p *Proxy) CutFrom(origin string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutFrom[origin] = true
	for c, o := range p.open {
		if p.refusedLocked(o) {
			c.Close()
		}
	}
}

// RestoreFrom forwards new connections opened by origin again.
func (p *Proxy) RestoreFrom(origin string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.cutFrom, origin)
}

// refusedLocked reports whether a connection from origin is refused, for a
// reason other than Cut.
func (p *Proxy) refusedLocked(origin string) bool {
	return p.cutFrom[origin] || (origin == "" && len(p.cutFrom) > 0)
}

// Freeze holds every byte in both directions, of open and new connections,
// with the sockets left open: to each side the other has gone silent. A close
// is held too (a server that saw it would end the session or release what
// the client held), and a connection accepted while frozen is connected to
// the target only at Thaw.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frozen = true
}

// Thaw forwards again, the held bytes and closes first.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frozen = false
	p.thawed.Broadcast()
}

// Delay holds every byte the server sends for d before forwarding it to
// the client (0: at once), in order, on open and new connections: to the
// client, the server answers each request d late. Bytes held when it
// changes are due d after they were read.
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
	close(p.delayed)
	p.delayed = make(chan struct{})
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
		originOf := p.origin
		p.mu.Unlock()
		origin := ""
		if originOf != nil {
			origin = originOf(c)
		}
		p.mu.Lock()
		if p.cut || p.closed || p.refusedLocked(origin) {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.accepted++
		p.open[c] = origin
		p.wg.Add(1)
		p.mu.Unlock()
		go p.forward(c, origin)
	}
}

// forward pipes client to the target until either side closes or the proxy
// cuts, then closes both.
func (p *Proxy) forward(client net.Conn, origin string) {
	defer p.wg.Done()
	defer p.drop(client)
	// A connection accepted while frozen reaches the server only at Thaw,
	// as if its first packets were held: the server cannot time it out.
	p.mu.Lock()
	for p.frozen && !p.closed && !p.cut {
		p.thawed.Wait()
	}
	p.mu.Unlock()
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	defer p.drop(server)
	p.mu.Lock()
	if p.cut || p.closed || p.refusedLocked(origin) {
		// Cut while dialing: Cut did not see this end yet.
		p.mu.Unlock()
		return
	}
	p.open[server] = origin
	p.mu.Unlock()

	done := make(chan struct{})
	go func() {
		p.copy(server, client)
		// Closing both ends unblocks the other copy.
		client.Close()
		server.Close()
		close(done)
	}()
	p.copyDelayed(client, server)
	client.Close()
	server.Close()
	<-done
}

// copyDelayed is copy, each read forwarded no sooner than the proxy's
// delay after it was read: a reader stamps what it reads, and this
// goroutine writes it when due.
func (p *Proxy) copyDelayed(dst, src net.Conn) {
	type chunk struct {
		b  []byte
		at time.Time
	}
	chunks := make(chan chunk, 64)
	go func() {
		defer close(chunks)
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				chunks <- chunk{slices.Clone(buf[:n]), time.Now()}
			}
			if err != nil {
				return
			}
		}
	}()
	failed := false
	for c := range chunks { // drained to the end, so the reader never blocks
		for !failed {
			p.mu.Lock()
			for p.frozen && !p.closed && !p.cut {
				p.thawed.Wait()
			}
			wait, changed := time.Until(c.at.Add(p.delay)), p.delayed
			p.mu.Unlock()
			if wait <= 0 {
				break
			}
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-changed:
				t.Stop()
			}
		}
		if !failed {
			if _, err := dst.Write(c.b); err != nil {
				failed = true
				src.Close() // ends the reader
			}
		}
	}
	p.mu.Lock() // the end of src is held while frozen, as in copy
	for p.frozen && !p.closed && !p.cut {
		p.thawed.Wait()
	}
	p.mu.Unlock()
}

// copy forwards src to dst, holding what it read, and the end of src, while
// the proxy is frozen.
func (p *Proxy) copy(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		for p.frozen && !p.closed && !p.cut {
			p.thawed.Wait()
		}
		p.mu.Unlock()
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

func (p *Proxy) drop(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.open, c)
	p.mu.Unlock()
}

func (p *Proxy) close() {
	p.mu.Lock()
	p.closed = true
	p.thawed.Broadcast()
	for c := range p.open {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}
