package store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/drivers/memory"
	"github.com/cosid-go/store/internal/testing/rangebench"
)

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu     sync.Mutex
	ops    []store.OpEnd
	events []store.Event
}

func (r *recorder) observer() store.Observer {
	return store.Observer{
		End: func(_ context.Context, e store.OpEnd) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.ops = append(r.ops, e)
		},
		Event: func(e store.Event) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.events = append(r.events, e)
		},
	}
}

// opLines are the ops seen so far as "Op key outcome".
func (r *recorder) opLines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.ops {
		out = append(out, e.Op+" "+e.Key+" "+e.Outcome)
	}
	return out
}

// kinds are the events seen so far as "kind key".
func (r *recorder) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, string(e.Kind)+" "+e.Key)
	}
	return out
}

// logBuffer is a text logger at Debug level writing to a buffer.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func TestObserverSeesEveryCallWithItsOutcome(t *testing.T) {
	var r recorder
	st, err := memory.OpenStore(nil, store.WithObserver(r.observer()))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	st.Ranges().Next(ctx, "a", 10)
	st.Ranges().Next(ctx, "/bad", 10)
	st.Ranges().Seal(ctx, "a")
	st.Ranges().Next(ctx, "a", 10)
	st.Slots().List(ctx, "none")
	st.Ping(ctx)
	want := []string{"Next a ok", "Next /bad invalid_argument", "Seal a ok", "Next a sealed", "Slots none not_found", "Ping  ok"}
	if diff := cmp.Diff(want, r.opLines()); diff != "" {
		t.Errorf("ops (-want +got):\n%s", diff)
	}
	for _, e := range r.ops {
		if e.Duration <= 0 || (e.Outcome == "ok") != (e.Err == nil) {
			t.Errorf("op %+v: want a duration, and an error exactly when the outcome is not ok", e)
		}
	}
}

func TestOutcome(t *testing.T) {
	unavailable := fmt.Errorf("no server answered: %w", errors.Join(store.ErrUnavailable, context.DeadlineExceeded))
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, "ok"},
		{unavailable, "unavailable"},
		{context.DeadlineExceeded, "deadline_exceeded"},
		{fmt.Errorf("x: %w", context.Canceled), "canceled"},
		{&store.Error{Op: "Next", Err: store.ErrSealed}, "sealed"},
		{store.ErrLeaseLost, "lease_lost"},
		{errors.New("boom"), "other"},
	} {
		if got := store.Outcome(c.err); got != c.want {
			t.Errorf("Outcome(%v) = %q, want %q", c.err, got, c.want)
		}
	}
}

func TestLocksReportedAndLostLocksLogged(t *testing.T) {
	var r recorder
	var logs logBuffer
	st, err := memory.OpenStore(nil, store.WithObserver(r.observer()), store.WithLogger(logs.logger()))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a, err := st.Locks().Lock(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Locks().Lock(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	st.Close() // b is lost with the store; Close waits for the report
	want := []string{"lock_acquired a", "lock_released a", "lock_acquired b", "lock_lost b"}
	if diff := cmp.Diff(want, r.kinds()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if got := logs.String(); !strings.Contains(got, `msg="store: lock released by Close" key=b`) ||
		strings.Contains(got, "key=a") {
		t.Errorf("log: want only b's end by Close, got:\n%s", got)
	}
}

func TestLeaseLostReportedAndLogged(t *testing.T) {
	var r recorder
	var logs logBuffer
	shared := &memory.Options{Name: fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())}
	a, err := memory.OpenStore(shared, store.WithObserver(r.observer()), store.WithLogger(logs.logger()))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := memory.OpenStore(shared) // the same owner restarted: it reclaims the slot
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	ns := store.Namespace{Name: "w", Limit: 1}
	lease, err := a.Slots().Acquire(ctx, ns, "host", store.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Slots().Acquire(ctx, ns, "host", store.AcquireOptions{Reclaim: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Slots().Renew(ctx, lease); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("Renew = %v, want ErrLeaseLost", err)
	}
	if diff := cmp.Diff([]string{"lease_lost w/0"}, r.kinds()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if got := logs.String(); !strings.Contains(got, `level=ERROR msg="store: lease lost" key=w/0 fence=1`) {
		t.Errorf("log lacks the lost lease:\n%s", got)
	}
}

// TestSilentByDefault: without WithLogger a store writes nothing, not even
// to slog's default logger, through connection events, lost locks and
// lost leases.
func TestSilentByDefault(t *testing.T) {
	var logs logBuffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(logs.logger())
	d := &notifying{}
	st, err := store.OpenDriver(d)
	if err != nil {
		t.Fatal(err)
	}
	if d.notify != nil {
		t.Error("an unobserved store asked its driver for events")
	}
	st.Close()
	m, err := memory.OpenStore(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Locks().Lock(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if got := logs.String(); got != "" {
		t.Errorf("a store without a logger logged:\n%s", got)
	}
}

// notifying is a driver that connects and reports its connection.
type notifying struct {
	rangeOnly
	notify  func(driver.Event)
	closed  bool
	connect func(ctx context.Context) error
	session int64 // the server session it reports, 0 for none
}

func (n *notifying) Notify(f func(driver.Event)) { n.notify = f }
func (n *notifying) Close() error                { n.closed = true; return nil }
func (n *notifying) Connect(ctx context.Context) error {
	if n.connect != nil {
		return n.connect(ctx)
	}
	n.notify(driver.Event{Kind: driver.Connected, Server: "s1:2181", SessionID: n.session, Timeout: 4 * time.Second})
	return nil
}

var lastNotifying *notifying

func init() {
	store.Register("storetest-notify", func(opts map[string]string) (driver.Store, error) {
		lastNotifying = &notifying{session: 0x1f}
		if opts["sessionless"] != "" {
			lastNotifying.session = 0
		}
		if opts["dead"] != "" {
			lastNotifying.connect = func(ctx context.Context) error {
				<-ctx.Done()
				return fmt.Errorf("nobody answered: %w", errors.Join(driver.ErrUnavailable, ctx.Err()))
			}
		}
		return lastNotifying, nil
	})
}

func TestOpenContextConnectsAndRoutesDriverEvents(t *testing.T) {
	var r recorder
	var logs logBuffer
	st, err := store.OpenContext(context.Background(), "storetest-notify", nil,
		store.WithObserver(r.observer()), store.WithLogger(logs.logger()))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if diff := cmp.Diff([]string{"connected "}, r.kinds()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	want := `level=INFO msg="store: connected" server=s1:2181 session=0x1f session_timeout=4s`
	if got := logs.String(); !strings.Contains(got, want) {
		t.Errorf("log lacks %q:\n%s", want, got)
	}
}

// A driver without server sessions (etcd's, SQL's) logs its connection
// without a session of 0x0.
func TestConnectedLogWithoutSession(t *testing.T) {
	var logs logBuffer
	st, err := store.OpenContext(context.Background(), "storetest-notify", map[string]string{"sessionless": "1"},
		store.WithLogger(logs.logger()))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got := logs.String()
	if want := `msg="store: connected" server=s1:2181`; !strings.Contains(got, want) || strings.Contains(got, "session") {
		t.Errorf("log should hold %q and no session:\n%s", want, got)
	}
}

func TestOpenContextEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := store.OpenContext(ctx, "storetest-notify", map[string]string{"dead": "1"})
	if !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("OpenContext = %v, want ErrUnavailable and DeadlineExceeded", err)
	}
	if !lastNotifying.closed {
		t.Error("the driver of a failed open was not closed")
	}
}

func TestPingUnsupported(t *testing.T) {
	st, err := store.OpenDriver(&rangeOnly{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Ping(context.Background()); !errors.Is(err, store.ErrUnsupported) {
		t.Errorf("Ping = %v, want ErrUnsupported", err)
	}
}

// TestCorePackagesDoNotImportOpenTelemetry: only the adapter (otelstore)
// and the example compile OpenTelemetry.
func TestCorePackagesDoNotImportOpenTelemetry(t *testing.T) {
	pkgs := []string{".", "./driver", "./drivers/...", "./idgen", "./config", "./tck", "./cmd/..."}
	out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "opentelemetry") {
		t.Errorf("a core package depends on OpenTelemetry:\n%s", out)
	}
}

func benchmarkNext(b *testing.B, opts ...store.Option) {
	st, err := memory.OpenStore(nil, opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	rangebench.Serial(b, st)
}

// BenchmarkNextHook measures what an observer costs memory's Next: compare
// observed against none in the same run.
func BenchmarkNextHook(b *testing.B) {
	b.Run("none", func(b *testing.B) { benchmarkNext(b) })
	b.Run("observed", func(b *testing.B) {
		var n int
		benchmarkNext(b, store.WithObserver(store.Observer{End: func(context.Context, store.OpEnd) { n++ }}))
	})
}

// TestNoLogPerSuccessfulCall: successful calls log nothing, even at Debug.
func TestNoLogPerSuccessfulCall(t *testing.T) {
	var logs logBuffer
	st, err := memory.OpenStore(nil, store.WithLogger(logs.logger()))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if _, err := st.Ranges().Next(ctx, "k", 10); err != nil {
		t.Fatal(err)
	}
	ns := store.Namespace{Name: "w", Limit: 2}
	lease, err := st.Slots().Acquire(ctx, ns, "host", store.AcquireOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lease, err = st.Slots().Renew(ctx, lease); err != nil {
		t.Fatal(err)
	}
	if err := st.Slots().Release(ctx, lease); err != nil {
		t.Fatal(err)
	}
	l, err := st.Locks().Lock(ctx, "x")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if got := logs.String(); got != "" {
		t.Errorf("successful calls logged:\n%s", got)
	}
}

// retrier is a memory store whose Next retries twice, as a driver does
// after connection losses, and keeps the context value tag it was given.
type retrier struct {
	memoryRanges
	mu     sync.Mutex
	tags   []any
	report func(driver.Event)
}

func (r *retrier) Notify(f func(driver.Event)) { r.report = f }

func (r *retrier) Next(ctx context.Context, key string, step int64) (int64, error) {
	r.mu.Lock()
	r.tags = append(r.tags, ctx.Value(spanKey{}))
	r.mu.Unlock()
	lost := errors.New("connection lost")
	driver.Retried(ctx, r.report, 1, lost)
	driver.Retried(ctx, r.report, 2, lost)
	return r.memoryRanges.Next(ctx, key, step)
}

// TestObserverStartCarriesContext: the context Start returns is the
// driver's and End's, chained over observers, and End counts the driver's
// retries; a call refused before the driver still starts and ends. Each
// retry, reported once by the driver (driver.Retried), is both counted and
// a Retry event.
func TestObserverStartCarriesContext(t *testing.T) {
	d := &retrier{memoryRanges: newGate("").memoryRanges}
	var mu sync.Mutex
	var ends []string
	var retries []int
	tag := func(name string) store.Observer {
		return store.Observer{
			Start: func(ctx context.Context, s store.OpStart) context.Context {
				prev, _ := ctx.Value(spanKey{}).(string)
				return context.WithValue(ctx, spanKey{}, prev+name+":"+s.Op+" "+s.Key+";")
			},
			End: func(ctx context.Context, e store.OpEnd) {
				mu.Lock()
				defer mu.Unlock()
				ends = append(ends, fmt.Sprintf("%v retries=%d %s", ctx.Value(spanKey{}), e.Retries, e.Outcome))
			},
			Event: func(e store.Event) {
				if e.Kind == store.Retry && name == "a" {
					mu.Lock()
					defer mu.Unlock()
					retries = append(retries, e.Attempt)
				}
			},
		}
	}
	st, err := store.OpenDriver(d, store.WithObserver(tag("a")), store.WithObserver(tag("b")))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Ranges().Next(t.Context(), "k", 1); err != nil {
		t.Fatal(err)
	}
	st.Ranges().Next(t.Context(), "k", 0) // refused: invalid step
	want := "a:Next k;b:Next k;"
	if len(d.tags) != 1 || d.tags[0] != want {
		t.Errorf("the driver saw %q, want [%q]", d.tags, want)
	}
	wantEnds := []string{
		want + " retries=2 ok", want + " retries=2 ok",
		want + " retries=0 invalid_argument", want + " retries=0 invalid_argument",
	}
	if diff := cmp.Diff(wantEnds, ends); diff != "" {
		t.Errorf("End saw (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{1, 2}, retries); diff != "" {
		t.Errorf("Retry events' attempts (-want +got):\n%s", diff)
	}
}
