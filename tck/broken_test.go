package tck_test

// The kit tests its own checks: each variant below is a driver (the memory
// or SQLite driver, wrapped) with one deliberate bug, and the check meant
// to catch that bug must fail on it, while its sound counterpart passes
// the same check (not skips it). A failing check fails its test, so each
// variant runs in a child process (this test binary again, running
// TestBrokenChild) and TestBroken reads the child's verdict. A variant
// with a probe also shows its bug directly: the probe's outcome on it
// differs from the sound store's.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	_ "github.com/cosid-go/store/drivers/memory"
	"github.com/cosid-go/store/internal/testing/rawdriver"
	"github.com/cosid-go/store/tck"
)

// brokenEnv names the variant a child process runs the kit against.
const brokenEnv = "COSID_TCK_BROKEN"

type variant struct {
	name   string
	checks []string // the checks (group/check) run on it
	broken bool     // each check must fail; else each must pass
	suite  func(t *testing.T) tck.Suite
	// probe, if set, runs a scenario on target and on sound; the outcomes
	// must differ (broken_fault_test.go).
	probe         probeFunc
	target, sound target
}

// variants is every variant, sound and broken, in one table.
var variants = []variant{
	{name: "options-sound", checks: []string{"Options/MissingRequired"}, suite: optionsSuite(false)},
	{name: "options-default-required", checks: []string{"Options/MissingRequired"}, broken: true, suite: optionsSuite(true)},
}

// TestBroken runs each variant's checks in a child process, all at once,
// and checks that a sound variant passes each and a broken one fails each.
func TestBroken(t *testing.T) {
	type verdict struct {
		out  []byte
		err  error
		done chan struct{}
	}
	verdicts := map[string]*verdict{}
	all := allVariants()
	for _, v := range all {
		r := &verdict{done: make(chan struct{})}
		verdicts[v.name] = r
		go func() {
			defer close(r.done)
			// One -run pattern per check would need alternation across
			// levels, which -test.run does not have: one child per variant
			// with its checks' groups and names each alternated.
			groups, names := alternation(v.checks)
			cmd := exec.CommandContext(t.Context(), os.Args[0],
				"-test.run=^TestBrokenChild$/"+groups+"/"+names, "-test.count=1", "-test.v", "-test.timeout=4m")
			cmd.Env = append(os.Environ(), brokenEnv+"="+v.name)
			r.out, r.err = cmd.CombinedOutput()
		}()
	}
	for _, v := range all {
		t.Run(v.name, func(t *testing.T) {
			r := verdicts[v.name]
			<-r.done
			var exit *exec.ExitError
			if r.err != nil && !errors.As(r.err, &exit) {
				t.Fatalf("running the child: %v", r.err)
			}
			if v.probe != nil {
				checkProbe(t, v)
			}
			for _, c := range v.checks {
				want := "PASS"
				if v.broken {
					want = "FAIL"
				}
				re := regexp.MustCompile(`(?m)^\s*--- ` + want + `: TestBrokenChild/` + regexp.QuoteMeta(c) + ` \(`)
				if !re.Match(r.out) {
					t.Errorf("%s on the variant %q: want --- %s:\n%s", c, v.name, want, r.out)
				}
				// Run names the rules a failing check holds (rulesCited).
				if v.broken && !bytes.Contains(r.out, []byte(c+" holds these rules of the contract map")) {
					t.Errorf("%s failed on the variant %q without naming the rules it holds:\n%s", c, v.name, r.out)
				}
			}
		})
	}
}

// alternation turns checks (group/check) into -test.run elements matching
// exactly those groups and those check names.
func alternation(checks []string) (groups, names string) {
	g, n := map[string]bool{}, map[string]bool{}
	for _, c := range checks {
		group, name, _ := strings.Cut(c, "/")
		g["^"+regexp.QuoteMeta(group)+"$"] = true
		n["^"+regexp.QuoteMeta(name)+"$"] = true
	}
	join := func(m map[string]bool) string {
		return "(" + strings.Join(sortedKeys(m), "|") + ")"
	}
	return join(g), join(n)
}

func sortedKeys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }

// TestBrokenChild is the entry point of TestBroken's children; in a normal
// run it does nothing.
func TestBrokenChild(t *testing.T) {
	name := os.Getenv(brokenEnv)
	if name == "" {
		return
	}
	for _, v := range allVariants() {
		if v.name == name {
			tck.Run(t, v.suite(t))
			return
		}
	}
	t.Fatalf("no variant %q", name)
}

// memHarness opens memory stores on one named state.
type memHarness struct{ name string }

var memStates atomic.Int64

func newMemHarness(context.Context, *testing.T) (tck.Harness, error) {
	return memHarness{name: fmt.Sprintf("tck-self-%d", memStates.Add(1))}, nil
}

func (h memHarness) NewStore(context.Context) (driver.Store, error) {
	return openMemory(map[string]string{"name": h.name})
}

func (memHarness) Close() error { return nil }

// wrapped is a new store of h's state, wrapped by wrap: the NewStore of
// the harnesses that embed a memHarness.
func (h memHarness) wrapped(ctx context.Context, wrap func(memDriver) driver.Store) (driver.Store, error) {
	d, err := h.NewStore(ctx)
	if err != nil {
		return nil, err
	}
	return wrap(d.(memDriver)), nil
}

// openMemory is the memory driver's factory, through the registry.
func openMemory(options map[string]string) (driver.Store, error) {
	st, err := store.Open("memory", options)
	if err != nil {
		return nil, err
	}
	return rawdriver.Of(st), nil
}

// memSuite is a suite of the memory driver, to which variants add.
func memSuite() tck.Suite {
	return tck.Suite{
		NewHarness: newMemHarness,
		Ranges:     true, Slots: true, Locks: true,
		Factory:       openMemory,
		Options:       map[string]string{"name": "tck-self-options"},
		NotPersistent: "a memory state lives in the process",
	}
}

// harnessSuite is the memory driver's suite, each harness made by wrap
// from a memHarness on a fresh state: for the variants whose stores share
// a state of their own (a seal, an offset, what a fault deleted), kept in
// the harness.
func harnessSuite(wrap func(memHarness) tck.Harness) func(*testing.T) tck.Suite {
	return func(*testing.T) tck.Suite {
		s := memSuite()
		s.NewHarness = func(ctx context.Context, t *testing.T) (tck.Harness, error) {
			h, err := newMemHarness(ctx, t)
			return wrap(h.(memHarness)), err
		}
		return s
	}
}

// locksOnly is suite with the lock checks alone.
func locksOnly(suite func(*testing.T) tck.Suite) func(*testing.T) tck.Suite {
	return func(t *testing.T) tck.Suite {
		s := suite(t)
		s.Ranges, s.Slots = false, false
		return s
	}
}

// optionsSuite gives the memory driver a required option, tck.path; lax
// opens a store without it, on a default the operator never chose.
func optionsSuite(lax bool) func(*testing.T) tck.Suite {
	return func(*testing.T) tck.Suite {
		s := memSuite()
		s.Factory = func(options map[string]string) (driver.Store, error) {
			rest := maps.Clone(options)
			_, given := rest["tck.path"]
			delete(rest, "tck.path")
			if !given && !lax {
				return nil, &driver.OptionError{Key: "tck.path", Reason: "is required"} // wraps ErrInvalidArgument
			}
			return openMemory(rest)
		}
		s.Options = map[string]string{"name": "tck-self-options", "tck.path": "/somewhere"}
		s.RequiredOptions = []string{"tck.path"}
		return s
	}
}
