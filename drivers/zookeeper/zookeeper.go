package zookeeper

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

func init() { store.Register("zookeeper", factory) }

// driverStore is an open ZooKeeper store. It implements driver.Store,
// driver.RangeStore, driver.SlotLeaseStore, driver.Locker, and the optional
// driver.SlotSeeder and driver.Purger, and is safe for concurrent use.
//
// It is made of one part per job, sharing one session: the session and
// its calls (session*.go, wire_*.go), ranges (range_*.go), slot leases
// (slot_*.go) and locks (lock_*.go). What spans them is driverStore's:
// opening, the session's events and Close (this file), Purge (purge.go),
// ACLs (acls.go) and Format (format.go).
type driverStore struct {
	*session
	*rangeStore
	*slotStore
	*lockStore
}

// The parts' methods are promoted to driverStore; a name two parts both
// had would drop out of its method set, which these catch.
var (
	_ driver.RangeStore     = (*driverStore)(nil)
	_ driver.RangeAdvancer  = (*driverStore)(nil)
	_ driver.SlotLeaseStore = (*driverStore)(nil)
	_ driver.SlotSeeder     = (*driverStore)(nil)
	_ driver.LayoutKeeper   = (*driverStore)(nil)
	_ driver.Locker         = (*driverStore)(nil)
)

// open opens a store on a connection it makes from options and closes with
// the store, waiting up to blockUntilConnectedWait for a session, with a hook
// that wraps each network connection, for tests that watch the traffic.
func open(options map[string]string, wrap func(net.Conn) net.Conn) (*driverStore, error) {
	s, err := prepare(options, wrap)
	if err != nil {
		return nil, err
	}
	if err := s.Connect(context.Background()); err != nil {
		return nil, err
	}
	return s, nil
}

// factory is the driver's registered factory: the portable layer connects
// through Connect, with the context of store.OpenContext.
func factory(options map[string]string) (driver.Store, error) { return prepare(options, nil) }

// prepare parses options into a store that Connect connects.
func prepare(options map[string]string, wrap func(net.Conn) net.Conn) (*driverStore, error) {
	cfg, err := parseOptions(options, true)
	if err != nil {
		return nil, err
	}
	s := newStore(cfg)
	s.owned = true
	s.cfg = cfg
	s.requested = cfg.sessionTimeout
	s.wire = &wireLog{}
	wrap = s.wire.wrap(wrap) // what the server granted, which go-zookeeper does not say
	s.dialer = newDialer(cfg.connectionTimeout, cfg.sec.tls, wrap)
	s.dialer.heardFrom = s.heardAgain // Connected after a stall (session_events.go)
	s.hasSession = make(chan struct{})
	return s, nil
}

// Connect makes the store's connection and waits for a session, up to
// blockUntilConnectedWait and while ctx lasts (driver.Connector). On a
// failure it closes the store and names the servers, the state reached and
// the last failure seen. A store made by OpenStore is connected already.
func (s *driverStore) Connect(ctx context.Context) error {
	if !s.owned || s.conn != nil {
		return nil
	}
	cfg := s.cfg
	conn, events, err := zk.Connect(cfg.servers, cfg.sessionTimeout,
		zk.WithDialer(s.dialer.dial),
		zk.WithEventCallback(s.onEvent),
		zk.WithLogInfo(false),
		// The client logs every reconnect attempt to the process's standard
		// logger; the store reports failures through its own errors instead.
		zk.WithLogger(quietLogger{}))
	if err != nil {
		s.Close()
		return fmt.Errorf("zookeeper: connect to %s: %w", strings.Join(cfg.servers, ","), err)
	}
	s.conn, s.events = conn, events
	if cfg.blockUntilConnectedWait == 0 {
		return nil
	}
	wait, cancel := context.WithTimeout(ctx, cfg.blockUntilConnectedWait)
	defer cancel()
	select {
	case <-s.hasSession:
		if err := s.addAuth(wait, cfg.sec.auth); err != nil {
			s.Close()
			return err
		}
		if !s.mayCreate() {
			if err := s.checkRootExists(wait); err != nil {
				s.Close()
				return err
			}
		}
		return nil
	case <-wait.Done():
	}
	cause := ctx.Err()
	if cause == nil {
		cause = errWaitedEnough
	}
	err = s.noSession(cause)
	s.Close()
	return err
}

// newOnConn returns OpenStore's driver store on conn, a connection the caller
// made and still owns: closing the store leaves it open, and the caller
// closes it after the store. options may set root, acl, the retry options
// and sessionTimeout: the session timeout conn negotiated (or less), which
// Lock needs for its liveness rule and go-zookeeper does not expose;
// without it Lock fails. newOnConn does not wait for a session; operations wait
// for one within their context.
func newOnConn(conn *zk.Conn, options map[string]string) (*driverStore, error) {
	if conn == nil {
		return nil, fmt.Errorf("zookeeper: the connection (*zk.Conn) is nil: %w", driver.ErrInvalidArgument)
	}
	cfg, err := parseOptions(options, false)
	if err != nil {
		return nil, err
	}
	s := newStore(cfg)
	s.conn = conn
	s.requested = cfg.sessionTimeout
	return s, nil
}

func newStore(cfg config) *driverStore {
	shared := &session{
		root:    cfg.root,
		retry:   cfg.retry,
		acl:     cfg.sec.acl,
		closing: make(chan struct{}),
	}
	return &driverStore{
		session:    shared,
		rangeStore: &rangeStore{session: shared, keys: map[string]*rangeKey{}},
		slotStore:  &slotStore{session: shared},
		lockStore:  &lockStore{session: shared},
	}
}

// onEvent follows the session state. go-zookeeper's event channel drops
// events when full, so the callback, which sees every event, is used
// instead. It must not block. The session knows none of the parts: the
// store, which has them all, hands each event to the session and then
// to the Locker, which reads what the handshake granted from the session.
func (s *driverStore) onEvent(ev zk.Event) {
	if ev.Type != zk.EventSession {
		return
	}
	s.state.Store(int32(ev.State))
	s.reportState(ev)                    // the portable layer's events (session_events.go)
	s.lockStore.sessionChanged(ev.State) // the Locker's Lost signal (lock_lost.go)
	if ev.State == zk.StateHasSession {
		s.sessionOne.Do(func() { close(s.hasSession) })
	}
}

// Close makes calls in flight return ErrClosed, waits for the goroutines
// the store started and, if the store made its connection, closes it and
// waits until go-zookeeper's own goroutines have ended. A caller's
// connection is left open; Close then still waits for the requests it sent
// on it, which go-zookeeper always completes (with an answer, or an error
// once the connection is lost). Closing twice returns nil.
func (s *driverStore) Close() error {
	s.closeOnce.Do(func() {
		s.callsMu.Lock()
		s.closed = true
		close(s.closing)
		s.callsMu.Unlock()
		s.closeLocks() // every hold is lost; on a caller's connection, lock nodes are removed
		if s.owned && s.conn == nil {
			s.dialer.close() // Connect failed or never ran
		}
		if s.owned && s.conn != nil {
			s.conn.Close()
			// A handshake in progress does not watch for Close; closing
			// its socket ends it.
			s.dialer.close()
			for range s.events {
			}
		}
		s.calls.Wait()
		s.waitLocks()
	})
	return nil
}

// quietLogger drops go-zookeeper's log lines.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}
