package zookeeper

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestSlots runs the slot checks that need a server, once per supported
// ZooKeeper version, each on one server with a root of its own.
func TestSlots(t *testing.T) {
	onEachVersion(t, func(_ *zktest.Server) []serverCheck {
		return []serverCheck{
			{"NodeLayout", testSlotNodeLayout},
			{"RoundTrips", testSlotRoundTrips},
			{"Crowd", testSlotCrowd},
			{"FullNamespace", testSlotFullNamespace},
			{"ThousandLive", testSlotThousandLive},
			{"OwnerIndex", testSlotOwnerIndex},
			{"CorruptSlot", testSlotCorrupt},
			{"CorruptNamespace", testSlotCorruptNamespace},
			{"ConfigMismatch", testSlotConfigMismatch},
			{"UnknownNamesKept", testSlotUnknownNamesKept},
			{"HandWrittenSlot", testSlotHandWritten},
			{"LostAcquireAnswer", testSlotLostAcquireAnswer},
			{"UnsentAcquire", testSlotUnsentAcquire},
			{"AbandonedAcquire", testSlotAbandonedAcquire},
			{"LostReleaseAnswer", testSlotLostReleaseAnswer},
			{"AbandonedRelease", testSlotAbandonedRelease},
			{"RecreatedSlot", testSlotRecreated},
			{"VersionMinusOne", testSlotVersionMinusOne},
			{"StatelessLease", testSlotStatelessLease},
			{"Listings", testSlotListings},
			{"Purge", testSlotPurge},
		}
	})
}

// slotRequest is an acquire request with a long ttl, for tests that never
// wait for an expiry.
func slotRequest(ns driver.Namespace, owner, inc string) driver.AcquireRequest {
	return driver.AcquireRequest{Namespace: ns, Owner: owner, Incarnation: inc, TTL: 10 * time.Minute}
}

func mustAcquire(t *testing.T, s *driverStore, req driver.AcquireRequest) driver.Lease {
	t.Helper()
	l, err := s.Acquire(t.Context(), req)
	if err != nil {
		t.Fatalf("Acquire(%s, owner %q, incarnation %q): %v", req.Namespace.Name, req.Owner, req.Incarnation, err)
	}
	return l
}

// getSlotNode reads and parses a node written by the store.
func getSlotNode(t *testing.T, conn *zk.Conn, path string) (slotNode, *zk.Stat) {
	t.Helper()
	data, stat, err := conn.Get(path)
	if err != nil {
		t.Fatalf("Get(%s): %v", path, err)
	}
	n, err := parseSlot(data)
	if err != nil {
		t.Fatalf("%s holds %q: %v", path, data, err)
	}
	return n, stat
}

// handNamespace creates a namespace node (with .clock), its owner
// directory and its slot markers' directory by hand.
func handNamespace(t *testing.T, conn *zk.Conn, s *driverStore, ns driver.Namespace) {
	t.Helper()
	mustCreatePath(t, conn, s.nsPath(ns.Name), string(formatNamespace(ns.Limit, ns.Tolerance.Milliseconds())))
	if _, err := conn.Create(s.nsPath(ns.Name)+"/"+clockName, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	mustCreatePath(t, conn, s.root+"/owner/"+ns.Name, "")
	mustCreatePath(t, conn, s.root+"/"+madeDir+"/"+ns.Name, "") // the slot markers' parent (slot_made.go)
}

// handLiveSlots creates slots [from, to) of ns by hand, each holding a live
// term of its own owner, in multis of 100 creates.
func handLiveSlots(t *testing.T, conn *zk.Conn, s *driverStore, ns string, from, to int) {
	t.Helper()
	for start := from; start < to; start += 100 {
		var ops []any
		for n := start; n < min(start+100, to); n++ {
			data := formatSlot(slotNode{owner: fmt.Sprintf("hand-%d", n), incarnation: "hand", fence: 1, ttl: 3_600_000})
			ops = append(ops, &zk.CreateRequest{Path: s.slotPath(ns, n), Data: data, Acl: zk.WorldACL(zk.PermAll)})
		}
		if _, err := conn.Multi(ops...); err != nil {
			t.Fatalf("create slots [%d, %d): %v", start, min(start+100, to), err)
		}
	}
}

// testSlotNodeLayout: the nodes are those of docs/design.md (ZooKeeper node
// layout), holding what it says.
func testSlotNodeLayout(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	conn := rawConn(t, addr)
	ns := driver.Namespace{Name: "layout", Limit: 1024, Tolerance: time.Second}
	l := mustAcquire(t, s, driver.AcquireRequest{Namespace: ns, Owner: "host-a", Incarnation: "run-1", TTL: 60 * time.Second, Preferred: 3})

	if data, _, err := conn.Get(s.root + "/slot/layout"); err != nil || string(data) != "limit=1024\ntolerance=1000\n" {
		t.Errorf("namespace node holds %q (err %v), want limit=1024, tolerance=1000", data, err)
	}
	if _, _, err := conn.Get(s.root + "/slot/layout/.clock"); err != nil {
		t.Errorf("no .clock (made with the namespace, for earlier versions): %v", err)
	}
	clockPath := fmt.Sprintf("%s/clock/%016x", s.root, uint64(s.conn.SessionID()))
	_, clock, err := conn.Get(clockPath)
	if err != nil {
		t.Fatalf("no clock node of the store's session: %v", err)
	}
	if clock.EphemeralOwner != s.conn.SessionID() {
		t.Errorf("%s belongs to session %x, want the store's, %x", clockPath, clock.EphemeralOwner, s.conn.SessionID())
	}
	data, stat, err := conn.Get(s.root + "/slot/layout/3")
	if err != nil {
		t.Fatal(err)
	}
	want := "owner=host-a\nincarnation=run-1\nlast_owner=\nfence=1\nttl=60000\ntolerance=1000\n" +
		"floor=0\nexpires_min=0\nceiling_min=0\nnext_floor=0\n"
	if string(data) != want {
		t.Errorf("slot node holds\n%s\nwant\n%s", data, want)
	}
	if idx, _, err := conn.Get(s.root + "/owner/layout/host-a"); err != nil || string(idx) != "3" {
		t.Errorf("owner index holds %q (err %v), want \"3\"", idx, err)
	}
	// Times come from the server's mtime: the slot's for the lease, the
	// session clock's (written first) for the acquire's now.
	if l.ExpiresAt != stat.Mtime+60_000 || l.Ceiling != l.ExpiresAt+1000 {
		t.Errorf("lease expires at %d with ceiling %d; the slot's mtime is %d: want mtime+ttl and +tolerance",
			l.ExpiresAt, l.Ceiling, stat.Mtime)
	}
	if clock.Mtime > stat.Mtime {
		t.Errorf("clock mtime %d is after the slot's %d", clock.Mtime, stat.Mtime)
	}

	r, err := s.Renew(t.Context(), l)
	if err != nil {
		t.Fatal(err)
	}
	n, stat := getSlotNode(t, conn, s.slotPath("layout", 3))
	if n.expiresMin != l.ExpiresAt || n.ceilingMin != l.Ceiling {
		t.Errorf("after a renewal the node has expires_min %d and ceiling_min %d, want the lease's times before it, %d and %d",
			n.expiresMin, n.ceilingMin, l.ExpiresAt, l.Ceiling)
	}
	if r.ExpiresAt != max(l.ExpiresAt, stat.Mtime+60_000) {
		t.Errorf("renewed lease expires at %d, want max(%d, mtime %d + ttl)", r.ExpiresAt, l.ExpiresAt, stat.Mtime)
	}
	if err := s.Release(t.Context(), r, r.Floor+5); err != nil {
		t.Fatal(err)
	}
	n, _ = getSlotNode(t, conn, s.slotPath("layout", 3))
	want2 := slotNode{lastOwner: "host-a", fence: 1, ttl: 60000, tolerance: 1000, expiresMin: n.expiresMin,
		ceilingMin: n.ceilingMin, nextFloor: 6} // used 5, plus 1
	if fmt.Sprint(n) != fmt.Sprint(want2) {
		t.Errorf("released slot: %+v, want %+v", n, want2)
	}
}

// slotRounds watches a store's connection: it counts the requests written,
// by opcode, and the round trips they took. Every answer is held back by
// lag, so that requests the store sends together are all on the wire
// before the first answer returns; a round trip is then a run of requests
// that starts with none outstanding. The session handshake and requests
// with special xids (pings, watch resets) are not counted.
type slotRounds struct {
	lag time.Duration

	mu          sync.Mutex
	requests    map[int32]int
	trips       int
	outstanding int
	conns       int // connections opened: more than one means a connection was lost

	// cut, if set, is asked before each request frame is written: before
	// closes the connection instead of writing it, after closes it once
	// written (the answer is lost).
	cut func(op int32) (before, after bool)
}

type slotCount struct {
	trips, conns int
	requests     map[int32]int
}

func (r *slotRounds) snapshot() slotCount {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := slotCount{trips: r.trips, conns: r.conns, requests: map[int32]int{}}
	for op, n := range r.requests {
		c.requests[op] = n
	}
	return c
}

// since returns the trips and requests after c, with "all" counting every
// opcode.
func (r *slotRounds) since(c slotCount) (trips int, requests map[string]int) {
	now := r.snapshot()
	names := map[int32]string{opCreate: "create", opGetData: "getData", opSetData: "setData", opMulti: "multi"}
	requests = map[string]int{}
	for op, n := range now.requests {
		if d := n - c.requests[op]; d > 0 {
			name := names[op]
			if name == "" {
				name = fmt.Sprintf("op%d", op)
			}
			requests[name] += d
			requests["all"] += d
		}
	}
	return now.trips - c.trips, requests
}

func (r *slotRounds) wrap(c net.Conn) net.Conn {
	r.mu.Lock()
	r.conns++
	r.outstanding = 0 // requests of a lost connection are never answered
	r.mu.Unlock()
	lc := &slotLagConn{Conn: c, r: r, chunks: make(chan slotChunk, 64), done: make(chan struct{})}
	go lc.pump()
	return lc
}

// slotFrames follows length-prefixed frames through a byte stream and
// hands each frame's xid and opcode (when present) to a callback.
type slotFrames struct {
	frames int
	head   []byte
	skip   int
}

func (f *slotFrames) feed(b []byte, each func(first bool, xid, op int32)) {
	for len(b) > 0 {
		if f.skip > 0 {
			k := min(f.skip, len(b))
			f.skip -= k
			b = b[k:]
			continue
		}
		want := 12
		if len(f.head) >= 4 {
			want = 4 + min(8, int(binary.BigEndian.Uint32(f.head[:4])))
		}
		k := min(want-len(f.head), len(b))
		f.head = append(f.head, b[:k]...)
		b = b[k:]
		if len(f.head) < 4 {
			continue
		}
		length := int(binary.BigEndian.Uint32(f.head[:4]))
		if len(f.head) < 4+min(8, length) {
			continue
		}
		var xid, op int32
		if length >= 4 {
			xid = int32(binary.BigEndian.Uint32(f.head[4:8]))
		}
		if length >= 8 {
			op = int32(binary.BigEndian.Uint32(f.head[8:12]))
		}
		f.skip = length - min(8, length)
		f.head = f.head[:0]
		each(f.frames == 0, xid, op)
		f.frames++
	}
}

type slotChunk struct {
	b   []byte
	at  time.Time
	err error
}

// slotLagConn delays everything read by the rounds' lag, counting the
// answers when they are delivered.
type slotLagConn struct {
	net.Conn
	r        *slotRounds
	out, in  slotFrames
	chunks   chan slotChunk
	done     chan struct{}
	doneOnce sync.Once
	pending  []byte
	err      error
}

func (c *slotLagConn) pump() {
	for {
		b := make([]byte, 64<<10)
		n, err := c.Conn.Read(b)
		select {
		case c.chunks <- slotChunk{b[:n], time.Now(), err}:
		case <-c.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (c *slotLagConn) Read(p []byte) (int, error) {
	for len(c.pending) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		var ch slotChunk
		select {
		case ch = <-c.chunks:
		case <-c.done:
			return 0, net.ErrClosed
		}
		// Emulated network latency: deliver lag after arrival.
		if d := time.Until(ch.at.Add(c.r.lag)); d > 0 {
			timer := time.NewTimer(d)
			select {
			case <-timer.C:
			case <-c.done:
				timer.Stop()
				return 0, net.ErrClosed
			}
		}
		c.in.feed(ch.b, func(first bool, xid, _ int32) {
			if first || xid <= 0 {
				return
			}
			c.r.mu.Lock()
			c.r.outstanding = max(0, c.r.outstanding-1)
			c.r.mu.Unlock()
		})
		c.pending, c.err = ch.b, ch.err
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

func (c *slotLagConn) Write(p []byte) (int, error) {
	cutBefore, cutAfter := false, false
	c.out.feed(p, func(first bool, xid, op int32) {
		if first || xid <= 0 {
			return
		}
		c.r.mu.Lock()
		if c.r.outstanding == 0 {
			c.r.trips++
		}
		c.r.outstanding++
		if c.r.requests == nil {
			c.r.requests = map[int32]int{}
		}
		c.r.requests[op]++
		cut := c.r.cut
		c.r.mu.Unlock()
		if cut != nil {
			b, a := cut(op)
			cutBefore, cutAfter = cutBefore || b, cutAfter || a
		}
	})
	if cutBefore {
		c.Close()
		return 0, net.ErrClosed
	}
	n, err := c.Conn.Write(p)
	if cutAfter {
		c.Close()
	}
	return n, err
}

func (c *slotLagConn) Close() error {
	c.doneOnce.Do(func() { close(c.done) })
	return c.Conn.Close()
}

func (r *slotRounds) setCut(f func(op int32) (before, after bool)) {
	r.mu.Lock()
	r.cut = f
	r.mu.Unlock()
}

// openRounds opens a store whose traffic r watches.
func openRounds(t *testing.T, addr string, r *slotRounds) *driverStore {
	t.Helper()
	// 20s sessions: a connection lost to a loaded machine (a 4s session
	// was) adds trips the driver did not plan, and the count fails.
	s, err := open(testOptions(addr, map[string]string{"sessionTimeout": "20s"}), r.wrap)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// slotLag is the emulated latency of the round-trip tests: long enough
// that a batch of 256 reads leaves before the first answer returns, even on
// a loaded machine where the sending goroutine may wait for a core.
const slotLag = 300 * time.Millisecond

func wantTrips(t *testing.T, what string, trips int, requests map[string]int, wantTrips int, want map[string]int) {
	t.Helper()
	if trips != wantTrips {
		t.Errorf("%s took %d round trips, want %d (requests %v)", what, trips, wantTrips, requests)
	}
	wantRequests(t, what, requests, want)
}

// wantRequests checks the requests of each name against want.
func wantRequests(t *testing.T, what string, requests map[string]int, want map[string]int) {
	t.Helper()
	for name, n := range want {
		if requests[name] != n {
			t.Errorf("%s sent %d %s requests, want %d (all: %v)", what, requests[name], name, n, requests)
		}
	}
}

// testSlotRoundTrips: acquiring the owner's last slot is 3 round trips,
// returning a live term 2, renewing and releasing 1 each.
func testSlotRoundTrips(t *testing.T, addr string) {
	r := &slotRounds{lag: slotLag}
	s := openRounds(t, addr, r)
	other := openTest(t, testOptions(addr, map[string]string{"root": s.root}), nil)
	ns := driver.Namespace{Name: "trips", Limit: 64, Tolerance: 100 * time.Millisecond}
	for i := range 3 {
		mustAcquire(t, other, slotRequest(ns, fmt.Sprintf("other-%d", i), "x")) // slots 0, 1, 2
	}
	req := slotRequest(ns, "me", "run-1")
	req.Preferred = 3
	first := mustAcquire(t, s, req)
	if first.Slot != 3 {
		t.Fatalf("first lease on slot %d, want 3", first.Slot)
	}
	if err := s.Release(t.Context(), first, -1); err != nil {
		t.Fatal(err)
	}

	c := r.snapshot()
	l := mustAcquire(t, s, slotRequest(ns, "me", "run-2"))
	trips, reqs := r.since(c)
	if l.Slot != 3 || l.Fence != 2 {
		t.Fatalf("acquire of the owner's last slot got slot %d fence %d, want slot 3 fence 2", l.Slot, l.Fence)
	}
	// (1) clock, namespace, index, root; (2) slot 3 and preferred slot 0; (3) multi.
	wantTrips(t, "acquire of the owner's last slot", trips, reqs, 3,
		map[string]int{"setData": 1, "getData": 5, "multi": 1, "all": 7})

	c = r.snapshot()
	again := mustAcquire(t, s, slotRequest(ns, "me", "run-2"))
	trips, reqs = r.since(c)
	if again.Fence != l.Fence || again.Slot != l.Slot {
		t.Errorf("retried acquire got slot %d fence %d, want the live term, slot %d fence %d", again.Slot, again.Fence, l.Slot, l.Fence)
	}
	wantTrips(t, "acquire returning the live term", trips, reqs, 2, map[string]int{"setData": 1, "getData": 5, "all": 6})

	c = r.snapshot()
	l, err := s.Renew(t.Context(), l)
	if err != nil {
		t.Fatal(err)
	}
	trips, reqs = r.since(c)
	// One multi: the root's version checked, the slot written.
	wantTrips(t, "renew", trips, reqs, 1, map[string]int{"multi": 1, "all": 1})

	c = r.snapshot()
	if err := s.Release(t.Context(), l, l.Floor); err != nil {
		t.Fatal(err)
	}
	trips, reqs = r.since(c)
	wantTrips(t, "release", trips, reqs, 1, map[string]int{"multi": 1, "all": 1})

	// A new owner in a namespace whose first 3 slots are held: slot 0 (the
	// preferred) in round trip 2, the first batch of 4 from its own point
	// (driver.SearchStart: 10 for this owner and incarnation) in 3, the
	// multi in 4.
	c = r.snapshot()
	n := mustAcquire(t, s, slotRequest(ns, "newcomer", "run-1"))
	trips, reqs = r.since(c)
	if start := driver.SearchStart("newcomer", "run-1", ns.Limit); n.Slot != start || start != 10 {
		t.Errorf("newcomer got slot %d, want its search's start %d (10)", n.Slot, start)
	}
	wantTrips(t, "acquire of the first free slot from its own point", trips, reqs, 4,
		map[string]int{"setData": 1, "getData": 3 + 1 + 4, "multi": 1})
}

// warmClock has s make its session's clock node (the first acquire of a
// session creates it), so that the acquires a test counts are those of a
// running store.
func warmClock(t *testing.T, s *driverStore) {
	t.Helper()
	ns := driver.Namespace{Name: "warm", Limit: 1}
	if err := s.Release(t.Context(), mustAcquire(t, s, slotRequest(ns, "warm", "warm")), -1); err != nil {
		t.Fatal(err)
	}
}

// testSlotFullNamespace: with all 1024 slots held, an acquire reads every
// slot, in 7 batches (4+16+64+256+256+256 < 1024 <= +256), then fails.
func testSlotFullNamespace(t *testing.T, addr string) {
	r := &slotRounds{lag: slotLag}
	s := openRounds(t, addr, r)
	conn := rawConn(t, addr)
	ns := driver.Namespace{Name: "full", Limit: 1024, Tolerance: time.Second}
	handNamespace(t, conn, s, ns)
	handLiveSlots(t, conn, s, ns.Name, 0, ns.Limit)
	warmClock(t, s)

	c := r.snapshot()
	_, err := s.Acquire(t.Context(), slotRequest(ns, "late", "run-1"))
	trips, reqs := r.since(c)
	wantIs(t, err, driver.ErrExhausted, "Acquire in a full namespace")
	// A retry after a lost connection would add trips (and requests): say
	// so rather than report a miscount.
	if lost := r.snapshot().conns - c.conns; lost > 0 {
		t.Errorf("the connection was lost %d times during the acquire: its trips are not the driver's plan", lost)
	}
	// 2 round trips before the batches: (1) .clock, namespace, index,
	// root; (2) the preferred slot 0, which the batches then skip.
	wantTrips(t, "acquire in a full namespace of 1024", trips, reqs, 2+7,
		map[string]int{"setData": 1, "getData": 3 + 1024, "all": 1 + 3 + 1024})
}

// testSlotThousandLive: a namespace with 1000 live leases, slots 0 to 999,
// still gives a slot in a few round trips, and quickly, to an acquire whose
// search starts among them (at 900 or above).
func testSlotThousandLive(t *testing.T, addr string) {
	r := &slotRounds{lag: slotLag}
	s := openRounds(t, addr, r)
	plain := openTest(t, testOptions(addr, map[string]string{"root": s.root}), nil)
	conn := rawConn(t, addr)
	ns := driver.Namespace{Name: "crowded", Limit: 4096, Tolerance: time.Second}
	handNamespace(t, conn, s, ns)
	handLiveSlots(t, conn, s, ns.Name, 0, 1000)
	warmClock(t, s)

	// The first owners whose search starts at 900 or above among the live.
	var owners []string
	var starts []int
	for i := 0; len(owners) < 2; i++ {
		o := fmt.Sprintf("newcomer-%d", i)
		if st := driver.SearchStart(o, "run-1", ns.Limit); st >= 900 && st < 1000 {
			owners, starts = append(owners, o), append(starts, st)
		}
	}
	c := r.snapshot()
	l := mustAcquire(t, s, slotRequest(ns, owners[0], "run-1"))
	trips, reqs := r.since(c)
	if l.Slot != 1000 {
		t.Errorf("got slot %d, want 1000", l.Slot)
	}
	// Batches of 4, 16, 64, 256 from its start, until one holds slot 1000.
	batches := 0
	for read, size := 0, 4; read <= 1000-starts[0]; read, size = read+size, min(4*size, 256) {
		batches++
	}
	wantTrips(t, fmt.Sprintf("acquire of slot 1000 from %d", starts[0]), trips, reqs, 2+batches+1, map[string]int{"multi": 1})

	start := time.Now()
	l2 := mustAcquire(t, plain, slotRequest(ns, owners[1], "run-1"))
	took := time.Since(start)
	t.Logf("acquire of slot %d among 1001 live leases took %v (no added latency)", l2.Slot, took)
	if l2.Slot != 1001 {
		t.Errorf("second newcomer (search from %d) got slot %d, want 1001", starts[1], l2.Slot)
	}
	if took > 30*time.Second { // a guard against a hang; the trips above are the proof
		t.Errorf("acquire of slot 1001 took %v", took)
	}
}

// testSlotOwnerIndex: the owner index lists the owner's last 8 slots, most
// recent first, and an acquire tries them first.
func testSlotOwnerIndex(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	conn := rawConn(t, addr)
	ns := driver.Namespace{Name: "index", Limit: 16, Tolerance: 0}
	var leases []driver.Lease
	// index is the owner index after the terms of runs, oldest first,
	// with slot first (if >= 0) put first: the last 8, newest first.
	index := func(first int, runs ...int) string {
		out := []string{}
		if first >= 0 {
			out = append(out, strconv.Itoa(first))
		}
		for i := len(runs) - 1; i >= 0; i-- {
			if n := leases[runs[i]].Slot; n != first {
				out = append(out, strconv.Itoa(n))
			}
		}
		return strings.Join(out[:min(len(out), 8)], ",")
	}
	for i := range 10 {
		// Another incarnation without Reclaim never takes a live term: each
		// gets another slot.
		leases = append(leases, mustAcquire(t, s, slotRequest(ns, "owner", fmt.Sprintf("run-%d", i))))
	}
	want := index(-1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
	if data, _, err := conn.Get(s.ownerPath("index", "owner")); err != nil || string(data) != want {
		t.Errorf("owner index holds %q (err %v), want %q", data, err, want)
	}
	for _, i := range []int{3, 7} {
		if err := s.Release(t.Context(), leases[i], -1); err != nil {
			t.Fatal(err)
		}
	}
	// The slot of run 7 is listed before run 3's: the most recent first.
	l := mustAcquire(t, s, slotRequest(ns, "owner", "run-new"))
	if l.Slot != leases[7].Slot {
		t.Errorf("acquire got slot %d, want %d, the most recent free slot of the owner's index", l.Slot, leases[7].Slot)
	}
	want = index(leases[7].Slot, 2, 3, 4, 5, 6, 8, 9)
	if data, _, err := conn.Get(s.ownerPath("index", "owner")); err != nil || string(data) != want {
		t.Errorf("owner index holds %q (err %v), want %q", data, err, want)
	}
}

// testSlotCorrupt: slot data that does not parse is never overwritten; an
// acquire passes over it and names it when it finds nothing else; the
// calls that need the slot fail with ErrCorrupt naming the path.
func testSlotCorrupt(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	conn := rawConn(t, addr)
	ctx := t.Context()
	ns := driver.Namespace{Name: "corrupt", Limit: 3, Tolerance: 0}
	l := mustAcquire(t, s, slotRequest(ns, "a", "run")) // slot 0
	path0, path1 := s.slotPath(ns.Name, 0), s.slotPath(ns.Name, 1)
	garbage := []byte("owner=x\nfence=banana\n")
	if _, err := conn.Set(path0, garbage, -1); err != nil {
		t.Fatal(err)
	}
	mustCreatePath(t, conn, path1, "not a slot")
	check := func(err error, path, what string) {
		t.Helper()
		if wantIs(t, err, driver.ErrCorrupt, "%s", what) && !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v does not name %s", what, err, path)
		}
	}
	_, err := s.Renew(ctx, l)
	check(err, path0, "Renew of a lease on a corrupt slot")
	check(s.Release(ctx, l, -1), path0, "Release of a lease on a corrupt slot")
	_, err = s.Slots(ctx, ns.Name)
	check(err, path0, "Slots")

	b := mustAcquire(t, s, slotRequest(ns, "b", "run"))
	if b.Slot != 2 {
		t.Errorf("acquire got slot %d, want 2 (0 and 1 are corrupt)", b.Slot)
	}
	_, err = s.Acquire(ctx, slotRequest(ns, "c", "run"))
	wantIs(t, err, driver.ErrExhausted, "Acquire with only corrupt slots free")
	check(err, path0, "Acquire with only corrupt slots free")
	check(err, path1, "Acquire with only corrupt slots free")
	check(s.SeedSlot(ctx, ns, 1, 5, 5), path1, "SeedSlot of a corrupt slot")
	for path, want := range map[string]string{path0: string(garbage), path1: "not a slot"} {
		if data, _, err := conn.Get(path); err != nil || string(data) != want {
			t.Errorf("%s holds %q (err %v), want it untouched: %q", path, data, err, want)
		}
	}
	// A corrupt owner index is reported too, and left alone: it is only a
	// hint, and deleting it is always safe.
	idx := s.ownerPath(ns.Name, "b")
	if _, err := conn.Set(idx, []byte("2,x"), -1); err != nil {
		t.Fatal(err)
	}
	_, err = s.Acquire(ctx, slotRequest(ns, "b", "run"))
	check(err, idx, "Acquire with a corrupt owner index")
	if err := conn.Delete(idx, -1); err != nil {
		t.Fatal(err)
	}
	if again := mustAcquire(t, s, slotRequest(ns, "b", "run")); again.Fence != b.Fence || again.Slot != b.Slot {
		t.Errorf("after the index was deleted, acquire got slot %d fence %d, want the live term %d/%d", again.Slot, again.Fence, b.Slot, b.Fence)
	}
}

// testSlotCorruptNamespace: a namespace node that does not parse fails
// acquires and listings with ErrCorrupt naming it.
func testSlotCorruptNamespace(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	conn := rawConn(t, addr)
	ctx := t.Context()
	path := s.nsPath("bad")
	mustCreatePath(t, conn, path, "limit=many\n")
	ns := driver.Namespace{Name: "bad", Limit: 4}
	for what, err := range map[string]error{
		"Acquire":    func() error { _, err := s.Acquire(ctx, slotRequest(ns, "a", "run")); return err }(),
		"Namespaces": func() error { _, err := s.Namespaces(ctx); return err }(),
		"Slots":      func() error { _, err := s.Slots(ctx, "bad"); return err }(),
		"SeedSlot":   s.SeedSlot(ctx, ns, 0, 1, 1),
	} {
		if wantIs(t, err, driver.ErrCorrupt, "%s", what) && !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v does not name %s", what, err, path)
		}
	}
}

// testSlotConfigMismatch: the error names both settings.
func testSlotConfigMismatch(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	ns := driver.Namespace{Name: "settings", Limit: 8, Tolerance: 250 * time.Millisecond}
	mustAcquire(t, s, slotRequest(ns, "a", "run"))
	other := driver.Namespace{Name: "settings", Limit: 16, Tolerance: time.Second}
	_, err := s.Acquire(t.Context(), slotRequest(other, "b", "run"))
	if wantIs(t, err, driver.ErrConfigMismatch, "Acquire with other settings") {
		for _, part := range []string{"limit 8", "tolerance 250ms", "limit 16", "tolerance 1s"} {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("%v does not say %q", err, part)
			}
		}
	}
}

// testSlotUnknownNamesKept: lines the store does not know survive every
// rewrite of the node.
func testSlotUnknownNamesKept(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	conn := rawConn(t, addr)
	ctx := t.Context()
	ns := driver.Namespace{Name: "kept", Limit: 1}
	handNamespace(t, conn, s, ns)
	path := s.slotPath(ns.Name, 0)
	mustCreatePath(t, conn, path, "restored_from=backup-2024-05-01\n"+
		"owner=\nincarnation=\nlast_owner=old\nfence=41\nttl=1000\ntolerance=0\nfloor=10\n"+
		"expires_min=0\nceiling_min=0\nnext_floor=5000\nx.note=a=b\n")
	l := mustAcquire(t, s, slotRequest(ns, "a", "run"))
	if l.Fence != 42 || l.Floor != 5000 {
		t.Errorf("term on a hand-written slot: fence %d floor %d, want 42 and 5000", l.Fence, l.Floor)
	}
	l, err := s.Renew(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, l, -1); err != nil {
		t.Fatal(err)
	}
	n, _ := getSlotNode(t, conn, path)
	want := []nodeLine{{"restored_from", "backup-2024-05-01"}, {"x.note", "a=b"}}
	if fmt.Sprint(n.extra) != fmt.Sprint(want) {
		t.Errorf("unknown lines after acquire, renew, release: %q, want %q", n.extra, want)
	}
}

// testSlotHandWritten: a slot written by hand with a live term blocks
// others and is reclaimed by its owner.
func testSlotHandWritten(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	conn := rawConn(t, addr)
	ns := driver.Namespace{Name: "hand", Limit: 2, Tolerance: 0}
	handNamespace(t, conn, s, ns)
	mustCreatePath(t, conn, s.slotPath(ns.Name, 0),
		"\nfence=7\nowner=host-a\nincarnation=old\nlast_owner=\nttl=600000\ntolerance=0\nfloor=100\nexpires_min=0\nceiling_min=100\nnext_floor=100\n\n")
	if l := mustAcquire(t, s, slotRequest(ns, "host-b", "run")); l.Slot != 1 {
		t.Errorf("host-b got slot %d, want 1: slot 0 holds a live term", l.Slot)
	}
	req := slotRequest(ns, "host-a", "new")
	req.Reclaim = true
	l := mustAcquire(t, s, req)
	if l.Slot != 0 || l.Fence != 8 || l.Floor < 100 {
		t.Errorf("reclaim got slot %d fence %d floor %d, want slot 0, fence 8, floor at least 100", l.Slot, l.Fence, l.Floor)
	}
}

// testSlotLostAcquireAnswer: the acquire's multi is applied but its answer
// lost; the store proves the term its own by owner, incarnation and fence.
func testSlotLostAcquireAnswer(t *testing.T, addr string) {
	r := &slotRounds{}
	s := openRounds(t, addr, r)
	conn := rawConn(t, addr)
	ns := driver.Namespace{Name: "lost", Limit: 4}
	mustAcquire(t, s, slotRequest(ns, "first", "run")) // creates the namespace; slot 0, preferred
	var armed atomic.Bool
	armed.Store(true)
	r.setCut(func(op int32) (bool, bool) { return false, op == opMulti && armed.CompareAndSwap(true, false) })
	c := r.snapshot()
	req := slotRequest(ns, "me", "run")
	req.Preferred = 1
	l := mustAcquire(t, s, req)
	if armed.Load() {
		t.Fatal("no multi was sent")
	}
	if _, reqs := r.since(c); reqs["multi"] == 1 {
		t.Log("the lost multi was applied; the term was proven by the slot's data")
	} else {
		t.Logf("the lost multi was not applied; %d multis sent", reqs["multi"])
	}
	n, _ := getSlotNode(t, conn, s.slotPath(ns.Name, l.Slot))
	if l.Slot != 1 || l.Fence != 1 || n.owner != "me" || n.fence != 1 {
		t.Errorf("lease slot %d fence %d; node holds %s fence %d: want slot 1 fence 1 held by me", l.Slot, l.Fence, n.owner, n.fence)
	}
	if _, err := s.Renew(t.Context(), l); err != nil {
		t.Errorf("Renew of a term proven after a lost answer: %v", err)
	}
	if data, _, err := conn.Get(s.ownerPath(ns.Name, "me")); err != nil || string(data) != "1" {
		t.Errorf("owner index holds %q (err %v), want \"1\"", data, err)
	}
}

// testSlotUnsentAcquire: the connection breaks before the multi is sent;
// the store finds the slot still free and takes it on a second try.
func testSlotUnsentAcquire(t *testing.T, addr string) {
	r := &slotRounds{}
	s := openRounds(t, addr, r)
	ns := driver.Namespace{Name: "unsent", Limit: 4}
	mustAcquire(t, s, slotRequest(ns, "first", "run"))
	var armed atomic.Bool
	armed.Store(true)
	r.setCut(func(op int32) (bool, bool) { return op == opMulti && armed.CompareAndSwap(true, false), false })
	c := r.snapshot()
	req := slotRequest(ns, "me", "run")
	req.Preferred = 1
	l := mustAcquire(t, s, req)
	_, reqs := r.since(c)
	if l.Slot != 1 || l.Fence != 1 {
		t.Errorf("lease slot %d fence %d, want slot 1 fence 1", l.Slot, l.Fence)
	}
	if reqs["multi"] != 2 {
		t.Errorf("%d multis sent, want 2 (one cut before it left)", reqs["multi"])
	}
}

// testSlotAbandonedAcquire: the acquire's multi is held in flight until
// the caller's context ends, then applied. Retrying the acquire under the
// same incarnation returns that term; it does not start another.
func testSlotAbandonedAcquire(t *testing.T, addr string) {
	r := &slotRounds{}
	s := openRounds(t, addr, r)
	conn := rawConn(t, addr)
	ns := driver.Namespace{Name: "abandoned", Limit: 4}
	mustAcquire(t, s, slotRequest(ns, "first", "run"))
	held, release := make(chan struct{}), make(chan struct{})
	var armed atomic.Bool
	armed.Store(true)
	r.setCut(func(op int32) (bool, bool) {
		if op == opMulti && armed.CompareAndSwap(true, false) {
			close(held)
			<-release
		}
		return false, false
	})
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		req := slotRequest(ns, "me", "run")
		req.Preferred = 1
		_, err := s.Acquire(ctx, req)
		errc <- err
	}()
	<-held
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire whose context ended in flight: %v, want context.Canceled", err)
	}
	close(release)
	path := s.slotPath(ns.Name, 1)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if data, _, err := conn.Get(path); err == nil {
			t.Logf("the abandoned multi was applied: %q", data)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the abandoned multi was not applied within 10s")
		}
		select {
		case <-time.After(10 * time.Millisecond): // polling the server
		case <-t.Context().Done():
			return
		}
	}
	l := mustAcquire(t, s, slotRequest(ns, "me", "run"))
	n, _ := getSlotNode(t, conn, path)
	if l.Slot != 1 || l.Fence != 1 || n.fence != 1 {
		t.Errorf("retried acquire got slot %d fence %d with the node at fence %d, want the abandoned term: slot 1, fence 1",
			l.Slot, l.Fence, n.fence)
	}
}

// testSlotLostReleaseAnswer: a release applied with its answer lost is
// reported as done, and the slot is released. A second Release of the term
// is ErrLeaseLost, even when its own answer is lost too: the released node
// it then reads is the first release's, not its own.
func testSlotLostReleaseAnswer(t *testing.T, addr string) {
	r := &slotRounds{}
	s := openRounds(t, addr, r)
	conn := rawConn(t, addr)
	ns := driver.Namespace{Name: "release", Limit: 2}
	l := mustAcquire(t, s, slotRequest(ns, "me", "run"))
	var armed atomic.Bool
	armed.Store(true)
	r.setCut(func(op int32) (bool, bool) { return false, op == opMulti && armed.CompareAndSwap(true, false) })
	if err := s.Release(t.Context(), l, l.Floor+1); err != nil {
		t.Errorf("Release across a lost answer: %v", err)
	}
	if armed.Load() {
		t.Fatal("no write (multi) was sent")
	}
	n, _ := getSlotNode(t, conn, s.slotPath(ns.Name, 0))
	if n.owner != "" || n.lastOwner != "me" || n.nextFloor != l.Floor+2 {
		t.Errorf("slot after the release: %+v, want released by me with next floor %d", n, l.Floor+2)
	}
	wantIs(t, s.Release(t.Context(), l, -1), driver.ErrLeaseLost, "a second Release")
	armed.Store(true)
	wantIs(t, s.Release(t.Context(), l, -1), driver.ErrLeaseLost, "a third Release, its answer lost")
	if armed.Load() {
		t.Fatal("the third Release sent no write (multi)")
	}
}

// testSlotAbandonedRelease: a Release given up on before its outcome was
// known (its answer lost, then its context ended) may have landed without
// the store seeing it. A second Release whose own answer is lost then reads
// the released node, written after anything the store saw: it must not take
// that node for its own write, and is ErrLeaseLost.
func testSlotAbandonedRelease(t *testing.T, addr string) {
	r := &slotRounds{}
	s := openRounds(t, addr, r)
	conn := rawConn(t, addr)
	ns := driver.Namespace{Name: "abandoned-release", Limit: 2}
	l := mustAcquire(t, s, slotRequest(ns, "me", "run"))
	ctx, cancel := context.WithCancel(t.Context())
	var armed atomic.Bool
	armed.Store(true)
	r.setCut(func(op int32) (bool, bool) {
		if op == opMulti && armed.CompareAndSwap(true, false) {
			cancel() // the caller gives up once the write is on the wire
			return false, true
		}
		return false, false
	})
	if err := s.Release(ctx, l, l.Floor+1); err == nil {
		t.Fatal("a Release whose context ended with its answer lost returned nil")
	}
	path := s.slotPath(ns.Name, l.Slot)
	deadline := time.Now().Add(10 * time.Second)
	for { // the abandoned write is observable only on the server
		if n, _ := getSlotNode(t, conn, path); n.owner == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the abandoned release was not applied within 10s")
		}
		select {
		case <-time.After(10 * time.Millisecond): // polling the server
		case <-t.Context().Done():
			return
		}
	}
	// A call through the store (one that reads no slot node) waits for its
	// connection to be back, so that the second Release's write is sent.
	if _, err := s.Namespaces(t.Context()); err != nil {
		t.Fatalf("Namespaces after the cut: %v", err)
	}
	armed.Store(true)
	r.setCut(func(op int32) (bool, bool) { return false, op == opMulti && armed.CompareAndSwap(true, false) })
	wantIs(t, s.Release(t.Context(), l, -1), driver.ErrLeaseLost, "a second Release, its answer lost")
	if armed.Load() {
		t.Fatal("the second Release sent no write (multi)")
	}
}

// testSlotRecreated: a slot node deleted and recreated by hand (even with
// the same term in it) is not the node the lease was written on.
func testSlotRecreated(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	conn := rawConn(t, addr)
	ctx := t.Context()
	ns := driver.Namespace{Name: "recreated", Limit: 2}
	l := mustAcquire(t, s, slotRequest(ns, "me", "run"))
	path := s.slotPath(ns.Name, l.Slot)
	data, stat, err := conn.Get(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Delete(path, -1); err != nil {
		t.Fatal(err)
	}
	_, err = s.Renew(ctx, l)
	wantIs(t, err, driver.ErrLeaseLost, "Renew after the node was deleted")
	if ok, _, _ := conn.Exists(path); ok {
		t.Errorf("Renew recreated %s", path)
	}
	if _, err := conn.Create(path, data, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	for v := int32(0); v < stat.Version; v++ {
		if _, err := conn.Set(path, data, v); err != nil {
			t.Fatal(err)
		}
	}
	_, err = s.Renew(ctx, l)
	if wantIs(t, err, driver.ErrLeaseLost, "Renew on a recreated node at the same version") {
		wantIs(t, err, driver.ErrRecreated, "Renew on a recreated node at the same version")
	}
	wantIs(t, s.Release(ctx, l, -1), driver.ErrLeaseLost, "Release on a recreated node")
}

// testSlotVersionMinusOne: a compare-and-set is never sent with expected
// version -1 (which ZooKeeper reads as "any version").
func testSlotVersionMinusOne(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	conn := rawConn(t, addr)
	ns := driver.Namespace{Name: "minus", Limit: 2}
	l := mustAcquire(t, s, slotRequest(ns, "me", "run"))
	st := *l.State.(*slotState)
	st.version = -1
	l.State = &st
	path := s.slotPath(ns.Name, l.Slot)
	_, before, _ := conn.Get(path)
	_, err := s.Renew(t.Context(), l)
	if err == nil || !strings.Contains(err.Error(), "version -1") {
		t.Errorf("Renew at version -1: %v, want a refusal naming version -1", err)
	}
	if _, after, _ := conn.Get(path); after.Version != before.Version {
		t.Errorf("the node went from version %d to %d: it was written", before.Version, after.Version)
	}
	// An acquire passes over a slot at version -1 and names it.
	q := &acquisition{req: slotRequest(ns, "other", "run"), passed: map[int]error{}}
	r := slotRead{n: 1, path: "/x/1", exists: true, node: slotNode{fence: 3}, stat: zk.Stat{Version: -1}}
	if v := q.judge(r); v != driver.SlotBusy || q.passed[1] == nil || !strings.Contains(q.passed[1].Error(), "version -1") {
		t.Errorf("judge of a free slot at version -1 = %v (passed %v), want it passed over naming version -1", v, q.passed)
	}
}

// testSlotStatelessLease: a lease without the driver's state (rebuilt by
// hand) is renewed and released after a read.
func testSlotStatelessLease(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	ns := driver.Namespace{Name: "stateless", Limit: 2}
	l := mustAcquire(t, s, slotRequest(ns, "me", "run"))
	l.State = nil
	r, err := s.Renew(t.Context(), l)
	if err != nil || r.ExpiresAt < l.ExpiresAt {
		t.Fatalf("Renew of a lease without state: %+v, %v", r, err)
	}
	r.State = "something else"
	if err := s.Release(t.Context(), r, -1); err != nil {
		t.Errorf("Release of a lease with foreign state: %v", err)
	}
}

// testSlotListings: Slots lists used slots (not .clock), refuses a stray
// child naming it, and a missing namespace is ErrNotFound.
func testSlotListings(t *testing.T, addr string) {
	s := openTest(t, testOptions(addr, nil), nil)
	conn := rawConn(t, addr)
	ctx := t.Context()
	if nss, err := s.Namespaces(ctx); err != nil || nss == nil || len(nss) != 0 {
		t.Errorf("Namespaces of an empty root = %#v, %v; want an empty slice", nss, err)
	}
	_, err := s.Slots(ctx, "none")
	wantIs(t, err, driver.ErrNotFound, "Slots of a missing namespace")
	ns := driver.Namespace{Name: "listed", Limit: 16}
	for _, p := range []int{9, 2, 12} {
		req := slotRequest(ns, fmt.Sprintf("o%d", p), "run")
		req.Preferred = p
		mustAcquire(t, s, req)
	}
	infos, err := s.Slots(ctx, ns.Name)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, in := range infos {
		got = append(got, in.Slot)
	}
	if fmt.Sprint(got) != "[2 9 12]" {
		t.Errorf("Slots lists %v, want [2 9 12]", got)
	}
	stray := s.nsPath(ns.Name) + "/09"
	mustCreatePath(t, conn, stray, "")
	_, err = s.Slots(ctx, ns.Name)
	if wantIs(t, err, driver.ErrCorrupt, "Slots with a stray child") && !strings.Contains(err.Error(), stray) {
		t.Errorf("%v does not name %s", err, stray)
	}
	st := portable(t, s)
	if _, err := st.Slots().List(ctx, "a\U0001F600"); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("Slots of a namespace with a character above U+FFFF: %v, want ErrInvalidArgument", err)
	}
}

// TestSlotEnsembleFaults is the lease-safety proof under faults: workers
// on 6 stores, each store reaching every member of a 3-server ensemble
// through proxies of its own, compete for 6 slots (acquire, renew, release
// with or without the last timestamp used, abandon, restart and reclaim)
// while members (the leader included) are killed and restarted,
// connections are cut and sessions expire. A recorder keeps every lease
// ever granted; per slot, terms in fence order must have distinct fences
// and timestamp windows [floor, end) that do not overlap, where end is the
// highest ceiling the holder was given, or used+1 after a release that
// stated used.
func TestSlotEnsembleFaults(t *testing.T) { onEachEnsemble(t, 15*time.Second, testSlotEnsembleFaults) }

type slotTermKey struct {
	slot  int
	fence int64
}

// slotTerm is one term as its holder saw it.
type slotTerm struct {
	owner, incarnation string
	floor              int64
	ceiling            int64 // the highest the holder was given
	usedEnd            int64 // used+1 when released with used, else 0
	grants             int
}

func (tm *slotTerm) end() int64 {
	if tm.usedEnd > 0 {
		return tm.usedEnd
	}
	return tm.ceiling
}

// slotRecorder keeps every lease granted during a test.
type slotRecorder struct {
	mu     sync.Mutex
	terms  map[slotTermKey]*slotTerm
	clash  []string
	grants int
}

func (r *slotRecorder) granted(l driver.Lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.grants++
	k := slotTermKey{l.Slot, l.Fence}
	tm := r.terms[k]
	if tm == nil {
		r.terms[k] = &slotTerm{owner: l.Owner, incarnation: l.Incarnation, floor: l.Floor, ceiling: l.Ceiling, grants: 1}
		return
	}
	if tm.owner != l.Owner || tm.incarnation != l.Incarnation || tm.floor != l.Floor {
		r.clash = append(r.clash, fmt.Sprintf("slot %d fence %d granted to %s/%s (floor %d) and to %s/%s (floor %d)",
			l.Slot, l.Fence, tm.owner, tm.incarnation, tm.floor, l.Owner, l.Incarnation, l.Floor))
	}
	tm.grants++
	tm.ceiling = max(tm.ceiling, l.Ceiling)
}

func (r *slotRecorder) renewed(l driver.Lease) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if tm := r.terms[slotTermKey{l.Slot, l.Fence}]; tm != nil {
		tm.ceiling = max(tm.ceiling, l.Ceiling)
	}
}

func (r *slotRecorder) released(l driver.Lease, used int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if tm := r.terms[slotTermKey{l.Slot, l.Fence}]; tm != nil && used >= 0 {
		tm.usedEnd = used + 1
	}
}

// check reports clashes and overlapping windows, and returns the highest
// fence recorded per slot.
func (r *slotRecorder) check(t *testing.T) map[int]int64 {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.clash {
		t.Errorf("two holders of one term: %s", c)
	}
	bySlot := map[int][]slotTermKey{}
	for k := range r.terms {
		bySlot[k.slot] = append(bySlot[k.slot], k)
	}
	top := map[int]int64{}
	overlaps := 0
	for slot, keys := range bySlot {
		slices.SortFunc(keys, func(a, b slotTermKey) int { return cmpInt64(a.fence, b.fence) })
		for i := 1; i < len(keys); i++ {
			prev, cur := r.terms[keys[i-1]], r.terms[keys[i]]
			if cur.floor < prev.end() {
				if overlaps++; overlaps <= 10 {
					t.Errorf("slot %d: fence %d (%s/%s) has window [%d, %d), overlapping [%d, %d) of fence %d (%s/%s)",
						slot, keys[i].fence, cur.owner, cur.incarnation, cur.floor, cur.end(),
						prev.floor, prev.end(), keys[i-1].fence, prev.owner, prev.incarnation)
				}
			}
		}
		top[slot] = keys[len(keys)-1].fence
		t.Logf("slot %d: %d terms recorded, fences %d..%d", slot, len(keys), keys[0].fence, top[slot])
	}
	if overlaps > 10 {
		t.Errorf("%d overlapping windows in all", overlaps)
	}
	return top
}

func testSlotEnsembleFaults(t *testing.T, version string, duration time.Duration) {
	ens := zktest.StartEnsemble(t, version, 3)
	const stores, workers = 6, 2
	root := randomRoot()
	ns := driver.Namespace{Name: "faults", Limit: 6, Tolerance: 100 * time.Millisecond}
	const ttl = 500 * time.Millisecond

	sts, proxies := openBehindProxies(t, ens, stores, root)

	rec := &slotRecorder{terms: map[slotTermKey]*slotTerm{}}
	var failures sync.Map
	bug := func(i int, what string, err error) {
		if errors.Is(err, driver.ErrCorrupt) || errors.Is(err, driver.ErrConfigMismatch) ||
			errors.Is(err, driver.ErrInvalidArgument) || (errors.Is(err, driver.ErrRecreated)) {
			t.Errorf("store %d: %s: %v", i, what, err)
		}
		countFailure(&failures, what+": "+strings.ReplaceAll(err.Error(), root, "{root}"))
	}
	run, stop := context.WithCancel(t.Context())
	wl := &slotWorkload{t: t, run: run, ns: ns, ttl: ttl, rec: rec, bug: bug}
	var wg sync.WaitGroup
	for i, s := range sts {
		for w := range workers {
			wg.Go(func() { wl.worker(i, w, s) })
		}
	}

	log := zktest.EnsembleFaults(t, ens, proxies, rand.New(rand.NewPCG(13, 17))).Run(t, duration)
	stop()
	wg.Wait()
	t.Logf("faults: %s", strings.Join(log, "; "))

	ens.WaitQuorum(t)
	top := rec.check(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	syncRead(t, sts[0], sts[0].nsPath(ns.Name))
	infos, err := sts[0].Slots(ctx, ns.Name)
	if err != nil {
		t.Fatalf("Slots after the faults: %v", err)
	}
	for _, in := range infos {
		if in.Fence < top[in.Slot] {
			t.Errorf("slot %d holds fence %d, below fence %d granted", in.Slot, in.Fence, top[in.Slot])
		}
	}
	var summary []string
	failures.Range(func(k, v any) bool {
		summary = append(summary, fmt.Sprintf("%dx %s", v.(*atomic.Int64).Load(), k))
		return true
	})
	slices.Sort(summary)
	t.Logf("%d leases granted (%d terms), %d renewals, %d releases, %d abandoned, %d acquires found no free slot; failures during faults:\n\t%s",
		rec.grants, len(rec.terms), wl.renews.Load(), wl.releases.Load(), wl.abandons.Load(), wl.exhausted.Load(), strings.Join(summary, "\n\t"))
	if len(rec.terms) < 40 {
		t.Errorf("only %d terms recorded: the test proved little", len(rec.terms))
	}
}

// slotWorkload is what the workers of testSlotEnsembleFaults share.
type slotWorkload struct {
	t                                     *testing.T
	run                                   context.Context // ends the work
	ns                                    driver.Namespace
	ttl                                   time.Duration
	rec                                   *slotRecorder
	bug                                   func(store int, what string, err error)
	renews, releases, abandons, exhausted atomic.Int64
}

// pause waits d, or until the work ends.
func (wl *slotWorkload) pause(d time.Duration) {
	select {
	case <-time.After(d):
	case <-wl.run.Done():
	}
}

// worker is worker w of store i, s: until the work ends it takes a slot,
// holds the term (renewing), then lets it expire, reclaims it as a
// restarted holder would, or releases it.
func (wl *slotWorkload) worker(i, w int, s *driverStore) {
	rnd := rand.New(rand.NewPCG(uint64(i), uint64(w)))
	owner := fmt.Sprintf("w%d-%d", i, w)
	runs, reclaim := 0, false
	for wl.run.Err() == nil {
		ctx, cancel := context.WithTimeout(wl.run, 2*time.Second)
		l, err := s.Acquire(ctx, driver.AcquireRequest{
			Namespace: wl.ns, Owner: owner, Incarnation: fmt.Sprintf("%s-run%d", owner, runs),
			TTL: wl.ttl, Preferred: rnd.IntN(wl.ns.Limit), Reclaim: reclaim,
		})
		cancel()
		if errors.Is(err, driver.ErrExhausted) {
			wl.exhausted.Add(1)
			wl.pause(time.Duration(10+rnd.IntN(30)) * time.Millisecond) // pacing, not synchronisation
			continue
		}
		if err != nil {
			wl.bug(i, "Acquire", err)
			continue
		}
		if l.Floor > l.Ceiling || l.Ceiling < l.ExpiresAt+wl.ns.Tolerance.Milliseconds() {
			wl.t.Errorf("store %d: lease %+v has bad times", i, l)
		}
		wl.rec.granted(l)
		reclaim = false
		// Hold the term, renewing a third of the way before its
		// expiry, until the hold ends, the term is lost, or it
		// expires unrenewed.
		holdUntil := time.Now().Add(time.Duration(rnd.Int64N(int64(2 * wl.ttl))))
		held := true
		for held && wl.run.Err() == nil && time.Now().Before(holdUntil) {
			renewAt := time.UnixMilli(l.ExpiresAt - wl.ttl.Milliseconds()*2/3)
			if renewAt.After(holdUntil) {
				break
			}
			if d := time.Until(renewAt); d > 0 {
				wl.pause(d) // waiting for a known instant
			}
			if time.Now().UnixMilli() >= l.ExpiresAt {
				held = false // expired: the holder has stopped issuing
				break
			}
			ctx, cancel := context.WithDeadline(wl.run, time.UnixMilli(l.ExpiresAt))
			r, err := s.Renew(ctx, l)
			cancel()
			switch {
			case err == nil:
				wl.renews.Add(1)
				wl.rec.renewed(r)
				l = r
			case errors.Is(err, driver.ErrLeaseLost):
				held = false
			default:
				wl.bug(i, "Renew", err)
			}
		}
		if !held || time.Now().UnixMilli() >= l.ExpiresAt {
			wl.abandons.Add(1)
			continue
		}
		switch rnd.IntN(4) {
		case 0: // abandon: the term expires
			wl.abandons.Add(1)
		case 1: // a restart: a new incarnation reclaims the slot
			wl.abandons.Add(1)
			runs++
			reclaim = true
		case 2:
			used := l.Floor + rnd.Int64N(max(1, l.Ceiling-l.Floor))
			wl.rec.released(l, used)
			ctx, cancel := context.WithTimeout(wl.run, 2*time.Second)
			if err := s.Release(ctx, l, used); err != nil {
				wl.bug(i, "Release", err)
			} else {
				wl.releases.Add(1)
			}
			cancel()
		default:
			ctx, cancel := context.WithTimeout(wl.run, 2*time.Second)
			if err := s.Release(ctx, l, -1); err != nil {
				wl.bug(i, "Release", err)
			} else {
				wl.releases.Add(1)
			}
			cancel()
		}
	}
}

// testSlotPurge: Purge deletes every node below the root, children before
// parents, and stops when a node changes under it.
func testSlotPurge(t *testing.T, addr string) {
	r := &slotRounds{}
	s := openRounds(t, addr, r)
	conn := rawConn(t, addr)
	ctx := t.Context()
	ns := driver.Namespace{Name: "purged", Limit: 4}
	// A live term stops a purge (TestPurgeLiveLease): released first, with
	// its last timestamp, so that no next floor ahead stops it either.
	first := mustAcquire(t, s, slotRequest(ns, "owner", "run"))
	if err := s.Release(ctx, first, first.Floor); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(ctx, "a/b", 1); err != nil {
		t.Fatal(err)
	}
	deleted, err := s.Purge(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, p := range []string{"/slot", "/slot/purged", "/slot/purged/.clock", "/slot/purged/0", "/owner",
		"/owner/purged", "/owner/purged/owner", "/range", "/range/a", "/range/a/b",
		"/clock", fmt.Sprintf("/clock/%016x", uint64(s.conn.SessionID())), "/made", "/made/purged", "/made/purged/0"} {
		want[s.root+p] = true
	}
	at := map[string]int{}
	for i, p := range deleted {
		at[p] = i
		if !want[p] {
			t.Errorf("Purge deleted %s, not expected", p)
		}
	}
	for p := range want {
		i, ok := at[p]
		if !ok {
			t.Errorf("Purge did not report %s", p)
		}
		for q, j := range at {
			if strings.HasPrefix(q, p+"/") && j > i {
				t.Errorf("Purge deleted %s after its parent %s", q, p)
			}
		}
	}
	if names, _, err := conn.Children(s.root); err != nil || len(names) != 0 {
		t.Errorf("after Purge the root has children %v (err %v)", names, err)
	}

	// A node written between the walk and its delete stops the purge.
	second := mustAcquire(t, s, slotRequest(ns, "owner", "run"))
	if err := s.Release(ctx, second, second.Floor); err != nil {
		t.Fatal(err)
	}
	path := s.slotPath(ns.Name, 0)
	const opDelete = 2
	var armed atomic.Bool
	armed.Store(true)
	r.setCut(func(op int32) (bool, bool) {
		if op == opDelete && armed.CompareAndSwap(true, false) {
			if _, err := conn.Set(path, []byte("changed"), -1); err != nil {
				t.Errorf("Set: %v", err)
			}
		}
		return false, false
	})
	_, err = s.Purge(ctx)
	if err == nil || !strings.Contains(err.Error(), "changed during the purge") {
		t.Errorf("Purge with a node written meanwhile: %v, want a refusal", err)
	}
	if data, _, err := conn.Get(path); err != nil || string(data) != "changed" {
		t.Errorf("%s holds %q (err %v) after the refused purge, want it kept", path, data, err)
	}
}
