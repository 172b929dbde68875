package etcd

import (
	"context"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/etcdtest"
	"github.com/cosid-go/store/tck"
)

// harness opens stores on one prefix of the shared server, or of cluster
// with extra options. Its stores read the slot clock through one function,
// which the clock hooks move.
type harness struct {
	t       *testing.T
	cluster *etcdtest.Cluster // nil: the shared server
	extra   map[string]string
	prefix  string
	shift   *atomic.Int64 // ms added to the host clock
	frozen  *atomic.Int64 // when not 0, the clock stands there

	// The operator's client (tck_ops_test.go).
	rawOnce sync.Once
	rawCli  *clientv3.Client
	rawErr  error
}

func newHarness(t *testing.T) *harness {
	return &harness{t: t, prefix: freshPrefix("tck"), shift: new(atomic.Int64), frozen: new(atomic.Int64)}
}

func (h *harness) server() *etcdtest.Cluster {
	if h.cluster != nil {
		return h.cluster
	}
	return sharedServer(h.t)
}

func (h *harness) options() map[string]string {
	o := map[string]string{
		"endpoints":  strings.Join(h.server().Endpoints(), ","),
		"prefix":     h.prefix,
		"sessionTTL": "5s", // 2s leases were lost at load 50 (keep-alive answers 2.2s late)
	}
	maps.Copy(o, h.extra)
	return o
}

func (h *harness) NewStore(ctx context.Context) (driver.Store, error) {
	cfg, err := parseOptions(h.options())
	if err != nil {
		return nil, err
	}
	s := newStore(cfg, nil)
	s.now = func() int64 {
		if f := h.frozen.Load(); f != 0 {
			return f
		}
		return time.Now().UnixMilli() + h.shift.Load()
	}
	if err := s.Connect(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (h *harness) Close() error { return nil }

// Restart kills the member and starts it on its data (tck.Restarter).
func (h *harness) Restart(context.Context) error {
	c := h.server()
	c.Restart(h.t, c.Members[0])
	return nil
}

// StepClock moves the slot clock (tck.ClockStepper).
func (h *harness) StepClock(_ context.Context, d time.Duration) error {
	if f := h.frozen.Load(); f != 0 {
		h.frozen.Store(f + d.Milliseconds())
		return nil
	}
	h.shift.Add(d.Milliseconds())
	return nil
}

// SetClock stops the slot clock at t (tck.ClockSetter).
func (h *harness) SetClock(_ context.Context, t time.Time) error {
	h.frozen.Store(t.UnixMilli())
	return nil
}

func TestTCK(t *testing.T) {
	sharedServer(t)
	s := suite(func(_ context.Context, t *testing.T) (tck.Harness, error) { return newHarness(t), nil }, map[string]string{
		"endpoints": strings.Join(sharedServer(t).Endpoints(), ","),
		"prefix":    freshPrefix("options"),
	})
	s.MalformedOptions = map[string]string{
		"dialTimeout": "soon", "sessionTTL": "1s", "endpoints": " , ", "prefix": "cosid/", "create": "maybe",
	}
	s.MalformedValues = map[string][]string{
		"dialTimeout": {"-1s", "0", "1h2"}, "sessionTTL": {"soon", "-5s", "1999"}, // bare numbers are ms
		"prefix":    {"/cosid/", "/a//b", "/a/./b", "/a/../b", "/ /b"},
		"endpoints": {"ftp://127.0.0.1:2379"}, // a URL's path or userinfo is refused unprinted (it may hold a secret)
	}
	s.MissingOptions = func(*testing.T) map[string]string {
		return map[string]string{"endpoints": strings.Join(sharedServer(t).Endpoints(), ","), "prefix": freshPrefix("missing")}
	}
	s.Histories = 10
	tck.Run(t, s)
}

// suite is what every TCK run of this driver declares: what the driver
// does, whatever the connection (TestTLS runs the kit too).
func suite(newHarness func(context.Context, *testing.T) (tck.Harness, error), options map[string]string) tck.Suite {
	return tck.Suite{
		NewHarness: newHarness,
		Ranges:     true, Slots: true, Locks: true,
		Factory: fromOptions,
		Options: options,
		// The slot clock is each host's (driver.Purger).
		PurgeKeepsSlotFloor: true,
		// As the ZooKeeper driver's: a crowd of acquirers on one member
		// takes longer than the default timeout on a loaded machine.
		TimeScale: 2,
	}
}
