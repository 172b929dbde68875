package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store/driver"
)

// This file is what the store tells an operator: connection state changes
// and retries as driver events (the portable layer logs them and hands
// them to observers), and, when an operation runs out of time with no
// server answering, an error that says so (driver.ErrUnavailable).

var (
	_ driver.Notifier  = (*driverStore)(nil)
	_ driver.Connector = (*driverStore)(nil)
	_ driver.Pinger    = (*driverStore)(nil)
)

// Notify sets the function the store reports events to (driver.Notifier).
func (s *session) Notify(f func(driver.Event)) { s.notify.Store(&f) }

func (s *session) report(e driver.Event) {
	if f := s.notify.Load(); f != nil {
		(*f)(e)
	}
}

// sessionLog remembers the last state reported, so that go-zookeeper's
// repeated events (a disconnect per failed reconnect) are reported once.
type sessionLog struct {
	mu   sync.Mutex
	last driver.EventKind
}

// reportState reports a session event of go-zookeeper's callback as a
// driver event, if it changes what was last reported. A disconnection by
// Close is not reported: it is no outage.
func (s *session) reportState(ev zk.Event) {
	var kind driver.EventKind
	switch ev.State {
	case zk.StateHasSession:
		kind = driver.Connected
	case zk.StateDisconnected:
		kind = driver.Disconnected
	case zk.StateExpired:
		kind = driver.Expired
	default:
		return
	}
	s.stallDown.Store(false) // go-zookeeper saw it too: its events say the rest
	s.reportKind(kind, ev.Server, nil)
}

// reportKind reports kind, unless it was the last reported (Connected
// always is: another server, another session).
func (s *session) reportKind(kind driver.EventKind, server string, err error) {
	s.reported.mu.Lock()
	defer s.reported.mu.Unlock() // keeps the reports in the order of the events
	if kind == s.reported.last && kind != driver.Connected {
		return
	}
	if kind == driver.Disconnected {
		select {
		case <-s.closing:
			return // Close's own
		default:
		}
	}
	s.reported.last = kind
	e := driver.Event{Kind: kind, Err: err}
	if kind == driver.Connected {
		// The callback may run before zk.Connect returns the connection:
		// the session ID and timeout come from the sniffed handshake.
		e.Server = server
		if s.wire != nil {
			e.SessionID, e.Timeout = s.handshake()
		}
	}
	s.report(e)
}

// stallQuiet is how long a call waits with nothing heard from any server
// before the store reports Disconnected: go-zookeeper notices a silent
// server only when its read timeout (2/3 of the session timeout) passes.
const stallQuiet = time.Second

// stalled is called by a call of a store that made its connection, still
// unanswered after stallQuiet (call): if nothing was heard from any server
// for stallQuiet either, the store reports Disconnected, and Connected
// again as soon as a server is heard from (heardAgain). Otherwise it
// returns how long the call waits before it looks again.
func (s *session) stalled() (again time.Duration) {
	if !s.owned || zk.State(s.state.Load()) != zk.StateHasSession {
		return 0 // a caller's connection, or no session: go-zookeeper's events say it
	}
	quiet := monoNow() - time.Duration(s.dialer.heard.Load())
	if quiet < stallQuiet {
		return stallQuiet - quiet
	}
	s.stallDown.Store(true)
	s.reportKind(driver.Disconnected, "", fmt.Errorf("no ZooKeeper server answered for %v; tried %s",
		quiet.Round(time.Millisecond), strings.Join(s.cfg.servers, ", ")))
	return 0
}

// heardAgain is called when the connection to server read bytes: after a
// stall, the server answers again.
func (s *session) heardAgain(server string) {
	if !s.stallDown.Load() || !s.stallDown.CompareAndSwap(true, false) {
		return
	}
	if zk.State(s.state.Load()) != zk.StateHasSession {
		return // a new connection's handshake: the callback reports it
	}
	s.reportKind(driver.Connected, server, nil)
}

// Ping reads the root's stat: one round trip (driver.Pinger).
func (s *session) Ping(ctx context.Context) error {
	_, err := call(ctx, s, func() (bool, error) {
		ok, _, err := s.conn.Exists(s.root)
		return ok, err
	})
	if err != nil {
		return fmt.Errorf("zookeeper: ping: %w", err)
	}
	return nil
}

// errWaitedEnough is Connect's cause when blockUntilConnectedWait ran out.
var errWaitedEnough = errors.New("blockUntilConnectedWait elapsed")

// noSession is Connect's error when no session came before cause.
func (s *session) noSession(cause error) error {
	msg := fmt.Sprintf("zookeeper: no session with any of %s within %v; state %v",
		strings.Join(s.cfg.servers, ","), s.waited(cause), zk.State(s.state.Load()))
	if last := s.dialer.lastError(); last != nil {
		msg += "; last failure: " + last.Error()
	}
	if cause == errWaitedEnough {
		return &unavailableError{msg: msg}
	}
	return &unavailableError{msg: msg, ctx: cause, ctxSaid: true}
}

func (s *session) waited(cause error) string {
	if cause == errWaitedEnough {
		return fmt.Sprintf("%v (blockUntilConnectedWait)", s.cfg.blockUntilConnectedWait)
	}
	return "the context (" + cause.Error() + ")"
}

// unavailable returns err, a context error of an operation that began at
// start (monoNow), as an unavailableError when no server answered since
// start or the connection has no session; otherwise err itself.
func (s *session) unavailable(err error, start time.Duration) error {
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, driver.ErrUnavailable) {
		return err
	}
	if !s.owned {
		// A caller's connection: its state is all the store can see.
		if st := s.conn.State(); st != zk.StateHasSession {
			return &unavailableError{msg: fmt.Sprintf("the connection has no session (state %v)", st), ctx: err}
		}
		return err
	}
	heard := time.Duration(s.dialer.heard.Load())
	if zk.State(s.state.Load()) == zk.StateHasSession && heard >= start {
		return err // a server answered: the operation was merely slow
	}
	since := "the store opened"
	if heard > 0 {
		since = time.Now().Add(heard - monoNow()).Format("15:04:05.000")
	}
	msg := fmt.Sprintf("no ZooKeeper server answered since %s; tried %s", since, strings.Join(s.cfg.servers, ", "))
	if last := s.dialer.lastError(); last != nil {
		msg += " (last failure: " + last.Error() + ")"
	}
	return &unavailableError{msg: msg, ctx: err}
}

// unavailableError is driver.ErrUnavailable and, if ctx is set, that
// context error too.
type unavailableError struct {
	msg     string
	ctx     error
	ctxSaid bool // msg names ctx already
}

func (e *unavailableError) Error() string {
	if e.ctx == nil || e.ctxSaid {
		return e.msg
	}
	return e.msg + ": " + e.ctx.Error()
}

func (e *unavailableError) Unwrap() []error {
	if e.ctx == nil {
		return []error{driver.ErrUnavailable}
	}
	return []error{driver.ErrUnavailable, e.ctx}
}
