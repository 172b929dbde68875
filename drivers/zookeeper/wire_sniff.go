package zookeeper

import (
	"bytes"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// The wire sniffer: go-zookeeper does not expose what a store that makes
// its own connection needs to know of it, so the session reads it off the
// store's network connections. The handshake answer carries the session
// timeout the server granted (the Locker's liveness rule needs it,
// lock_confirm.go) and the session ID (both go into the Connected event,
// session_events.go); the frames written tell a Lock call when its create
// is on its way (lock_create.go).

// wireLog is what the store's own connections carried.
type wireLog struct {
	negotiated atomic.Int64 // ms, from the last handshake answer
	sessionID  atomic.Int64 // from the last handshake answer
	writes     frameWatch   // callers waiting for a frame to be written
}

// wrap returns a wrapper for the store's network connections that reads
// them into w, around the given one (a test hook, or nil).
func (w *wireLog) wrap(inner func(net.Conn) net.Conn) func(net.Conn) net.Conn {
	return func(c net.Conn) net.Conn {
		if inner != nil {
			c = inner(c)
		}
		return &sniffConn{Conn: c, w: w}
	}
}

// sniffConn reads the start of a connection's first frame, the answer to the
// session handshake: length, protocol version, timeout (ms), session ID.
type sniffConn struct {
	net.Conn
	w    *wireLog
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
				c.w.negotiated.Store(int64(int32(binary.BigEndian.Uint32(c.head[8:12]))))
				c.w.sessionID.Store(sid)
			}
		}
	}
	return n, err
}

// Write tells the callers waiting for a frame (lock_create.go).
// go-zookeeper writes one request per call.
func (c *sniffConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err == nil {
		c.w.writes.wrote(p)
	}
	return n, err
}

// handshake is the session ID and timeout of the last handshake answer;
// zero on a caller's connection, which the store does not read.
func (s *session) handshake() (int64, time.Duration) {
	if s.wire == nil {
		return 0, 0
	}
	return s.wire.sessionID.Load(), time.Duration(s.wire.negotiated.Load()) * time.Millisecond
}

// sessionTimeout is the best known session timeout: negotiated, else
// asked for (on a caller's connection, what it negotiated, as the caller
// said), else the default.
func (s *session) sessionTimeout() time.Duration {
	if s.wire != nil {
		if ms := s.wire.negotiated.Load(); ms > 0 {
			return time.Duration(ms) * time.Millisecond
		}
	}
	if s.requested > 0 {
		return s.requested
	}
	return defaultSessionTimeout
}

// frameWatch tells callers when a frame carrying a token of theirs has
// been written to the store's own connection (a Lock call's create
// carries its node's GUID, which nothing else sent before it does).
type frameWatch struct {
	pending atomic.Int32 // entries in m, so that writes skip the mutex when none
	mu      sync.Mutex
	m       map[string]chan struct{} // token -> closed once written
}

// add starts watching for token; a token is awaited by one call at a time.
func (w *frameWatch) add(token string) chan struct{} {
	ch := make(chan struct{})
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]chan struct{}{}
	}
	if _, ok := w.m[token]; !ok {
		w.pending.Add(1)
	}
	w.m[token] = ch
	return ch
}

// remove stops the watch add returned as ch, if it is still on.
func (w *frameWatch) remove(token string, ch chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m[token] == ch {
		delete(w.m, token)
		w.pending.Add(-1)
	}
}

// wrote is called with each frame written in full.
func (w *frameWatch) wrote(frame []byte) {
	if w.pending.Load() == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for token, ch := range w.m {
		if bytes.Contains(frame, []byte(token)) {
			close(ch)
			delete(w.m, token)
			w.pending.Add(-1)
		}
	}
}
