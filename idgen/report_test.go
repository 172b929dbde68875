package idgen_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/idgen"
	"github.com/cosid-go/store/internal/testing/eventrec"
)

func TestSessionReportsItsLease(t *testing.T) {
	b := memoryBackend(t)
	ev := eventrec.New()
	stA, _ := open(t, b, ev.Options()...)
	stB, _ := open(t, b)
	a := newSession(t, stA, "host-a", idgen.SessionOptions{Acquire: store.AcquireOptions{TTL: 2 * time.Second}})
	key := fmt.Sprintf("workers/%d", a.Lease().Slot) // the search start is the owner's own
	if got := ev.Await(t, store.LeaseAcquired, 30*time.Second); got.Key != key || got.Fence != a.Lease().Fence || time.Until(got.Deadline) <= 0 {
		t.Errorf("acquired: %+v, want %s, its fence and a deadline ahead", got, key)
	}
	ev.Await(t, store.LeaseRenewed, 30*time.Second)
	// A restarted host-a takes the slot back: A's next renewal finds it lost.
	newSession(t, stB, "host-a", idgen.SessionOptions{Acquire: store.AcquireOptions{TTL: time.Minute, Reclaim: true}})
	ended(t, a)
	lost := ev.Await(t, store.LeaseLost, 30*time.Second)
	if lost.Key != key || !errors.Is(lost.Err, store.ErrLeaseLost) {
		t.Errorf("lost: %+v, want %s with ErrLeaseLost", lost, key)
	}
	a.Close(t.Context())
	if n := len(ev.Of(store.LeaseLost)); n != 1 {
		t.Errorf("%d lease_lost events, want 1 (the store's, not repeated by the session)", n)
	}
	if n := len(ev.Of(store.LeaseReleased)); n != 0 {
		t.Errorf("a lost lease was reported released")
	}
	log := ev.Log()
	for _, want := range []string{`level=INFO msg="store: lease acquired" key=` + key, `level=DEBUG msg="store: lease renewed" key=` + key,
		`level=ERROR msg="store: lease lost" key=` + key} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

func TestSessionReportsLossByTimeAndRelease(t *testing.T) {
	ev := eventrec.New()
	st, f := open(t, memoryBackend(t), ev.Options()...)
	a := newSession(t, st, "host-a", idgen.SessionOptions{Acquire: store.AcquireOptions{TTL: 2 * time.Second}})
	f.renew.setFail(errors.New("store down")) // renewals fail until the validity ends
	lost := ev.Await(t, store.LeaseLost, 30*time.Second)
	if !errors.Is(lost.Err, idgen.ErrLeaseLost) || !strings.Contains(lost.Err.Error(), "not renewed") {
		t.Errorf("lost: %v, want the session's reason", lost.Err)
	}
	f.renew.setFail(nil)
	if err := a.Close(t.Context()); err != nil { // the term is still a's in the store: released
		t.Fatal(err)
	}
	if got := ev.Of(store.LeaseReleased); len(got) != 1 || got[0].Fence != a.Lease().Fence {
		t.Errorf("released: %+v, want a's lease", got)
	}
	// At the level of "lease acquired" (issue 43): a term's end is as
	// worth an operator's eye as its start.
	if want := `level=INFO msg="store: lease released"`; !strings.Contains(ev.Log(), want) {
		t.Errorf("log lacks %q:\n%s", want, ev.Log())
	}
}

func TestSegmentReportsPrefetchGrowth(t *testing.T) {
	ev := eventrec.New()
	st, f := open(t, memoryBackend(t), ev.Options()...)
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
	got := ev.Await(t, store.PrefetchGrown, 30*time.Second)
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

	ev := eventrec.New()
	stB, _ := open(t, b, ev.Options()...)
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
	w := ev.Of(store.FloorWait)
	if len(w) != 1 || w[0].Key != "crash/0" || w[0].Wait <= 0 {
		t.Errorf("floor waits %+v, want one of crash/0 with its duration", w)
	}
	ev.Await(t, store.LeaseRenewed, 30*time.Second)
	if g.Stats().Renewals < 1 {
		t.Errorf("stats %+v after a renewal, want Renewals >= 1", g.Stats())
	}
}
