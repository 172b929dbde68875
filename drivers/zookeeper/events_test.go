package zookeeper

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/eventrec"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// TestOpenContextEndsWithItsContext: against an address nobody listens on,
// OpenContext returns when its 1s context ends, long before the 60s
// blockUntilConnectedWait, and says it found no server.
func TestOpenContextEndsWithItsContext(t *testing.T) {
	addr := deadAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	st, err := store.OpenContext(ctx, "zookeeper", map[string]string{
		"connectString": addr, "blockUntilConnectedWait": "60s", "connectionTimeout": "30s"})
	took := time.Since(start)
	if err == nil {
		st.Close()
		t.Fatal("OpenContext of a dead address succeeded")
	}
	// Generous headroom for a loaded machine; without the context the wait
	// would be 60s.
	if took > 15*time.Second {
		t.Errorf("OpenContext took %v with a 1s context", took)
	}
	if !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("OpenContext = %v, want ErrUnavailable and DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), addr) {
		t.Errorf("error %q does not name the server", err)
	}
}

// openNotified opens a store the way the portable layer does: events
// first, then Connect.
func openNotified(t *testing.T, addr string, w *wire) (*driverStore, *eventrec.Recorder) {
	t.Helper()
	var wrap = w.wrap
	s, err := prepare(testOptions(addr, nil), wrap)
	if err != nil {
		t.Fatal(err)
	}
	ev := eventrec.New()
	s.Notify(ev.Notify)
	if err := s.Connect(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, ev
}

func TestEvents(t *testing.T) {
	zktest.EachVersion(t, func(t *testing.T, srv *zktest.Server) {
		addr := srv.Addr()
		t.Run("ConnectedAndPing", func(t *testing.T) { testConnectedAndPing(t, addr) })
		t.Run("LostAnswerReported", func(t *testing.T) { testLostAnswerReported(t, addr) })
		t.Run("LockLostLoggedWithCause", func(t *testing.T) { testLockLostLogged(t, addr) })
	})
}

func testConnectedAndPing(t *testing.T, addr string) {
	s, ev := openNotified(t, addr, &wire{})
	c := ev.Of(store.Connected)
	if len(c) != 1 || c[0].Server != addr || c[0].SessionID == 0 || c[0].Timeout <= 0 {
		t.Errorf("connected events %+v, want one naming %s, its session and timeout", c, addr)
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

// testLostAnswerReported: a compare-and-set whose answer is lost is
// reported as a retry and as the range it may have taken.
func testLostAnswerReported(t *testing.T, addr string) {
	var w wire
	s, ev := openNotified(t, addr, &w)
	ctx := t.Context()
	if _, err := s.Next(ctx, "lost", 10); err != nil {
		t.Fatal(err)
	}
	w.dropFirstAnswer(opSetData)
	if _, err := s.Next(ctx, "lost", 10); err != nil {
		t.Fatalf("Next across a lost answer: %v", err)
	}
	u := ev.Of(store.UnknownOutcome)
	if len(u) != 1 || u[0].Key != "lost" || u[0].Value != 10 || u[0].Count != 10 || u[0].Err == nil {
		t.Errorf("unknown-outcome events %+v, want one of key lost, values [10, 20), with the error", u)
	}
	if r := ev.Of(store.Retry); len(r) == 0 || r[0].Attempt != 1 {
		t.Errorf("retry events %+v, want the first retry", r)
	}
	if d := ev.Of(store.Disconnected); len(d) == 0 {
		t.Error("the dropped connection was not reported")
	}

	// The first range of a key: the create's answer is lost.
	w.dropFirstAnswer(opMulti)
	if _, err := s.Next(ctx, "lostfirst", 10); err != nil {
		t.Fatalf("Next across a lost create answer: %v", err)
	}
	u = ev.Of(store.UnknownOutcome)
	if len(u) != 2 || u[1].Key != "lostfirst" || u[1].Value != 0 || u[1].Count != 10 {
		t.Errorf("unknown-outcome events %+v, want a second one of key lostfirst, values [0, 10)", u)
	}
}

// testLockLostLogged: a lock held across a cut longer than the session
// timeout is lost, and the log says so at Error with the driver's reason.
func testLockLostLogged(t *testing.T, addr string) {
	proxy := zktest.NewProxy(t, addr)
	ev := eventrec.New()
	st, err := store.OpenContext(t.Context(), "zookeeper", testOptions(proxy.Addr(), nil),
		append(ev.Options(), store.WithTimeout(10*time.Second))...)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l, err := st.Locks().Lock(t.Context(), "held")
	if err != nil {
		t.Fatal(err)
	}
	proxy.Cut()
	e := ev.Await(t, store.LockLost, 60*time.Second) // a 4s session timeout, on a loaded machine
	// The reason is the driver's (its words change with the liveness rule).
	if !errors.Is(e.Err, store.ErrLeaseLost) || !strings.Contains(e.Err.Error(), "zookeeper: ") {
		t.Errorf("lost lock reported with %v, want ErrLeaseLost and the driver's reason", e.Err)
	}
	if e.Key != "held" || e.Fence != l.Fence() {
		t.Errorf("lost lock reported as %q fence %d, want held fence %d", e.Key, e.Fence, l.Fence())
	}
	want := `level=ERROR msg="store: lock lost" key=held fence=`
	if got := ev.Log(); !strings.Contains(got, want) || !strings.Contains(got, "zookeeper: ") {
		t.Errorf("log lacks %q with the reason:\n%s", want, got)
	}
}
