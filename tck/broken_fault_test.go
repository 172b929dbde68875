package tck_test

// The variants whose bug needs more than the driver's interfaces: each
// wraps a memory store and, in the one method it breaks, either keeps
// records of its own beside the state (shared by the stores of one
// state), or reads and writes the state through the memory driver's
// fault view (internal/memfault). Their harness also moves the
// state's clock, for the checks that need one. Most have a probe: a
// direct scenario whose outcome on the variant differs from the sound
// store's, so each variant is shown to have its bug, not only to fail
// the kit.

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/memfault"
	"github.com/cosid-go/store/tck"
)

// faultWrap gives a memory store its bug; sh is what the stores of its
// state share.
type faultWrap func(d memDriver, sh *shared) driver.Store

// shared keeps a variant's own records for one memory state, one value of
// each type, made on first use; name is the state's.
type shared struct {
	name string
	m    sync.Map
}

func sharedOf[T any](sh *shared) *T {
	v, _ := sh.m.LoadOrStore(fmt.Sprintf("%T", (*T)(nil)), new(T))
	return v.(*T)
}

// faulty is a broken variant over the memory driver, with a probe if
// probe is not nil.
func faulty(name, catch string, wrap faultWrap, probe probeFunc) variant {
	return variant{name: name, checks: []string{catch}, broken: true, suite: faultSuite(wrap),
		probe: probe, target: target{wrap: wrap}}
}

// faultSuite is the memory driver's suite with every store wrapped.
func faultSuite(wrap faultWrap) func(*testing.T) tck.Suite {
	return func(*testing.T) tck.Suite {
		s := memSuite()
		s.NewHarness = func(context.Context, *testing.T) (tck.Harness, error) {
			name := freshName("tck-fault")
			return &faultHarness{name: name, sh: &shared{name: name}, wrap: wrap}, nil
		}
		return s
	}
}

var names atomic.Int64

func freshName(what string) string { return fmt.Sprintf("%s-%d", what, names.Add(1)) }

// faultHarness opens memory stores on one named state, each wrapped. It
// moves the state's clock (tck.ClockStepper, tck.ClockSetter).
type faultHarness struct {
	mu   sync.Mutex
	name string
	sh   *shared
	wrap faultWrap
}

func (h *faultHarness) NewStore(context.Context) (driver.Store, error) {
	h.mu.Lock()
	name := h.name
	h.mu.Unlock()
	d, err := openMemory(map[string]string{"name": name})
	if err != nil {
		return nil, err
	}
	return h.wrap(d.(memDriver), h.sh), nil
}

func (*faultHarness) Close() error { return nil }

func (h *faultHarness) StepClock(ctx context.Context, d time.Duration) error {
	return h.edit(ctx, func(s memfault.State) error {
		old := s.Clock()
		s.SetClock(func() int64 { return old() + d.Milliseconds() })
		return nil
	})
}

func (h *faultHarness) SetClock(ctx context.Context, t time.Time) error {
	return h.edit(ctx, func(s memfault.State) error {
		ms := t.UnixMilli()
		s.SetClock(func() int64 { return ms })
		return nil
	})
}

// edit runs f on the harness's state.
func (h *faultHarness) edit(ctx context.Context, f func(memfault.State) error) error {
	h.mu.Lock()
	name := h.name
	h.mu.Unlock()
	d, err := openMemory(map[string]string{"name": name})
	if err != nil {
		return err
	}
	defer d.Close()
	return memfault.Edit(ctx, d, f)
}

// Probes.

// probeFunc runs a scenario on tg and returns what it observed, as text.
type probeFunc func(ctx context.Context, tg target) (string, error)

// target is what a probe runs on: memory stores, wrapped by wrap if set,
// and factory (openMemory if nil) for the probes of options.
type target struct {
	wrap    faultWrap
	factory driver.Factory
}

// open opens a store on a fresh state of its own; base is the memory
// store under the wrapper.
func (tg target) open() (d driver.Store, base memDriver) {
	ds, bases := tg.openN(1)
	return ds[0], bases[0]
}

// openN opens n stores on one fresh state.
func (tg target) openN(n int) (ds []driver.Store, bases []memDriver) {
	name := freshName("tck-probe")
	sh := &shared{name: name}
	for range n {
		d, err := openMemory(map[string]string{"name": name})
		if err != nil {
			panic(err) // the memory driver opens any name
		}
		base := d.(memDriver)
		if tg.wrap != nil {
			d = tg.wrap(base, sh)
		}
		ds, bases = append(ds, d), append(bases, base)
	}
	return ds, bases
}

func (tg target) openFactory(options map[string]string) (driver.Store, error) {
	if tg.factory != nil {
		return tg.factory(options)
	}
	return openMemory(options)
}

// stepClock moves the clock of base's state by d.
func stepClock(ctx context.Context, base memDriver, d time.Duration) error {
	return memfault.Edit(ctx, base, func(s memfault.State) error {
		old := s.Clock()
		s.SetClock(func() int64 { return old() + d.Milliseconds() })
		return nil
	})
}

// setClock makes now the clock of base's state.
func setClock(ctx context.Context, base memDriver, now func() int64) error {
	return memfault.Edit(ctx, base, func(s memfault.State) error { s.SetClock(now); return nil })
}

// checkProbe runs v's probe on the sound store and on v: a variant that
// behaves like the sound store would prove nothing.
func checkProbe(t *testing.T, v variant) {
	t.Helper()
	sound, err := v.probe(t.Context(), v.sound)
	if err != nil {
		t.Fatalf("probe on the sound store: %v", err)
	}
	broken, err := v.probe(t.Context(), v.target)
	if err != nil {
		t.Fatalf("probe on %q: %v", v.name, err)
	}
	if sound == broken {
		t.Errorf("the variant %q behaves as the sound store in its probe: %s", v.name, sound)
	}
	t.Logf("probe: sound store: %s; %s: %s", sound, v.name, broken)
}

// allVariants is variants with the sound counterpart of the faulty ones:
// the memory driver in their harness passes each check that one of them
// must fail, so each fails by its bug, not by its harness.
func allVariants() []variant {
	checks := map[string]bool{}
	for _, v := range variants {
		if v.target.wrap != nil {
			for _, c := range v.checks {
				checks[c] = true
			}
		}
	}
	sound := func(d memDriver, _ *shared) driver.Store { return d }
	return append(slices.Clip(variants), variant{name: "fault-sound", checks: sortedKeys(checks),
		suite: func(t *testing.T) tck.Suite {
			s := faultSuite(sound)(t)
			// Every variant runs at once, with the race detector, on a
			// machine that may be busy: the sound store gets four times
			// the kit's times, so that only a bug fails it.
			s.TimeScale = 4
			s.MalformedOptions = map[string]string{"create": "maybe"}
			return s
		}})
}

// atomicMillis is a clock a probe sets by hand.
type atomicMillis struct{ atomic.Int64 }
