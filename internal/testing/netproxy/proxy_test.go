package netproxy

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/freeport"
)

// wait bounds every read that must (or must not) see bytes: generous, since
// the machines running the tests are busy.
const wait = 5 * time.Second

// server is a loopback target: it echoes what it reads and reports each
// connection it accepts and each one its client closes.
type server struct {
	ln       net.Listener
	accepted chan struct{}
	ended    chan struct{}
}

func startServer(t *testing.T) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{ln: ln, accepted: make(chan struct{}, 16), ended: make(chan struct{}, 16)}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			s.accepted <- struct{}{}
			wg.Go(func() {
				io.Copy(c, c)
				c.Close()
				s.ended <- struct{}{}
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return s
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// echo writes msg and wants it back within wait.
func echo(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatalf("write %q: %v", msg, err)
	}
	c.SetReadDeadline(time.Now().Add(wait))
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != msg {
		t.Fatalf("echo of %q: %q, %v", msg, got, err)
	}
}

// wantClosed wants c closed by the proxy: a read ends, not by the deadline.
func wantClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(wait))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: read %d, %v; want the connection closed", what, n, err)
	}
}

// wantSilent wants no byte and no close on c for a while: the proxy holds
// them. Only a wait can show that nothing comes.
func wantSilent(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if n, err := c.Read(make([]byte, 1)); n != 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: read %d, %v; want nothing while frozen", what, n, err)
	}
}

func received(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(wait):
		t.Fatalf("%s: did not happen within %v", what, wait)
	}
}

func none(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
		t.Fatalf("while frozen: %s", what)
	default:
	}
}

// Cut closes open connections and refuses new ones (not counted) until
// Restore; Conns counts every forwarded connection.
func TestCutRestore(t *testing.T) {
	s := startServer(t)
	p := New(t, s.ln.Addr().String())
	c := dial(t, p.Addr())
	echo(t, c, "before")
	if n := p.Conns(); n != 1 {
		t.Fatalf("Conns() = %d, want 1", n)
	}

	p.Cut()
	wantClosed(t, c, "open connection after Cut")
	received(t, s.ended, "the server side closed by Cut")
	wantClosed(t, dial(t, p.Addr()), "new connection while cut")
	if n := p.Conns(); n != 1 {
		t.Fatalf("Conns() while cut = %d, want 1", n)
	}

	p.Restore()
	echo(t, dial(t, p.Addr()), "after")
	if n := p.Conns(); n != 2 {
		t.Fatalf("Conns() after Restore = %d, want 2", n)
	}
}

// Freeze holds bytes both ways with the sockets open, and a client's close;
// Thaw delivers them in order.
func TestFreezeThaw(t *testing.T) {
	s := startServer(t)
	p := New(t, s.ln.Addr().String())
	c := dial(t, p.Addr())
	echo(t, c, "before")
	held := dial(t, p.Addr())
	echo(t, held, "x")

	p.Freeze()
	if _, err := c.Write([]byte("during")); err != nil {
		t.Fatal(err)
	}
	wantSilent(t, c, "open connection")
	held.Close()
	wantSilent(t, c, "open connection")
	none(t, s.ended, "the server saw a client's close")

	p.Thaw()
	c.SetReadDeadline(time.Now().Add(wait))
	got := make([]byte, len("during"))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "during" {
		t.Fatalf("after Thaw: %q, %v; want the held bytes", got, err)
	}
	received(t, s.ended, "the held close reaching the server at Thaw")
	echo(t, c, "after")
}

// A connection made while frozen reaches the server only at Thaw.
func TestConnectWhileFrozen(t *testing.T) {
	s := startServer(t)
	p := New(t, s.ln.Addr().String())
	p.Freeze()
	c := dial(t, p.Addr())
	if _, err := c.Write([]byte("early")); err != nil {
		t.Fatal(err)
	}
	wantSilent(t, c, "connection made while frozen")
	none(t, s.accepted, "the server accepted a connection")
	if n := p.Conns(); n != 1 {
		t.Fatalf("Conns() = %d, want 1", n)
	}

	p.Thaw()
	received(t, s.accepted, "the connection reaching the server at Thaw")
	c.SetReadDeadline(time.Now().Add(wait))
	got := make([]byte, len("early"))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "early" {
		t.Fatalf("after Thaw: %q, %v; want the held bytes", got, err)
	}
}

// Cut while frozen still closes everything at once.
func TestCutWhileFrozen(t *testing.T) {
	s := startServer(t)
	p := New(t, s.ln.Addr().String())
	c := dial(t, p.Addr())
	echo(t, c, "before")
	p.Freeze()
	waiting := dial(t, p.Addr())
	p.Cut()
	wantClosed(t, c, "open connection")
	wantClosed(t, waiting, "connection made while frozen")
	received(t, s.ended, "the server side closed by Cut")
}

// CutFrom closes and refuses the connections of one origin only, and those
// of unknown origin while it lasts; RestoreFrom lets that origin in again.
func TestCutFrom(t *testing.T) {
	s := startServer(t)
	p := New(t, s.ln.Addr().String())
	var mu sync.Mutex
	names := map[int]string{} // the client's port: its origin
	p.SetOrigin(func(c net.Conn) string {
		mu.Lock()
		defer mu.Unlock()
		return names[c.RemoteAddr().(*net.TCPAddr).Port]
	})
	// dialAs dials from a port named origin ("": unknown).
	dialAs := func(origin string) net.Conn {
		t.Helper()
		port, err := freeport.Get()
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if origin != "" {
			names[port] = origin
		}
		mu.Unlock()
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}}
		c, err := d.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b, unknown := dialAs("a"), dialAs("b"), dialAs("")
	echo(t, a, "a before")
	echo(t, b, "b before")
	echo(t, unknown, "unknown before")

	p.CutFrom("a")
	wantClosed(t, a, "a's open connection")
	wantClosed(t, unknown, "an open connection of unknown origin")
	wantClosed(t, dialAs("a"), "a new connection of a")
	wantClosed(t, dialAs(""), "a new connection of unknown origin")
	echo(t, b, "b during")
	echo(t, dialAs("b"), "b's new connection")

	p.RestoreFrom("a")
	echo(t, dialAs("a"), "a after")
	echo(t, dialAs(""), "unknown after")
	echo(t, b, "b after")
}

// DialedBy names the process that opened a connection the proxy accepted.
func TestDialedBy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dial(t, ln.Addr().String())
	accepted, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer accepted.Close()
	if pid, err := DialedBy(accepted, 1, os.Getpid()); err != nil || pid != os.Getpid() {
		t.Fatalf("DialedBy(accepted, 1, self) = %d, %v; want %d", pid, err, os.Getpid())
	}
	if pid, err := DialedBy(accepted, 1); err == nil {
		t.Fatalf("DialedBy(accepted, 1) = %d; want an error: pid 1 did not open it", pid)
	}
}

// Delay forwards the server's bytes d late, in order, and no later than
// needed once the delay is lifted.
func TestDelay(t *testing.T) {
	s := startServer(t)
	p := New(t, s.ln.Addr().String())
	c := dial(t, p.Addr())
	echo(t, c, "before")
	const d = 200 * time.Millisecond
	p.Delay(d)
	for _, msg := range []string{"one", "two"} {
		start := time.Now()
		echo(t, c, msg)
		if took := time.Since(start); took < d {
			t.Errorf("echo of %q took %v with a delay of %v", msg, took, d)
		}
	}
	p.Delay(0)
	echo(t, c, "after") // within wait, as before
	// Bytes held when the delay is lowered are due by the new one.
	p.Delay(2 * wait)
	if _, err := c.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	wantSilent(t, c, "delayed connection")
	p.Delay(0)
	c.SetReadDeadline(time.Now().Add(wait))
	got := make([]byte, len("held"))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "held" {
		t.Fatalf("held bytes after the delay was lowered: %q, %v; want them within %v", got, err, wait)
	}
}
