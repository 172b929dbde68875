package store_test

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// rangeOnly is a driver with only the range capability; it records whether
// it was called so tests can prove invalid input never reaches a driver.
type rangeOnly struct{ calls int }

func (r *rangeOnly) Close() error { return nil }
func (r *rangeOnly) Next(ctx context.Context, key string, step int64) (int64, error) {
	r.calls++
	if key == "slow" {
		<-ctx.Done()
		return 0, errors.New("gave up") // not a context error: the layer must add it
	}
	return 0, nil
}
func (r *rangeOnly) Current(context.Context, string) (int64, bool, error) {
	r.calls++
	return 0, false, nil
}
func (r *rangeOnly) Seal(context.Context, string) (int64, error) { r.calls++; return 0, nil }
func (r *rangeOnly) Init(context.Context, string, int64) error   { r.calls++; return nil }
func (r *rangeOnly) Keys(context.Context) ([]string, error)      { r.calls++; return nil, nil }

func init() {
	store.Register("storetest-b", func(map[string]string) (driver.Store, error) { return &rangeOnly{}, nil })
	store.Register("storetest-a", func(map[string]string) (driver.Store, error) { return &rangeOnly{}, nil })
}

func TestRegisterPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"nil factory": func() { store.Register("storetest-nil", nil) },
		"duplicate": func() {
			store.Register("storetest-a", func(map[string]string) (driver.Store, error) { return nil, nil })
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Register did not panic", name)
				}
			}()
			f()
		}()
	}
}

func TestDriversSortedAndUnknownListed(t *testing.T) {
	names := strings.Join(store.Drivers(), ",")
	if !strings.Contains(names, "storetest-a,storetest-b") {
		t.Errorf("Drivers() = %s, want sorted and containing both test drivers", names)
	}
	_, err := store.Open("nosuch", nil)
	if err == nil || !strings.Contains(err.Error(), `"nosuch"`) || !strings.Contains(err.Error(), "storetest-a") {
		t.Errorf("unknown driver error %v should name it and list the registered ones", err)
	}
	if !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("unknown driver error is not ErrInvalidArgument: %v", err)
	}
}

func open(t *testing.T, opts ...store.Option) (*store.Store, *rangeOnly) {
	t.Helper()
	d := &rangeOnly{}
	st, err := store.OpenDriver(d, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, d
}

func TestInvalidKeysNeverReachTheDriver(t *testing.T) {
	st, d := open(t)
	ctx := context.Background()
	bad := []string{"", "/a", "a/", "a//b", ".", "a/..", "a\x00b", "a\x01", "a\u007f", "a\u0085",
		"a\ue000", "a\ufff0", "\xff", strings.Repeat("k", store.MaxKeyLen+1),
		"a\u202e", "\ufeffa", "a/\u200b", " ", "a/\u3000/b"}
	for _, key := range bad {
		if _, err := st.Ranges().Next(ctx, key, 1); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("Next(%q) = %v, want ErrInvalidArgument", key, err)
		}
	}
	for _, step := range []int64{0, -1} {
		if _, err := st.Ranges().Next(ctx, "k", step); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("Next(step %d) = %v, want ErrInvalidArgument", step, err)
		}
	}
	if err := st.Ranges().Init(ctx, "k", -1); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("Init(-1) = %v, want ErrInvalidArgument", err)
	}
	if d.calls != 0 {
		t.Errorf("the driver was called %d times with invalid input", d.calls)
	}
	for _, key := range []string{"a", "a/b/c", "中文/ключ", strings.Repeat("k", store.MaxKeyLen), "a.b/..c"} {
		if _, err := st.Ranges().Next(ctx, key, 1); err != nil {
			t.Errorf("Next(%q) = %v, want success", key, err)
		}
	}
}

func TestErrorsNameOperationAndKey(t *testing.T) {
	st, _ := open(t)
	_, err := st.Ranges().Next(context.Background(), "a//b", 1)
	var se *store.Error
	if !errors.As(err, &se) || se.Op != "Next" || se.Key != "a//b" {
		t.Fatalf("err = %#v, want *store.Error for Next of a//b", err)
	}
	if strings.Count(err.Error(), "store:") != 1 {
		t.Errorf("error wrapped more than once: %v", err)
	}
}

func TestTimeoutIsADeadlineError(t *testing.T) {
	st, _ := open(t, store.WithTimeout(20*time.Millisecond))
	_, err := st.Ranges().Next(context.Background(), "slow", 1)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), "gave up") {
		t.Errorf("the driver's own error is lost: %v", err)
	}
}

func TestMissingCapabilitiesAreUnsupported(t *testing.T) {
	st, _ := open(t)
	ctx := context.Background()
	ns := store.Namespace{Name: "ns", Limit: 4}
	if _, err := st.Slots().Acquire(ctx, ns, "o", store.AcquireOptions{}); !errors.Is(err, store.ErrUnsupported) {
		t.Errorf("Acquire = %v, want ErrUnsupported", err)
	}
	if _, err := st.Locks().TryLock(ctx, "l"); !errors.Is(err, store.ErrUnsupported) {
		t.Errorf("TryLock = %v, want ErrUnsupported", err)
	}
}

func TestClosedStoreRefuses(t *testing.T) {
	st, d := open(t)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := st.Ranges().Next(context.Background(), "k", 1); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Next after Close = %v, want ErrClosed", err)
	}
	if d.calls != 0 {
		t.Errorf("driver called after Close")
	}
}

func TestOptionsValidated(t *testing.T) {
	d := &rangeOnly{}
	for name, o := range map[string]store.Option{
		"timeout":     store.WithTimeout(0),
		"owner":       store.WithOwner("a/b"),
		"incarnation": store.WithIncarnation("x\ny"),
	} {
		if _, err := store.OpenDriver(d, o); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("%s: OpenDriver = %v, want ErrInvalidArgument", name, err)
		}
	}
}

func TestRootPackageDoesNotImportYAML(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "yaml") {
		t.Errorf("package store depends on a YAML library:\n%s", out)
	}
}
