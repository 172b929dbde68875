package idgen_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/idgen"
)

// events records what a store reports, and lets a test wait for a kind.
type events struct {
	mu   sync.Mutex
	all  []store.Event
	logs bytes.Buffer
	more chan struct{} // gets a token per event
}

func newEvents() *events { return &events{more: make(chan struct{}, 1000)} }

// options are the store options that report to e: observer and logger.
func (e *events) options() []store.Option {
	return []store.Option{
		store.WithObserver(store.Observer{Event: func(ev store.Event) {
			e.mu.Lock()
			e.all = append(e.all, ev)
			e.mu.Unlock()
			e.more <- struct{}{}
		}}),
		store.WithLogger(slog.New(slog.NewTextHandler(e, &slog.HandlerOptions{Level: slog.LevelDebug}))),
	}
}

func (e *events) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.logs.Write(p)
}

func (e *events) log() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.logs.String()
}

// of returns the events of kind so far.
func (e *events) of(kind store.EventKind) []store.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []store.Event
	for _, ev := range e.all {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// await waits for an event of kind.
func (e *events) await(t *testing.T, kind store.EventKind) store.Event {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		if got := e.of(kind); len(got) > 0 {
			return got[0]
		}
		select {
		case <-e.more:
		case <-deadline:
			t.Fatalf("no %s event within 30s", kind)
		}
	}
}

func TestSessionReportsItsLease(t *testing.T) {
	b := memoryBackend(t)
	ev := newEvents()
	stA, _ := open(t, b, ev.options()...)
	stB, _ := open(t, b)
	a := newSession(t, stA, "host-a", idgen.SessionOptions{Acquire: store.AcquireOptions{TTL: 2 * time.Second}})
	key := "workers/0"
	if got := ev.await(t, store.LeaseAcquired); got.Key != key || got.Fence != a.Lease().Fence || time.Until(got.Deadline) <= 0 {
		t.Errorf("acquired: %+v, want %s, its fence and a deadline ahead", got, key)
	}
	ev.await(t, store.LeaseRenewed)
	// A restarted host-a takes the slot back: A's next renewal finds it lost.
	newSession(t, stB, "host-a", idgen.SessionOptions{Acquire: store.AcquireOptions{TTL: time.Minute, Reclaim: true}})
	ended(t, a)
	lost := ev.await(t, store.LeaseLost)
	if lost.Key != key || !errors.Is(lost.Err, store.ErrLeaseLost) {
		t.Errorf("lost: %+v, want %s with ErrLeaseLost", lost, key)
	}
	a.Close(t.Context())
	if n := len(ev.of(store.LeaseLost)); n != 1 {
		t.Errorf("%d lease_lost events, want 1 (the store's, not repeated by the session)", n)
	}
	if n := len(ev.of(store.LeaseReleased)); n != 0 {
		t.Errorf("a lost lease was reported released")
	}
	log := ev.log()
	for _, want := range []string{`level=INFO msg="store: lease acquired" key=workers/0`, `level=DEBUG msg="store: lease renewed" key=workers/0`,
		`level=ERROR msg="store: lease lost" key=workers/0`} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

func TestSessionReportsLossByTimeAndRelease(t *testing.T) {
	ev := newEvents()
	st, f := open(t, memoryBackend(t), ev.options()...)
	a := newSession(t, st, "host-a", idgen.SessionOptions{Acquire: store.AcquireOptions{TTL: 2 * time.Second}})
	f.renew.setFail(errors.New("store down")) // renewals fail until the validity ends
	lost := ev.await(t, store.LeaseLost)
	if !errors.Is(lost.Err, idgen.ErrLeaseLost) || !strings.Contains(lost.Err.Error(), "not renewed") {
		t.Errorf("lost: %v, want the session's reason", lost.Err)
	}
	f.renew.setFail(nil)
	if err := a.Close(t.Context()); err != nil { // the term is still a's in the store: released
		t.Fatal(err)
	}
	if got := ev.of(store.LeaseReleased); len(got) != 1 || got[0].Fence != a.Lease().Fence {
		t.Errorf("released: %+v, want a's lease", got)
	}
}

func TestSegmentReportsPrefetchGrowth(t *testing.T) {
	ev := newEvents()
	st, f := open(t, memoryBackend(t), ev.options()...)
	release := f.next.hold(1)
	defer release()
	g := newSegment(t, st, "k", idgen.SegmentOptions{Step: 100, MinPrefetch: 10, MaxPrefetch: 400})
	take(t, g, 100) // the prefetch started at 50 and is held
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := g.NextID(t.Context()); err != nil {
			t.Errorf("NextID: %v", err)
		}
	}()
	got := ev.await(t, store.PrefetchGrown)
	release()
	<-done
	if got.Key != "k" || got.Count != 100 || g.Stats().Prefetch != 100 {
		t.Errorf("prefetch grown: %+v (stats %+v), want k grown to 100", got, g.Stats())
	}
}

func TestSnowflakeStatsAndFloorWait(t *testing.T) {
	b := memoryBackend(t)
	space := store.Namespace{Name: "crash", Limit: 1, Tolerance: 50 * time.Millisecond}
	stA, _ := open(t, b)
	a := newSnowflake(t, stA, space, "host-a", idgen.SnowflakeOptions{Acquire: store.AcquireOptions{TTL: 300 * time.Millisecond}})
	issue(t, a, 10)
	stA.Close() // a crash: the next holder's floor is A's ceiling, ahead of the clock

	ev := newEvents()
	stB, _ := open(t, b, ev.options()...)
	g := newSnowflake(t, stB, space, "host-a", idgen.SnowflakeOptions{
		Acquire:  store.AcquireOptions{TTL: 2 * time.Second, Reclaim: true},
		MaxAhead: -1,              // wait for the clock to reach the floor
		MaxWait:  2 * time.Second, // more than ttl + tolerance
	})
	issue(t, g, 10)
	s := g.Stats()
	if s.FloorWaits != 1 || s.ClockWaits+s.CeilingWaits > 9 || s.Worker != 0 || s.Fence != g.Session().Lease().Fence ||
		s.LeaseLeft <= 0 || s.LeaseLeft > 2*time.Second {
		t.Errorf("stats %+v, want one floor wait, worker 0, the lease's fence and time left", s)
	}
	w := ev.of(store.FloorWait)
	if len(w) != 1 || w[0].Key != "crash/0" || w[0].Wait <= 0 {
		t.Errorf("floor waits %+v, want one of crash/0 with its duration", w)
	}
	ev.await(t, store.LeaseRenewed)
	if g.Stats().Renewals < 1 {
		t.Errorf("stats %+v after a renewal, want Renewals >= 1", g.Stats())
	}
}
