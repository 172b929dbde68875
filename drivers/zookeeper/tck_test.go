package zookeeper

import (
	"context"
	"fmt"
	"testing"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/zktest"
	"github.com/cosid-go/store/tck"
)

// harness gives each TCK check a root of its own on the version's server.
type harness struct {
	t    *testing.T
	srv  *zktest.Server
	root string
	ops  *harnessOps // the operator's hooks (tck_ops_test.go)
}

// NewStore opens a store whose connections the harness can cut
// (EndSession).
func (h harness) NewStore(context.Context) (driver.Store, error) {
	c := &cutter{}
	s, err := open(testOptions(h.srv.Addr(), map[string]string{"root": h.root}), c.wrap)
	if err != nil {
		return nil, err
	}
	h.ops.mu.Lock()
	defer h.ops.mu.Unlock()
	if h.ops.cutters == nil {
		h.ops.cutters = map[driver.Store]*cutter{}
	}
	h.ops.cutters[s] = c
	return s, nil
}

func (h harness) Close() error { return nil }

// Restart stops the server and starts it again on the same data directory
// (tck.Restarter). The TCK runs its Restart check alone, so no other check
// sees the server go.
func (h harness) Restart(context.Context) error { return restartServer(h.srv) }

// restartServer is every TCK harness's Restart: srv stopped, then started
// again on its data directory and ports.
func restartServer(srv *zktest.Server) error {
	srv.Stop()
	if srv.Running() {
		return fmt.Errorf("%s still runs after Stop", srv)
	}
	srv.Start()
	return nil
}

// TestTCK runs the whole conformance kit on one server of each supported
// version (TestTCK/3.8, TestTCK/3.9). Its lease times (ttl 100ms,
// tolerance 50ms) are stretched for a server on a loaded machine running
// every check at once. The harness offers no tck.ClockStepper, so
// Slots/RenewClockBack skips: lease times come from the server's mtime, the
// machine's wall clock, which a test cannot step back. What that check
// proves is proven in parts: the rule itself by package driver's
// TestSlotRenewed (a renewal on a clock stepped back lowers nothing), and
// here TestSlotTimes (an mtime behind the recorded bounds does not lower the
// times) and TestSlots/*/NodeLayout (a renewal writes its times as those
// bounds).
func TestTCK(t *testing.T) {
	zktest.EachVersion(t, testTCK)
}

func testTCK(t *testing.T, srv *zktest.Server) {
	tck.Run(t, tck.Suite{
		NewHarness: func(_ context.Context, t *testing.T) (tck.Harness, error) {
			return harness{t: t, srv: srv, root: randomRoot(), ops: &harnessOps{}}, nil
		},
		Ranges:  true,
		Slots:   true,
		Locks:   true,
		Factory: openWith,
		Options: testOptions(srv.Addr(), nil),
		// testOptions names a root nobody used.
		MissingOptions: func(*testing.T) map[string]string { return testOptions(srv.Addr(), nil) },
		MalformedOptions: map[string]string{
			"sessionTimeout":   "soon",
			"retry.maxRetries": "-1",
			"retry.maxSleep":   "-5ms",
		},
		TimeScale: 2,
		// Each random history opens its stores on a root of its own: 25
		// keep the TCK within its time on a loaded machine.
		Histories: 25,
	})
}
