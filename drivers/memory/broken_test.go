package memory

// The TCK is itself tested: each variant below is the memory driver with one
// deliberate bug, and the TCK must fail on it, in the check meant to catch
// that bug. A failing TCK fails its test, so each variant runs in a child
// process (this test binary again, running TestBrokenChild) and TestBroken
// reads the child's verdict.

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/tck"
)

// brokenEnv names the variant a child process runs the TCK against.
const brokenEnv = "COSID_MEMORY_TCK_BROKEN"

type brokenVariant struct {
	name    string
	catch   string                          // the check that must fail (group/check); "" for a sound variant
	wrap    func(*driverStore) driver.Store // the store the TCK gets
	factory driver.Factory                  // replaces Open as the suite's factory, if set
	suite   func(*tck.Suite)                // changes the suite further, if set
	// probe, if set, runs a scenario on the variant (wrap, factory) and on
	// the sound store (no wrap, soundFactory); the outcomes must differ.
	probe func(ctx context.Context, wrap func(*driverStore) driver.Store, factory driver.Factory) (string, error)
	// soundFactory is the sound counterpart of factory for the probe
	// (default Open); malformed is the suite's MalformedOptions.
	soundFactory driver.Factory
	malformed    map[string]string
}

// brokenVariants is every variant, in one table; TestBroken runs them all.
var brokenVariants = []brokenVariant{
	{name: "sound", wrap: func(s *driverStore) driver.Store { return s }},
	{name: "seal-grants-queued", catch: "Locks/Seal", wrap: func(s *driverStore) driver.Store { return sealGrantsQueued{s} }},
	{name: "purge-unseals-locks", catch: "Locks/Seal", wrap: func(s *driverStore) driver.Store { return purgeUnseals{s} }},
	{name: "double-lock", catch: "Locks/TryLock", wrap: func(s *driverStore) driver.Store { return doubleLock{s} }},
	{name: "stale-unlock", catch: "Locks/UnlockTwice", wrap: func(s *driverStore) driver.Store { return staleUnlock{s} }},

	// Lock variants with a probe (broken_locks_test.go).
	{name: "trylock-gap", catch: "Locks/TryLockAtHandover", probe: probeTryLockGap,
		wrap: func(s *driverStore) driver.Store { return lockBug{driverStore: s, gap: true} }},
	{name: "drop-at-grant", catch: "Locks/CancelAtGrant", probe: probeDropAtGrant,
		wrap: func(s *driverStore) driver.Store { return lockBug{driverStore: s, dropAtGrant: true} }},
	{name: "wake-behind", catch: "Locks/MiddleCancel", probe: probeWakeBehind,
		wrap: func(s *driverStore) driver.Store { return lockBug{driverStore: s, wakeBehind: true} }},
	{name: "sorted-queue", catch: "Locks/FIFOArrival", probe: probeSorted,
		wrap: func(s *driverStore) driver.Store { return lockBug{driverStore: s, sorted: true} }},
	{name: "unlock-lost-nil", catch: "Locks/UnlockAfterLost", probe: probeUnlockLost,
		wrap: func(s *driverStore) driver.Store { return unlockLostNil{s} }},
	{name: "lost-after-grant", catch: "Locks/LostBeforeGrant", probe: probeLostAfterGrant,
		wrap: func(s *driverStore) driver.Store { return lostAfterGrant{s} }},
	// The areas where bugs once passed the whole TCK (broken_areas_test.go).
	{name: "purge-own-locks", catch: "Purge/Locked", wrap: func(s *driverStore) driver.Store { return purgeOwnLocks{s} }},
	{name: "trylock-any-name", catch: "Locks/TryLock", wrap: func(s *driverStore) driver.Store { return tryLockAnyName{s} }},
	{name: "granted-not-owned", catch: "Locks/LostOnClose", wrap: func(s *driverStore) driver.Store { return grantedNotOwned{s} }},
}

// TestBroken runs the TCK against every variant, each in a child process,
// all at once, and checks that each broken one fails in its check.
func TestBroken(t *testing.T) {
	type verdict struct {
		out  []byte
		err  error
		done chan struct{}
	}
	verdicts := map[string]*verdict{}
	for _, v := range brokenVariants {
		// Started here rather than in parallel subtests, which -test.parallel
		// would throttle to the number of CPUs: the children mostly wait.
		r := &verdict{done: make(chan struct{})}
		verdicts[v.name] = r
		go func() {
			defer close(r.done)
			// A broken variant runs only the check that must catch it: the
			// whole TCK, Explore included, on ~70 children at once with the
			// race detector did not finish in time on a busy machine (a
			// spinning lock's histories), and the verdict is that check's.
			run := "^TestBrokenChild$"
			if v.catch != "" {
				run += "/^" + strings.ReplaceAll(regexp.QuoteMeta(v.catch), "/", "$/^") + "$"
			}
			cmd := exec.CommandContext(t.Context(), os.Args[0],
				"-test.run="+run, "-test.count=1", "-test.timeout=2m")
			cmd.Env = append(os.Environ(), brokenEnv+"="+v.name)
			r.out, r.err = cmd.CombinedOutput()
		}()
	}
	for _, v := range brokenVariants {
		t.Run(v.name, func(t *testing.T) {
			r := verdicts[v.name]
			<-r.done
			var exit *exec.ExitError
			if r.err != nil && !errors.As(r.err, &exit) {
				t.Fatalf("running the child: %v", r.err)
			}
			if v.catch == "" {
				if r.err != nil {
					t.Errorf("the TCK failed on the sound memory store (%v):\n%s", r.err, r.out)
				}
				return
			}
			if v.probe != nil {
				checkProbe(t, v)
			}
			if r.err == nil {
				t.Fatalf("the TCK passed on a store with the bug %q:\n%s", v.name, r.out)
			}
			want := regexp.MustCompile(`(?m)^\s*--- FAIL: TestBrokenChild/` + regexp.QuoteMeta(v.catch) + ` \(`)
			if !want.Match(r.out) {
				t.Errorf("the TCK failed on %q, but not in %s:\n%s", v.name, v.catch, r.out)
			}
		})
	}
}

// checkProbe runs v's probe on the sound store and on v: a variant that
// behaves like the sound store would prove nothing.
func checkProbe(t *testing.T, v brokenVariant) {
	t.Helper()
	factory := v.factory
	if factory == nil {
		factory = fromOptions
	}
	soundFactory := v.soundFactory
	if soundFactory == nil {
		soundFactory = fromOptions
	}
	sound, err := v.probe(t.Context(), func(s *driverStore) driver.Store { return s }, soundFactory)
	if err != nil {
		t.Fatalf("probe on the sound store: %v", err)
	}
	broken, err := v.probe(t.Context(), v.wrap, factory)
	if err != nil {
		t.Fatalf("probe on %q: %v", v.name, err)
	}
	if sound == broken {
		t.Errorf("the variant %q behaves as the sound store in its probe: %s", v.name, sound)
	}
	t.Logf("probe: sound store: %s; %s: %s", sound, v.name, broken)
}

// TestBrokenChild is the entry point of TestBroken's children; in a normal
// run it does nothing.
func TestBrokenChild(t *testing.T) {
	name := os.Getenv(brokenEnv)
	if name == "" {
		return
	}
	for _, v := range brokenVariants {
		if v.name != name {
			continue
		}
		suite := tck.Suite{
			NewHarness: func(ctx context.Context, t *testing.T) (tck.Harness, error) {
				h, err := newTCKHarness(ctx, t)
				return brokenHarness{h.(tckHarness), v.wrap}, err
			},
			Ranges: true, Slots: true, Locks: true,
			Factory:       fromOptions,
			Options:       map[string]string{"name": "tck-options"},
			NotPersistent: notPersistent,
		}
		if v.catch == "" {
			// Every variant runs at once, each with the race detector, on
			// a machine that may be busy already: the sound store gets
			// four times the TCK's times, so that only a bug fails it.
			suite.TimeScale = 4
		}
		if v.factory != nil {
			suite.Factory = v.factory
		}
		suite.MalformedOptions = v.malformed
		if v.suite != nil {
			v.suite(&suite)
		}
		tck.Run(t, suite)
		return
	}
	t.Fatalf("no broken variant %q", name)
}

type brokenHarness struct {
	tckHarness
	wrap func(*driverStore) driver.Store
}

func (h brokenHarness) NewStore(context.Context) (driver.Store, error) {
	return h.wrap(newDriver(h.name)), nil
}

// doubleLock lets TryLock of a held lock "succeed" with a lock nobody
// checks.
type doubleLock struct{ *driverStore }

type phantomLock struct{}

func (phantomLock) Unlock(context.Context) error { return nil }
func (phantomLock) Fence() int64                 { return 1 }
func (phantomLock) Lost() <-chan struct{}        { return nil }

func (s doubleLock) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	l, err := s.driverStore.Lock(ctx, name, owner, wait)
	if !wait && errors.Is(err, driver.ErrLocked) {
		return phantomLock{}, nil
	}
	return l, err
}

// staleUnlock's second Unlock removes whoever holds the lock by then, as
// an unlock that deletes "the" holder node rather than its own would.
type staleUnlock struct{ *driverStore }

type staleLock struct {
	driver.Lock
	st       *state
	name     string
	mu       sync.Mutex
	unlocked bool
}

func (l *staleLock) Unlock(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.unlocked {
		l.unlocked = true
		return l.Lock.Unlock(ctx)
	}
	l.st.mu.Lock()
	defer l.st.mu.Unlock()
	if q := l.st.locks[l.name]; q != nil && len(q.entries) > 0 {
		l.st.dequeue(q.entries[0])
	}
	return nil
}

func (s staleUnlock) Lock(ctx context.Context, name, owner string, wait bool) (driver.Lock, error) {
	l, err := s.driverStore.Lock(ctx, name, owner, wait)
	if err != nil {
		return nil, err
	}
	return &staleLock{Lock: l, st: s.st, name: name}, nil
}
