// Package tck is the conformance kit of package store: the checks every
// driver must pass, run from the driver's own tests with one call.
//
// # Using it
//
// A driver author writes a Harness, which opens stores on one storage (a
// ZooKeeper chroot, a named in-memory state, ...), and gives Run a Suite: a
// function making a fresh, isolated harness per check, the capabilities the
// driver declares, its factory, and a time scale for slow backends.
//
//	// In the driver's own package (package mydriver): open is its
//	// unexported factory, the one it registers.
//	type harness struct{ root string }
//
//	func (h harness) NewStore(ctx context.Context) (driver.Store, error) {
//		return open(map[string]string{"root": h.root})
//	}
//
//	// Close deletes what the checks left under the root; the TCK has
//	// closed the stores already.
//	func (h harness) Close() error { return deleteTree(h.root) }
//
//	func TestTCK(t *testing.T) {
//		var n atomic.Int64
//		tck.Run(t, tck.Suite{
//			NewHarness: func(ctx context.Context, t *testing.T) (tck.Harness, error) {
//				return harness{root: fmt.Sprintf("/tck-%d-%d", os.Getpid(), n.Add(1))}, nil
//			},
//			Ranges: true, Slots: true, Locks: true,
//			Factory:   open,
//			TimeScale: 10,
//		})
//	}
//
// A persistent driver's harness also has a Restart method (see Restarter),
// e.g. closing and reopening the database file.
//
// Every store a harness opens must see the same data, as separate processes
// sharing a server would; two harnesses must never see each other's data,
// because checks run in parallel. The memory driver's tck_test.go is a
// complete example.
//
// # What it checks
//
// Each check is a subtest named group/check, so
// `go test -run 'TestTCK/Slots/Reclaim$'` runs one of them:
//
//   - Capabilities: the declared capabilities are implemented; others give
//     ErrUnsupported; a store has at least one; Ping answers (or gives
//     ErrUnsupported for a driver that is not a driver.Pinger).
//   - Ranges: first range, never twice under concurrency from several stores,
//     Current, Seal, Init, overflow, keys with '/', argument validation,
//     Current creating nothing, sealed keys listed.
//   - Slots: namespace settings, argument validation, slot choice order,
//     exhaustion, concurrent acquires, renewals, release floors, expiry
//     takeover, fencing, reclaim, re-acquire of a live term, listings,
//     the most recent slot first, expired slots found by the search, no
//     takeover before expiry, late releases, floors above the ceiling a
//     short ttl would give, renewals on a clock stepped back.
//   - Locks: exclusion with growing fences, FIFO order, TryLock, cancelled
//     waiters, double unlock, loss on Close, no reentrance, listings, and
//     the races at a handover, each driven over many rounds: TryLock as the
//     lock passes to a waiter, a cancel as it is granted, a closed holder's
//     loss before the next grant; a middle waiter leaving, arrival order
//     unlike sort order, Unlock of a lost hold.
//   - Slots/Seed and Purge check the optional driver.SlotSeeder and
//     driver.Purger, when the store implements them.
//   - History: a slot's fence and next floor only grow: a seed never lowers
//     them, a seeded next floor binds the taker of an expired term, and a
//     purge does not start slot fences again.
//   - Restart: with every store closed, the harness restarts the storage
//     (Restarter); ranges, slot histories (fences, floors, live terms, owner
//     indexes) and lock fences must have survived. A driver that keeps
//     nothing across a restart sets Suite.NotPersistent, and the check
//     skips with that reason; any other harness must implement Restarter.
//   - Operator: what operators do under running stores, each through an
//     optional harness capability: a snapshot restored (Snapshotter: no
//     value, fence or term's timestamps again; ErrCorrupt or above),
//     a record deleted by hand (HandDeleter: a key not started again, a
//     slot not started again from zero under a live term; NamespaceDeleter,
//     LockDeleter: a namespace's or a held lock's record), a record
//     written wrong (Corrupter, SlotCorrupter: ErrCorrupt, never a guess),
//     a session ended (SessionEnder: the holder learns Lost). A harness that cannot
//     act so says why (an error wrapping store.ErrUnsupported) and the
//     check skips with it.
//   - Interleave: a second store's write (Seal, Init, Acquire, Renew,
//     Release, SealNamespace, Seed, Purge) started at the same instant as
//     a read-modify-write of the first, in rounds, with what the contract
//     says of each order checked; each check logs how many rounds ran the
//     two calls at once and fails if none did.
//   - Options: an unknown option is rejected, naming it, alone and beside
//     valid options; a known key in another case or with a space is
//     unknown; a malformed value is rejected, naming key and value; a
//     required option left out is rejected, naming it (needs
//     Suite.Factory, Suite.Options, Suite.MalformedOptions (MalformedValues),
//     Suite.RequiredOptions).
//   - Close: every operation after Close gives ErrClosed; lock waits end.
//   - Errors: errors are *store.Error wrapping the sentinel; with Locks,
//     a lock wait ended by its deadline satisfies
//     errors.Is(err, context.DeadlineExceeded).
//   - Explore: random histories (Histories, their number set by
//     Suite.Histories) drive the driver and a model of the contract with
//     the same operations on small pools of keys, namespaces, owners and
//     lock names, edge values included, with Seal, Init, Seed, Purge and
//     Close in the mix, and compare every answer: values, error kinds,
//     listings in order, Waiters, fences. A failure is shrunk to a short
//     history, printed as a script with the contract sentence broken and
//     the seed that replays it (RAPID_SEED=n). Linearizable runs calls
//     from several stores at once and checks that some order of them,
//     each at an instant within its call, explains every answer.
//
// A capability the suite does not declare makes its checks skip, with the
// reason; so does a check needing an optional harness capability the
// harness lacks (ClockStepper: the store's clock stepped back). A harness
// with ClockSetter lets the histories move time themselves and check lease
// times and expiry exactly; without it they keep to what needs no clock. The section
// Contracts and checks maps every contract sentence to its checks, and a
// check that fails logs, after its own messages, the map's rows it holds:
// each rule's ID, its short form and the driver method stating it in full.
//
// # Time
//
// The checks use real time: lease ttls of 100ms, tolerances of 50ms, and
// deadlines of 2s for what should happen promptly, each multiplied by
// Suite.TimeScale. They never sleep in place of synchronisation: they poll
// the store (Waiters, Acquire) or wait until an expiry time a lease
// reported has passed. Lease times are compared with the local clock with a
// slack of 250ms times TimeScale, for a server whose clock differs a little;
// whether a term had expired is judged by the store's own times.
package tck

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// Harness opens stores on one storage.
type Harness interface {
	// NewStore opens a store on this harness's storage; all stores of one
	// harness share storage (they act as separate processes).
	NewStore(ctx context.Context) (driver.Store, error)
	// Close releases the storage (stores are closed by the TCK itself).
	Close() error
}

// Suite describes the driver under test.
type Suite struct {
	// NewHarness returns a fresh, isolated storage; it is called once per
	// check.
	NewHarness func(ctx context.Context, t *testing.T) (Harness, error)
	// Ranges, Slots and Locks are the capabilities the driver declares; the
	// checks of a missing one skip.
	Ranges, Slots, Locks bool
	// Factory, if set, is checked to reject unknown options.
	Factory driver.Factory
	// Options, if set, are valid options of Factory, which must open a
	// store with them (it is closed at once); an unknown key added to them
	// must still be rejected.
	Options map[string]string
	// MalformedOptions, if set, maps option keys to values the factory
	// must refuse (a duration that does not parse, a negative count); each
	// is tried alone, added to Options.
	MalformedOptions map[string]string
	// MalformedValues, if set, maps option keys to more values the
	// factory must refuse, each tried as MalformedOptions are: the
	// malformed forms of one option are many (a duration below its
	// minimum, a path with a trailing '/', ...).
	MalformedValues map[string][]string
	// RequiredOptions, if set, are keys of Options the factory cannot open
	// without (a file path): each is removed from Options in turn, and the
	// factory must refuse, wrapping ErrInvalidArgument and naming the key.
	RequiredOptions []string
	// MissingOptions, if set, returns valid options of Factory that name a
	// store that does not exist, fresh at each call (a new file, a name
	// nobody used): opened with create=false they must be refused with
	// ErrNotFound, creating nothing (driver.OptionCreate).
	MissingOptions func(t *testing.T) map[string]string
	// TimeScale multiplies every ttl and wait the TCK uses (default 1).
	TimeScale float64
	// NotPersistent, when set, says why the driver keeps nothing across a
	// restart of its storage (the memory driver: its state lives in the
	// process); the Restart check then skips with that reason. Any other
	// driver's harness must implement Restarter.
	NotPersistent string
	// KnownHoles maps checks (group/check, as in -run) the driver is known
	// to fail to why, naming the issue that tracks the fix: each skips
	// with that reason, so a suite stays green while the hole is open and
	// says so in every run. It is never a pass: remove the entry with the
	// fix.
	KnownHoles map[string]string
	// PurgeKeepsSlotFloor says the driver's Purge keeps a slot timestamp
	// floor (see driver.Purger): a slot first used after a purge starts
	// there, not at 0.
	PurgeKeepsSlotFloor bool
	// Histories is how many random histories Explore/Histories runs
	// (default 50; at most -rapid.checks, whose default is 100). A failing
	// history is shrunk and printed as a script with its seed; RAPID_SEED
	// (or -rapid.seed) replays it.
	Histories int
}

// Run runs every check of the kit against the driver s describes.
func Run(t *testing.T, s Suite) {
	t.Helper()
	if s.NewHarness == nil {
		t.Fatal("tck: Suite.NewHarness is nil")
	}
	if s.TimeScale <= 0 || math.IsNaN(s.TimeScale) || math.IsInf(s.TimeScale, 0) {
		s.TimeScale = 1
	}
	quietRapid()
	for _, g := range groups() {
		t.Run(g.name, func(t *testing.T) {
			for _, c := range g.checks {
				t.Run(c.name, func(t *testing.T) {
					if why := s.missing(c.needs); why != "" {
						t.Skip(why)
					}
					if why, ok := s.KnownHoles[g.name+"/"+c.name]; ok {
						t.Skip("a known hole of the driver (Suite.KnownHoles): " + why)
					}
					// A failure names the rules the check holds, from the
					// contract map: here, once, not in each message.
					t.Cleanup(func() {
						if t.Failed() {
							t.Log(rulesCited(g.name + "/" + c.name))
						}
					})
					// Each check has its own storage, so all run at once.
					t.Parallel()
					c.run(newEnv(t, s))
				})
			}
		})
	}
}

// group is a group of checks: each check runs as the subtest
// group/check, and tck_contracts.go names it at the sentences it checks.
type group struct {
	name   string
	checks []check
}

// groups returns every check of the kit, by group, in the order they run.
func groups() []group {
	return []group{
		{"Capabilities", generalChecks()},
		{"Ranges", rangeChecks()},
		{"Slots", slotChecks()},
		{"Locks", lockChecks()},
		{"Purge", purgeChecks()},
		{"History", historyChecks()},
		{"Restart", restartChecks()},
		{"Operator", operatorChecks()},
		{"Interleave", interleaveChecks()},
		{"Options", optionChecks()},
		{"Close", closeChecks()},
		{"Errors", errorChecks()},
		{"Explore", exploreChecks()},
	}
}

// capability is what a check needs of the driver.
type capability int

const (
	needNothing capability = iota
	needRanges
	needSlots
	needLocks
	needFactory
	needOptions // Factory and Options
)

// missing returns why a check needing c cannot run, or "".
func (s Suite) missing(c capability) string {
	switch {
	case c == needRanges && !s.Ranges:
		return "the driver does not declare Ranges (Suite.Ranges is false)"
	case c == needSlots && !s.Slots:
		return "the driver does not declare Slots (Suite.Slots is false)"
	case c == needLocks && !s.Locks:
		return "the driver does not declare Locks (Suite.Locks is false)"
	case c == needFactory && s.Factory == nil:
		return "no Suite.Factory to check options with"
	case c == needOptions && (s.Factory == nil || s.Options == nil):
		return "no Suite.Factory and Suite.Options (valid options) to check options with"
	}
	return ""
}

type check struct {
	name  string
	needs capability
	run   func(e *env)
}

// env is one check's storage and helpers.
type env struct {
	t     *testing.T
	suite Suite
	h     Harness
	ctx   context.Context // ends when the check does
	wg    sync.WaitGroup  // goroutines the check started

	// Scaled times.
	ttl      time.Duration // a short lease ttl, for checks that wait for expiry
	longTTL  time.Duration // a ttl no check outlives
	tol      time.Duration // namespace tolerance
	short    time.Duration // a wait that is meant to time out
	prompt   time.Duration // the longest "at once" or "soon" may take
	slack    int64         // ms: local clock vs store clock
	poll     time.Duration // between polls of the store
	lockWait time.Duration // bound on waits for locks that should come
}

func newEnv(t *testing.T, s Suite) *env {
	t.Helper()
	e := &env{t: t, suite: s, ctx: t.Context()}
	e.ttl = min(e.scaled(100*time.Millisecond), store.MaxTTL)
	e.longTTL = min(e.scaled(time.Minute), store.MaxTTL)
	e.tol = min(e.scaled(50*time.Millisecond), store.MaxTolerance)
	e.short = e.scaled(100 * time.Millisecond)
	e.prompt = e.scaled(2 * time.Second)
	e.slack = e.scaled(250 * time.Millisecond).Milliseconds()
	e.poll = e.scaled(2 * time.Millisecond)
	e.lockWait = e.scaled(10 * time.Second)

	h, err := s.NewHarness(e.ctx, t)
	if err != nil {
		t.Fatalf("NewHarness: %v", err)
	}
	if h == nil {
		t.Fatal("NewHarness returned a nil Harness")
	}
	e.h = h
	// Cleanups run last-in first-out: stores close first (ending the lock
	// waits of goroutines), then the goroutines are awaited, then the
	// storage goes.
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("Harness.Close: %v", err)
		}
	})
	t.Cleanup(e.wg.Wait)
	return e
}

// scaled multiplies d by the time scale, in whole milliseconds (leases
// accept nothing finer).
func (e *env) scaled(d time.Duration) time.Duration {
	s := time.Duration(float64(d) * e.suite.TimeScale).Round(time.Millisecond)
	return max(s, time.Millisecond)
}

// open opens a store on the check's storage, closed when the check ends.
func (e *env) open(opts ...store.Option) *store.Store {
	e.t.Helper()
	d, err := e.h.NewStore(e.ctx)
	if err != nil {
		e.t.Fatalf("Harness.NewStore: %v", err)
	}
	if d == nil {
		e.t.Fatal("Harness.NewStore returned a nil store")
	}
	// No maximum step: the kit checks the driver's own bounds (Overflow).
	opts = append([]store.Option{store.WithTimeout(e.scaled(5 * time.Second)), store.WithMaxStep(math.MaxInt64)}, opts...)
	st, err := store.OpenDriver(d, opts...)
	if err != nil {
		_ = d.Close() // the failure to report is OpenDriver's
		e.t.Fatalf("store.OpenDriver: %v", err)
	}
	e.t.Cleanup(func() {
		if err := st.Close(); err != nil {
			e.t.Errorf("closing a store: %v", err)
		}
	})
	return st
}

// goroutine runs f in a goroutine the check waits for before it ends.
func (e *env) goroutine(f func()) { e.wg.Go(f) }

// errorf reports a failure from a goroutine, unless the check is already
// over (its context ended), when failures are the teardown's echo.
func (e *env) errorf(format string, args ...any) {
	if e.ctx.Err() == nil {
		e.t.Errorf(format, args...)
	}
}

// eventually polls cond until it holds or d has passed.
func (e *env) eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-e.ctx.Done():
			return false
		case <-time.After(e.poll):
		}
	}
}

// waitUntil sleeps until the local clock reaches ms (milliseconds since the
// epoch): waiting for a known instant, not for another goroutine.
func (e *env) waitUntil(ms int64) {
	for {
		d := time.Until(time.UnixMilli(ms))
		if d <= 0 {
			return
		}
		select {
		case <-e.ctx.Done():
			return
		case <-time.After(d):
		}
	}
}

// timeout returns a context that ends after d.
func (e *env) timeout(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(e.ctx, d)
	e.t.Cleanup(cancel)
	return ctx
}

func nowMillis() int64 { return time.Now().UnixMilli() }

// wantIs reports a failure unless errors.Is(err, target).
func (e *env) wantIs(err, target error, format string, args ...any) bool {
	e.t.Helper()
	if errors.Is(err, target) {
		return true
	}
	e.t.Errorf("%s: got error %v, want %v", fmt.Sprintf(format, args...), err, target)
	return false
}

// fatalIf stops the check on an unexpected error.
func (e *env) fatalIf(err error, format string, args ...any) {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("%s: %v", fmt.Sprintf(format, args...), err)
	}
}

// badNames are single segments every driver must refuse as a namespace,
// owner or lock name.
func badNames() []string {
	return []string{
		"", "a/b", "/a", "a/", ".", "..", "a\x00b", "\x01", "a\x1f", "\x7f", "\u0080", "\u009f",
		"\ue000", "\uf8ff", "\ufff0", "\uffff", "\xed\xa0\x80", "\xff", strings.Repeat("n", store.MaxKeyLen+1),
		// Names that hide: format characters (bidi, zero-width), white space only.
		"\u202eab", "a\ufeff", "a\u200bb", "\u00ad", "\u2066a", " ", "\u00a0", "\u3000 ",
	}
}

// quoteShort quotes s for a message, shortening long strings.
func quoteShort(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%q... (%d bytes)", s[:20], len(s))
	}
	return strconv.Quote(s)
}

// wantEmpty checks that a listing is empty, and not nil: listings return
// empty slices when there is nothing to list.
func (e *env) wantEmpty(what string, list any) {
	e.t.Helper()
	v := reflect.ValueOf(list)
	if v.Kind() != reflect.Slice || v.IsNil() || v.Len() != 0 {
		e.t.Errorf("%s = %#v, want an empty, non-nil slice", what, list)
	}
}
