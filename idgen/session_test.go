package idgen_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/idgen"
)

var ns = store.Namespace{Name: "workers", Limit: 4, Tolerance: 50 * time.Millisecond}

func newSession(t *testing.T, st *store.Store, owner string, opts idgen.SessionOptions) *idgen.Session {
	t.Helper()
	s, err := idgen.NewSession(t.Context(), st, ns, owner, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(t.Context()) })
	return s
}

func ended(t *testing.T, s *idgen.Session) {
	t.Helper()
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("session not done within 10s")
	}
}

func TestSessionRenews(t *testing.T) { testSessionRenews(t, memoryBackend(t)) }

func testSessionRenews(t *testing.T, b backend) {
	st, f := open(t, b)
	// Renewals every 667ms, each with 1.8s to be answered: ample under load.
	const ttl = 2 * time.Second
	s := newSession(t, st, "host-a", idgen.SessionOptions{Acquire: store.AcquireOptions{TTL: ttl}})
	first := s.Lease()
	// Outlive the first term's expiry by renewing.
	waitUntil(first.ExpiresAt + 100)
	if f.renew.count() < 2 {
		t.Errorf("%d renewals in %v with a ttl of %v, want at least 2", f.renew.count(), ttl+100*time.Millisecond, ttl)
	}
	l, err := s.Check(time.Now().UnixMilli())
	if err != nil {
		t.Fatalf("Check after renewals: %v", err)
	}
	if l.ExpiresAt <= first.ExpiresAt || l.Ceiling <= first.Ceiling || l.Fence != first.Fence || l.Floor != first.Floor {
		t.Errorf("renewed lease %+v does not extend %+v", l, first)
	}
	select {
	case <-s.Done():
		t.Fatalf("Done closed while renewing: %v", s.Err())
	default:
	}

	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	ended(t, s)
	if err := s.Err(); !errors.Is(err, idgen.ErrClosed) {
		t.Errorf("Err after Close: %v", err)
	}
	if _, err := s.Check(time.Now().UnixMilli()); !errors.Is(err, idgen.ErrClosed) {
		t.Errorf("Check after Close: %v", err)
	}
	// Released: another owner gets the slot at once.
	other := newSession(t, st, "host-b", idgen.SessionOptions{Acquire: store.AcquireOptions{Preferred: new(l.Slot)}})
	if got := other.Lease(); got.Slot != l.Slot || got.Floor < l.Ceiling {
		t.Errorf("after Close another owner got %+v, want slot %d with floor at least %d", got, l.Slot, l.Ceiling)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestSessionLostToReclaim(t *testing.T) {
	b := memoryBackend(t)
	stA, _ := open(t, b)
	stB, _ := open(t, b)
	// Its acquire has 1.8s to be answered; the loss shows at the first
	// renewal, 667ms later.
	a := newSession(t, stA, "host-a", idgen.SessionOptions{Acquire: store.AcquireOptions{TTL: 2 * time.Second}})
	// A restarted host-a (another incarnation) takes the slot back.
	bs := newSession(t, stB, "host-a", idgen.SessionOptions{Acquire: store.AcquireOptions{TTL: time.Minute, Reclaim: true}})
	if bs.Lease().Slot != a.Lease().Slot {
		t.Fatalf("reclaim got slot %d, want %d", bs.Lease().Slot, a.Lease().Slot)
	}
	ended(t, a) // at its next renewal
	err := a.Err()
	if !errors.Is(err, idgen.ErrLeaseLost) || !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("Err: %v, want ErrLeaseLost", err)
	}
	if _, err := a.Check(time.Now().UnixMilli()); !errors.Is(err, idgen.ErrLeaseLost) {
		t.Fatalf("Check: %v", err)
	}
	if err := a.Close(t.Context()); err != nil {
		t.Fatalf("Close of a lost session: %v (nothing to release)", err)
	}
	if _, err := bs.Check(time.Now().UnixMilli()); err != nil {
		t.Fatalf("the new holder: %v", err)
	}
}

func TestSessionEndsBeforeExpiry(t *testing.T) { testSessionEndsBeforeExpiry(t, memoryBackend(t)) }

// testSessionEndsBeforeExpiry: renewals that hang end the session before
// the lease would expire, by the local clock.
func testSessionEndsBeforeExpiry(t *testing.T, b backend) {
	st, f := open(t, b)
	release := f.renew.hold(0)
	defer release()
	// The session ends 2s after the send, at least 2s before the expiry:
	// room for a slow acquire and a slow wake-up of this test.
	s := newSession(t, st, "host-a", idgen.SessionOptions{Acquire: store.AcquireOptions{TTL: 4 * time.Second}, Margin: 2 * time.Second})
	lease := s.Lease()
	f.renew.waitHeld(t)
	ended(t, s)
	if now := time.Now().UnixMilli(); now >= lease.ExpiresAt {
		t.Errorf("Done closed at %d, not before the lease's expiry %d", now, lease.ExpiresAt)
	}
	if err := s.Err(); !errors.Is(err, idgen.ErrLeaseLost) {
		t.Errorf("Err: %v, want ErrLeaseLost", err)
	}
	if _, err := s.Check(time.Now().UnixMilli()); !errors.Is(err, idgen.ErrLeaseLost) {
		t.Errorf("Check: %v, want ErrLeaseLost", err)
	}
}

func TestSessionEndedTermIsNotReused(t *testing.T) {
	st, f := open(t, memoryBackend(t))
	release := f.renew.hold(0)
	defer release()
	// The session ends a second after acquiring, nine seconds before its
	// term expires: ample time to reuse the term while it is still live.
	s := newSession(t, st, "host-a", idgen.SessionOptions{Acquire: store.AcquireOptions{TTL: 10 * time.Second}, Margin: 9 * time.Second})
	old := s.Lease()
	ended(t, s)
	release()
	if time.Now().UnixMilli() >= old.ExpiresAt {
		t.Fatalf("the old term expired (at %d) before the test could reuse it", old.ExpiresAt)
	}
	// The store would hand this store the same live term again; what the
	// ended session issued under it is unknown, so a new session must not
	// continue it but take a new term above its ceiling.
	n := newSession(t, st, "host-a", idgen.SessionOptions{Acquire: store.AcquireOptions{TTL: 2 * time.Second}})
	l := n.Lease()
	if l.Slot != old.Slot || l.Fence != old.Fence+1 || l.Floor < old.Ceiling {
		t.Fatalf("new session got slot %d fence %d floor %d; want slot %d fence %d floor >= %d",
			l.Slot, l.Fence, l.Floor, old.Slot, old.Fence+1, old.Ceiling)
	}
}

func TestSessionInUse(t *testing.T) {
	st, _ := open(t, memoryBackend(t))
	newSession(t, st, "host-a", idgen.SessionOptions{Acquire: store.AcquireOptions{}})
	_, err := idgen.NewSession(t.Context(), st, ns, "host-a", idgen.SessionOptions{Acquire: store.AcquireOptions{}})
	if !errors.Is(err, idgen.ErrInUse) {
		t.Fatalf("second session of one owner on one store: %v, want ErrInUse", err)
	}
	newSession(t, st, "host-b", idgen.SessionOptions{Acquire: store.AcquireOptions{}})
}

func TestSessionOptions(t *testing.T) {
	st, _ := open(t, memoryBackend(t))
	for _, m := range []time.Duration{-time.Millisecond, time.Second, 2 * time.Second} {
		_, err := idgen.NewSession(t.Context(), st, ns, "host-a", idgen.SessionOptions{Acquire: store.AcquireOptions{TTL: time.Second}, Margin: m})
		if !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("margin %v with ttl 1s: %v, want ErrInvalidArgument", m, err)
		}
	}
	// A ttl outside the store's bounds is named as such, not through the
	// margin derived from it.
	for _, ttl := range []time.Duration{-time.Second, time.Microsecond, 25 * time.Hour} {
		_, err := idgen.NewSnowflake(t.Context(), st, ns, "host-a", idgen.SnowflakeOptions{Acquire: store.AcquireOptions{TTL: ttl}})
		if !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), "ttl "+ttl.String()) || strings.Contains(err.Error(), "margin") {
			t.Errorf("snowflake with ttl %v: %v, want ErrInvalidArgument naming the ttl, not the margin", ttl, err)
		}
	}
	// A Snowflake's margin is its session's.
	_, err := idgen.NewSnowflake(t.Context(), st, ns, "host-a", idgen.SnowflakeOptions{Acquire: store.AcquireOptions{TTL: time.Second}, Margin: time.Second})
	if !errors.Is(err, store.ErrInvalidArgument) || !strings.Contains(err.Error(), "margin") {
		t.Errorf("snowflake with margin 1s and ttl 1s: %v, want ErrInvalidArgument naming the margin", err)
	}
	if _, err := idgen.NewSession(t.Context(), st, ns, "a/b", idgen.SessionOptions{Acquire: store.AcquireOptions{}}); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("bad owner: %v", err)
	}
}

// seedFloor ends a first term of a fresh slot at used 5000, so the next
// term's floor is 5001: a floor of its own, well below its ceiling.
func seedFloor(t *testing.T, st *store.Store, space store.Namespace) int64 {
	t.Helper()
	s, err := idgen.NewSession(t.Context(), st, space, "seed", idgen.SessionOptions{Acquire: store.AcquireOptions{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CloseUsed(t.Context(), 5000); err != nil {
		t.Fatal(err)
	}
	return 5001
}

// TestSessionAcquireTookTheValidity: an acquire answered after the
// validity its send allows fails, saying so (not blaming the clock), and
// releases the unused term so that the next one starts at its floor.
func TestSessionAcquireTookTheValidity(t *testing.T) {
	st, f := open(t, memoryBackend(t))
	space := store.Namespace{Name: "slow", Limit: 1, Tolerance: time.Second}
	floor := seedFloor(t, st, space)
	const ttl = 500 * time.Millisecond
	release := f.acquire.hold(0)
	defer release()
	failed := make(chan error, 1)
	go func() {
		s, err := idgen.NewSession(t.Context(), st, space, "host-a", idgen.SessionOptions{Acquire: store.AcquireOptions{TTL: ttl}})
		if err == nil {
			s.Close(t.Context())
		}
		failed <- err
	}()
	f.acquire.waitHeld(t)
	// The slow round trip under test: the answer comes a ttl after the send.
	waitUntil(time.Now().Add(ttl).UnixMilli())
	release()
	wantSessionRefused(t, st, space, floor, <-failed, "with an acquire longer than the ttl",
		"the acquire of slot 0 took", "clock is behind")
}

// wantSessionRefused fails the test unless err, what NewSession on slot 0
// of space returned (what: the call, in the failure), is ErrLeaseLost with
// a message that says says and not blames (if not ""), and the slot is
// released with next floor floor, its floor: nothing was issued.
func wantSessionRefused(t *testing.T, st *store.Store, space store.Namespace, floor int64, err error, what, says, blames string) {
	t.Helper()
	if !errors.Is(err, idgen.ErrLeaseLost) {
		t.Fatalf("NewSession %s: %v, want ErrLeaseLost", what, err)
	}
	if msg := err.Error(); !strings.Contains(msg, says) || (blames != "" && strings.Contains(msg, blames)) {
		t.Errorf("error %q does not say %q (or says %q)", msg, says, blames)
	}
	t.Log(err)
	if s := slotInfo(t, st, space.Name, 0); s.Owner != "" || s.NextFloor != floor {
		t.Errorf("after the failed NewSession: slot %+v, want released with next floor %d (its floor: nothing was issued)", s, floor)
	}
}

// TestSessionStoreClockBehind: a lease whose expiry is already near by the
// local clock fails at once, blaming the clock.
func TestSessionStoreClockBehind(t *testing.T) {
	st, f := open(t, memoryBackend(t))
	space := store.Namespace{Name: "behind", Limit: 1, Tolerance: time.Second}
	floor := seedFloor(t, st, space)
	f.skew.Store(time.Minute.Milliseconds())
	_, err := idgen.NewSession(t.Context(), st, space, "host-a", idgen.SessionOptions{Acquire: store.AcquireOptions{TTL: 30 * time.Second}})
	wantSessionRefused(t, st, space, floor, err, "on a store a minute behind", "the store's clock is behind", "")
}

// TestSessionLargeMargin: a margin above 2/3 of the ttl leaves less
// validity than the ttl/3 between renewals; the session must renew in time.
func TestSessionLargeMargin(t *testing.T) {
	st, f := open(t, memoryBackend(t))
	// 1.5s of validity after each renewal's send.
	s := newSession(t, st, "host-a", idgen.SessionOptions{Acquire: store.AcquireOptions{TTL: 6 * time.Second}, Margin: 4500 * time.Millisecond})
	eventually(t, "three renewals or the end of the session", func() bool {
		select {
		case <-s.Done():
			return true
		default:
			return f.renew.count() >= 3
		}
	})
	if err := s.Err(); err != nil {
		t.Fatalf("session with ttl 6s and margin 4.5s ended after %d renewals: %v", f.renew.count(), err)
	}
}
