package zookeeper

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/zktest"
)

func TestMain(m *testing.M) {
	if pausedHolderChild() {
		return
	}
	zktest.Main(m)
}

// randomRoot returns a root no other test uses, so tests sharing a server
// never see each other's nodes.
func randomRoot() string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return "/t" + hex.EncodeToString(b[:])
}

// testOptions are the options of a test store on addr: short timeouts so a
// fault shows quickly, and a random root unless extra sets one.
func testOptions(addr string, extra map[string]string) map[string]string {
	o := map[string]string{
		"connectString":           addr,
		"root":                    randomRoot(),
		"sessionTimeout":          "4s",
		"connectionTimeout":       "2s",
		"blockUntilConnectedWait": "20s",
	}
	for k, v := range extra {
		o[k] = v
	}
	return o
}

// openWith opens a driver store from options on a connection of its own,
// waiting for a session as store.Open does: the driver's factory and
// Connect in one call.
func openWith(options map[string]string) (driver.Store, error) {
	s, err := open(options, nil)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// openTest opens a driver store (optionally watching its traffic through
// w), closed when the test ends.
func openTest(t testing.TB, options map[string]string, w *wire) *driverStore {
	t.Helper()
	var wrap func(net.Conn) net.Conn
	if w != nil {
		wrap = w.wrap
	}
	s, err := open(options, wrap)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// portable wraps a driver store in the user API, with a timeout long
// enough for a loaded CI machine.
func portable(t testing.TB, d *driverStore) *store.Store {
	t.Helper()
	st, err := store.OpenDriver(d, store.WithTimeout(10*time.Second))
	if err != nil {
		t.Fatalf("OpenDriver: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// rawConn is a plain go-zookeeper connection with a session, for writing
// nodes by hand; closed when the test ends.
func rawConn(t testing.TB, addr string) *zk.Conn {
	t.Helper()
	session := make(chan struct{})
	var once sync.Once
	conn, _, err := zk.Connect([]string{addr}, 4*time.Second,
		zk.WithLogInfo(false), zk.WithDialer(zktest.BoundedHandshake),
		zk.WithEventCallback(func(ev zk.Event) {
			if ev.State == zk.StateHasSession {
				once.Do(func() { close(session) })
			}
		}))
	if err != nil {
		t.Fatalf("zk.Connect: %v", err)
	}
	t.Cleanup(conn.Close)
	select {
	case <-session:
	case <-time.After(20 * time.Second):
		t.Fatalf("no session with %s within 20s", addr)
	}
	return conn
}

// go-zookeeper's request opcodes, as they appear on the wire.
const (
	opCreate  = 1
	opGetData = 4
	opSetData = 5
	opMulti   = 14
)

// wire watches the requests a store sends. go-zookeeper writes one
// length-prefixed frame per request; the first frame of a connection is the
// session handshake and pings carry xid -2, and neither is counted.
type wire struct {
	mu     sync.Mutex
	counts map[int32]int // opcode -> requests written

	// before, if set, runs before a request frame is written; it may block,
	// holding the request in flight. If it returns true the connection is
	// closed right after the frame is written, so the answer is lost.
	before func(op int32) (drop bool)
	// fail, if set, runs like before; if it returns true the connection is
	// closed before the frame is written, so the write fails.
	fail func(op int32) bool
	// answers, if set, holds what the store reads (the server's answers)
	// until it is closed: the server has applied the requests, the store
	// does not know yet.
	answers chan struct{}
}

func (w *wire) wrap(c net.Conn) net.Conn { return &wireConn{Conn: c, w: w} }

// requests returns the number of requests written, of op or of any opcode
// when op is -1.
func (w *wire) requests(op int32) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for o, c := range w.counts {
		if op == -1 || o == op {
			n += c
		}
	}
	return n
}

func (w *wire) setFail(f func(op int32) bool) {
	w.mu.Lock()
	w.fail = f
	w.mu.Unlock()
}

func (w *wire) setBefore(f func(op int32) bool) {
	w.mu.Lock()
	w.before = f
	w.mu.Unlock()
}

// dropFirstAnswer loses the answer of the next request of op; sent reports
// whether that request has been written.
func (w *wire) dropFirstAnswer(op int32) (sent func() bool) {
	var armed atomic.Bool
	armed.Store(true)
	w.setBefore(func(o int32) bool { return o == op && armed.CompareAndSwap(true, false) })
	return func() bool { return !armed.Load() }
}

// holdFirst holds the next request of op in flight, before it is written,
// until release is closed; held closes once it is held.
func (w *wire) holdFirst(op int32) (held <-chan struct{}, release chan struct{}) {
	h, r := make(chan struct{}), make(chan struct{})
	var armed atomic.Bool
	armed.Store(true)
	w.setBefore(func(o int32) bool {
		if o == op && armed.CompareAndSwap(true, false) {
			close(h)
			<-r
		}
		return false
	})
	return h, r
}

type wireConn struct {
	net.Conn
	w *wire
	// deaf is set before a dropped frame is written: an answer that arrives
	// before the close is discarded, so the answer is lost however the
	// goroutines are scheduled.
	deaf atomic.Bool

	// Frame parsing state; only go-zookeeper's writing goroutine writes.
	frames  int    // frames whose header was seen
	head    []byte // the current frame's first bytes, up to length+xid+opcode
	skip    int    // bytes of the current frame still to pass over
	inFrame bool
}

func (c *wireConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.w.mu.Lock()
	hold := c.w.answers
	c.w.mu.Unlock()
	if hold != nil {
		<-hold // held after the read: one already waiting is held too
	}
	if c.deaf.Load() {
		return 0, net.ErrClosed
	}
	return n, err
}

// holdAnswers holds every answer the store reads from now on until the
// returned release is called (more than once is fine).
func (w *wire) holdAnswers() (release func()) {
	ch := make(chan struct{})
	w.mu.Lock()
	w.answers = ch
	w.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			w.answers = nil
			w.mu.Unlock()
			close(ch)
		})
	}
}

func (c *wireConn) Write(p []byte) (int, error) {
	drop := false
	for rest := p; len(rest) > 0; {
		if c.inFrame && c.skip > 0 {
			k := min(c.skip, len(rest))
			c.skip -= k
			rest = rest[k:]
			if c.skip == 0 {
				c.inFrame = false
			}
			continue
		}
		// Gather the length prefix, then xid and opcode.
		k := min(12-len(c.head), len(rest))
		c.head = append(c.head, rest[:k]...)
		rest = rest[k:]
		if len(c.head) < 12 {
			continue
		}
		length := int(binary.BigEndian.Uint32(c.head[:4]))
		xid := int32(binary.BigEndian.Uint32(c.head[4:8]))
		op := int32(binary.BigEndian.Uint32(c.head[8:12]))
		c.head = c.head[:0]
		c.skip, c.inFrame = length-8, length > 8
		c.frames++
		if c.frames == 1 || xid == -2 {
			continue // the handshake, or a ping
		}
		c.w.mu.Lock()
		if c.w.counts == nil {
			c.w.counts = map[int32]int{}
		}
		c.w.counts[op]++
		before, fail := c.w.before, c.w.fail
		c.w.mu.Unlock()
		if before != nil && before(op) {
			drop = true
			c.deaf.Store(true)
		}
		if fail != nil && fail(op) {
			c.Conn.Close()
		}
	}
	n, err := c.Conn.Write(p)
	if drop {
		c.Conn.Close()
	}
	return n, err
}

// serverCheck is a check that needs a server, given its address.
type serverCheck struct {
	name string
	run  func(t *testing.T, addr string)
}

// onEachVersion starts one server of each supported ZooKeeper version and
// runs on it, each as a subtest, the checks that checks returns for it.
func onEachVersion(t *testing.T, checks func(srv *zktest.Server) []serverCheck) {
	zktest.EachVersion(t, func(t *testing.T, srv *zktest.Server) {
		for _, c := range checks(srv) {
			t.Run(c.name, func(t *testing.T) { c.run(t, srv.Addr()) })
		}
	})
}
