// Package sqllocks holds the lock scenarios both SQL drivers run on real
// servers (PostgreSQL and MariaDB): a holder process killed or paused, a
// holder's session failing under a waiter, a failed Lock that must cost
// only itself, a COMMIT in flight when its Lock gives up, steps of the
// server's clock, a restore from an older dump under an open store. Each
// scenario is written once; a driver's test gives a Dialect, the few
// things that differ between the servers, and calls Run.
//
// It is a test helper: import it from _test.go files only.
package sqllocks

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/netproxy"
	"github.com/cosid-go/store/internal/testing/poll"
)

// Server is a database server a driver's test harness started
// (pgtest.Server, mysqltest.Server).
type Server interface {
	// Addr is the server's host:port.
	Addr() string
	// Kill ends the server with SIGKILL.
	Kill()
	// Restart starts the server again on the same data.
	Restart(t testing.TB)
}

// Store is what the scenarios call on a driver's store.
type Store interface {
	driver.Store
	driver.Locker
}

// Dialect is a SQL driver's side of the scenarios.
type Dialect struct {
	// Shared is the test binary's shared server; Start a server of the
	// test's own, for the scenarios that kill it.
	Shared func(t testing.TB) Server
	Start  func(t testing.TB) Server
	// Namespace makes a fresh schema or database name on srv for t.
	Namespace func(t testing.TB, srv Server) string
	// Open opens a store on namespace ns of the server or proxy at addr,
	// with the extra options; it is closed when the test ends.
	Open func(t *testing.T, addr, ns string, extra map[string]string) Store
	// SetHook calls f at the store's named points ("enqueue", "pass").
	SetHook func(s Store, f func(point string))
	// KillSession ends, as an operator would, the server connection of
	// the lock session s holds its locks on (namespace ns of srv);
	// KillSessionName names that fault in the scenario's subtest.
	KillSession     func(t *testing.T, srv Server, ns string, s Store)
	KillSessionName string
	// MoveConfirmations adds ms to the stored confirmation times of every
	// lock session of namespace ns, as a step of the server's clock would
	// move them relative to it.
	MoveConfirmations func(t *testing.T, srv Server, ns string, ms int64)
	// InFlightLockTimeout is the lock timeout of LockCommitInFlight: the
	// server's idle bound it sets must be well above the 200ms the
	// scenario holds a COMMIT back.
	InFlightLockTimeout time.Duration
	// SessionID is the id of the lock session s holds its locks on, 0
	// if it has none.
	SessionID func(s Store) int64
	// Dump backs namespace ns of srv up with the server's dump tool, as
	// the driver's docs say; restore puts that backup back as they say
	// (the namespace dropped, the dump loaded).
	Dump func(t *testing.T, srv Server, ns string) (restore func())
	// TakeoverWithin bounds, in LockLostBeforeTakeover, the time from a
	// fault to the other store's grant (a server restart included).
	TakeoverWithin time.Duration
}

// Run runs every scenario on d as subtests of t. A child process that a
// scenario started runs only its holder's part (see startChild).
func Run(t *testing.T, d Dialect) {
	if v := os.Getenv(childEnv); v != "" {
		runChild(t, d, v)
		return
	}
	t.Run("HolderKilled", func(t *testing.T) { holderKilled(t, d) })
	t.Run("HolderPaused", func(t *testing.T) { holderPaused(t, d) })
	t.Run("LostBeforeTakeover", func(t *testing.T) { lostBeforeTakeover(t, d) })
	t.Run("FailedLockCostsItself", func(t *testing.T) { failedLockCostsItself(t, d) })
	t.Run("CommitInFlight", func(t *testing.T) { commitInFlight(t, d) })
	t.Run("ConfirmingHolderKept", func(t *testing.T) { confirmingHolderKept(t, d) })
	t.Run("ClockStep", func(t *testing.T) { clockStep(t, d) })
	t.Run("SessionIDsAcrossARestore", func(t *testing.T) { sessionIDsAcrossARestore(t, d) })
	t.Run("RaisedFenceAcrossARestore", func(t *testing.T) { raisedFenceAcrossARestore(t, d) })
	t.Run("RaiseBeforeFirstPass", func(t *testing.T) { raiseBeforeFirstPass(t, d) })
}

// scene is what a scenario runs on: n stores with one lock timeout on a
// fresh namespace ns of the shared server srv, the first one through a
// proxy p of its own when the scenario needs one (nil else).
type scene struct {
	srv    Server
	ns     string
	p      *netproxy.Proxy
	stores []Store
}

// parallelScene runs t in parallel with the other scenarios and sets up
// its scene.
func parallelScene(t *testing.T, d Dialect, lockTimeout time.Duration, n int, proxied bool) scene {
	t.Parallel()
	sc := scene{srv: d.Shared(t)}
	sc.ns = d.Namespace(t, sc.srv)
	opts := map[string]string{"lockTimeout": lockTimeout.String()}
	for i := range n {
		addr := sc.srv.Addr()
		if i == 0 && proxied {
			sc.p = netproxy.New(t, addr)
			addr = sc.p.Addr()
		}
		sc.stores = append(sc.stores, d.Open(t, addr, sc.ns, opts))
	}
	return sc
}

// closed reports whether a Lost channel is closed, without waiting.
var closed = poll.Closed

// lostErr says why a hold was lost.
func lostErr(l driver.Lock) error {
	if c, ok := l.(driver.LostCause); ok {
		return c.LostErr()
	}
	return nil
}

// cut splits s at the first "|".
func cut(s string) (string, string) {
	a, b, _ := strings.Cut(s, "|")
	return a, b
}
