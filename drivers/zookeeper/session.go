package zookeeper

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// session is the store's connection to ZooKeeper and what every part of
// the store shares: where its nodes are and with which ACL, how calls are
// made and retried (session_call.go), what an operator is told
// (session_events.go), the store's identity (session_identity.go), and
// the reads and writes of nodes (wire_*.go).
type session struct {
	conn  *zk.Conn
	root  string
	retry retryPolicy
	acl   []zk.ACL // set on every node the store creates (the acl option)

	// Set only when the store made conn (Open) and so must close it.
	owned  bool
	cfg    config
	events <-chan zk.Event // closed by go-zookeeper once its goroutines are done
	dialer *dialer

	notify   atomic.Pointer[func(driver.Event)] // the portable layer's (session_events.go)
	reported sessionLog                         // connection states as reported (session_events.go)
	// stallDown: Disconnected was reported for a call that heard no server
	// (stalled), and the connection has not been heard from since.
	stallDown atomic.Bool

	// The session timeout: what the sessionTimeout option asked for, or
	// on a caller's connection what it negotiated (or less), as the
	// caller said; and, on the store's own connection, what the server
	// granted, read off the wire (wire_sniff.go: go-zookeeper does not
	// say). wire is nil on a caller's connection.
	requested time.Duration
	wire      *wireLog

	state      atomic.Int32  // last session state reported by the event callback
	hasSession chan struct{} // closed at the first session
	sessionOne sync.Once

	closing   chan struct{} // closed by Close: calls in flight return at once
	closeOnce sync.Once
	callsMu   sync.RWMutex // orders calls.Add against Close's calls.Wait
	closed    bool
	calls     sync.WaitGroup // goroutines running go-zookeeper calls
}
