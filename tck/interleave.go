package tck

import (
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cosid-go/store"
)

// The Interleave checks put a second store's write between the first
// store's read and its write, on every read-modify-write the contract
// names (Next, Acquire, Renew, Release, Seal, SealNamespace, Seed, Purge),
// without a hook into any driver: each round starts the two calls at one
// instant, from a barrier, on two stores, and checks what the contract
// says of every order they may take. A round whose calls overlapped in
// time is one where the interleaving could happen; each check logs how
// many rounds overlapped and how often each order won, and fails if no
// round overlapped (the race was never run).

// Each check runs at least interleaveRounds rounds, and more, up to
// interleaveMaxRounds or its time budget, until interleaveMet of them
// overlapped: an in-process driver's calls take microseconds, and few
// rounds of them meet.
const (
	interleaveRounds    = 25
	interleaveMet       = 5
	interleaveMaxRounds = 20000
)

func interleaveChecks() []check {
	return []check{
		{"NextSeal", needRanges, checkInterleaveNextSeal},
		{"NextInit", needRanges, checkInterleaveNextInit},
		{"AcquireAcquire", needSlots, checkInterleaveAcquireAcquire},
		{"RenewTakeover", needSlots, checkInterleaveRenewTakeover},
		{"ReleaseAcquire", needSlots, checkInterleaveReleaseAcquire},
		{"ReleaseRenew", needSlots, checkInterleaveReleaseRenew},
		{"ReleaseTakeover", needSlots, checkInterleaveReleaseTakeover},
		{"SealNamespace", needSlots, checkInterleaveSealNamespace},
		{"SealRace", needSlots, checkSealRace},
		{"SealRaceUncreated", needSlots, checkSealRaceUncreated},
		{"SeedAcquire", needSlots, checkInterleaveSeedAcquire},
		{"SeedRenew", needSlots, checkInterleaveSeedRenew},
		{"PurgeAcquire", needSlots, checkInterleavePurgeAcquire},
		{"PurgeLock", needLocks, checkInterleavePurgeLock},
	}
}

// together runs f and g at once, each in a goroutine released by one
// barrier, and reports whether their calls overlapped in time.
func together(f, g func()) bool {
	var fs, fe, gs, ge time.Time
	start := make(chan struct{})
	var wg sync.WaitGroup
	// A channel close wakes the two goroutines one after the other; on a
	// loaded machine the first would often finish an in-process call
	// before the second ran. Each waits until the other is running too.
	var running atomic.Int32
	both := func() {
		<-start
		running.Add(1)
		for running.Load() < 2 {
			runtime.Gosched()
		}
	}
	wg.Go(func() { both(); fs = time.Now(); f(); fe = time.Now() })
	wg.Go(func() { both(); gs = time.Now(); g(); ge = time.Now() })
	close(start)
	wg.Wait()
	return fs.Before(ge) && gs.Before(fe)
}

// interleave runs rounds (see interleaveRounds); each calls at once, with
// the two calls it races, and returns which order won. It logs the count
// of rounds whose calls overlapped and of each order, and fails if no
// round overlapped.
func (e *env) interleave(round func(i int, at func(f, g func())) (order string)) {
	e.t.Helper()
	overlapped, run := 0, 0
	orders := map[string]int{}
	// Past the budget, rounds go on (to three times it) only while none
	// overlapped: a loaded machine may run the first rounds one call at a time.
	budget := time.Now().Add(e.scaled(15 * time.Second))
	last := time.Now().Add(e.scaled(45 * time.Second))
	more := func(i int) bool {
		if i >= interleaveMaxRounds || overlapped >= interleaveMet {
			return false
		}
		return time.Now().Before(budget) || overlapped == 0 && time.Now().Before(last)
	}
	for i := 0; i < interleaveRounds || more(i); i++ {
		met := false
		order := round(i, func(f, g func()) { met = together(f, g) })
		run++
		if met {
			overlapped++
		}
		orders[order]++
		if e.t.Failed() {
			break
		}
	}
	var counts []string
	for _, o := range slices.Sorted(maps.Keys(orders)) {
		counts = append(counts, fmt.Sprintf("%s: %d", o, orders[o]))
	}
	e.t.Logf("interleavings reached: %d of %d rounds ran both calls at once (%s)", overlapped, run, strings.Join(counts, ", "))
	switch {
	case overlapped > 0 || e.t.Failed():
	case runtime.GOMAXPROCS(0) < 2:
		// One P runs an in-process driver's calls one after the other
		// (they never block), so no round can overlap: said, not failed.
		e.t.Logf("no round of %d ran both calls at once: GOMAXPROCS is 1, the interleaving is reached only with 2 or more", run)
	default:
		e.t.Errorf("no round of %d ran both calls at once: the interleaving was never reached", run)
	}
}

// checkInterleaveNextSeal: a Next races a Seal of its key. The Next either
// comes first, its range ending at or below the value the Seal returns,
// or gives ErrSealed; the key ends sealed at that value.
func checkInterleaveNextSeal(e *env) {
	a, b := e.open(), e.open()
	e.interleave(func(i int, at func(f, g func())) string {
		key := fmt.Sprintf("interleave/seal/%d", i)
		e.next(a, key, 10)
		var r store.Range
		var final int64
		var nerr, serr error
		at(func() { r, nerr = a.Ranges().Next(e.ctx, key, 10) }, func() { final, serr = b.Ranges().Seal(e.ctx, key) })
		e.fatalIf(serr, "Seal(%q) racing a Next", key)
		order := "seal first"
		switch {
		case errors.Is(nerr, store.ErrSealed):
		case nerr != nil:
			e.t.Fatalf("Next(%q) racing a Seal: %v", key, nerr)
		default:
			order = "next first"
			if r.End > final {
				e.t.Errorf("Next(%q) racing a Seal gave %v, past the final value %d the Seal returned: its write landed after the seal", key, r, final)
			}
		}
		e.wantCurrent(a, key, final, true)
		return order
	})
}

// checkInterleaveNextInit: a Next creating a key races an Init of it at
// 100. Either the Init comes first (the Next starts at 100) or the Next
// does (the Init gives ErrConfigMismatch); never both from nothing.
func checkInterleaveNextInit(e *env) {
	a, b := e.open(), e.open()
	e.interleave(func(i int, at func(f, g func())) string {
		key := fmt.Sprintf("interleave/init/%d", i)
		var r store.Range
		var nerr, ierr error
		at(func() { r, nerr = a.Ranges().Next(e.ctx, key, 10) }, func() { ierr = b.Ranges().Init(e.ctx, key, 100) })
		e.fatalIf(nerr, "Next(%q) racing an Init", key)
		switch {
		case ierr == nil:
			e.wantRange(r, 100, 110, fmt.Sprintf("Next(%q) after an Init at 100 that succeeded", key))
			e.wantCurrent(b, key, 110, false)
			return "init first"
		case errors.Is(ierr, store.ErrConfigMismatch):
			e.wantRange(r, 0, 10, fmt.Sprintf("Next(%q) before an Init that found the key", key))
			e.wantCurrent(b, key, 10, false)
			return "next first"
		default:
			e.t.Fatalf("Init(%q, 100) racing a Next: %v", key, ierr)
			return ""
		}
	})
}

// checkInterleaveAcquireAcquire: two stores acquire the one slot of a
// namespace at once: one gets it, the other ErrExhausted.
func checkInterleaveAcquireAcquire(e *env) {
	a, b := e.open(), e.open()
	e.interleave(func(i int, at func(f, g func())) string {
		ns := e.namespace(fmt.Sprintf("il-acquire-%d", i), 1)
		var la, lb store.Lease
		var aerr, berr error
		at(func() { la, aerr = a.Slots().Acquire(e.ctx, ns, "a", e.long()) },
			func() { lb, berr = b.Slots().Acquire(e.ctx, ns, "b", e.long()) })
		switch {
		case aerr == nil && berr == nil:
			e.t.Errorf("both stores got the one slot of %s: a fence %d, b fence %d", ns.Name, la.Fence, lb.Fence)
			return "both"
		case aerr == nil && errors.Is(berr, store.ErrExhausted):
			return "a first"
		case berr == nil && errors.Is(aerr, store.ErrExhausted):
			return "b first"
		default:
			e.t.Fatalf("two Acquires of the one slot of %s: %v, %v; want one lease and ErrExhausted", ns.Name, aerr, berr)
			return ""
		}
	})
}

// checkInterleaveRenewTakeover: at the expiry of a term, its holder's
// Renew races another owner's Acquire of the slot. The Renew continues
// the term (the Acquire then finds no free slot, or takes it over once
// the renewed term expired too, above its ceiling) or the Acquire takes
// it over (the Renew then gives ErrLeaseLost).
func checkInterleaveRenewTakeover(e *env) {
	a, b := e.open(), e.open()
	e.interleave(func(i int, at func(f, g func())) string {
		ns := e.namespace(fmt.Sprintf("il-takeover-%d", i), 1)
		l := e.acquire(a, ns, "a", store.AcquireOptions{TTL: e.ttl})
		e.waitUntil(l.ExpiresAt + 1)
		var renewed, taken store.Lease
		var rerr, aerr error
		at(func() { renewed, rerr = a.Slots().Renew(e.ctx, l) },
			func() { taken, aerr = b.Slots().Acquire(e.ctx, ns, "b", e.long()) })
		switch {
		case rerr == nil && aerr == nil:
			// Both may succeed only in that order, the Acquire after the
			// renewed term expired too (a slow Acquire, on a loaded
			// machine): it then starts above the renewed ceiling.
			if taken.Fence <= l.Fence || taken.Floor < renewed.Ceiling {
				e.t.Errorf("at the expiry of %s's term (fence %d) both its Renew (expiring %d, ceiling %d) and b's Acquire "+
					"(fence %d, floor %d) succeeded: one wrote over the other", ns.Name, l.Fence, renewed.ExpiresAt, renewed.Ceiling, taken.Fence, taken.Floor)
			}
			return "renew first, takeover after its expiry"
		case rerr == nil && errors.Is(aerr, store.ErrExhausted):
			return "renew first"
		case aerr == nil && errors.Is(rerr, store.ErrLeaseLost):
			if taken.Fence <= l.Fence || taken.Floor < l.Ceiling {
				e.t.Errorf("b took over %s's expired term (fence %d, ceiling %d) at fence %d, floor %d", ns.Name, l.Fence, l.Ceiling, taken.Fence, taken.Floor)
			}
			return "takeover first"
		default:
			e.t.Fatalf("Renew racing a takeover in %s: %v; Acquire: %v", ns.Name, rerr, aerr)
			return ""
		}
	})
}

// checkInterleaveReleaseAcquire: a holder's Release (used known) races
// another owner's Acquire of the namespace's one slot. The Release always
// succeeds (the term is live); the Acquire finds no free slot, or comes
// after the Release and starts above the used timestamp.
func checkInterleaveReleaseAcquire(e *env) {
	a, b := e.open(), e.open()
	e.interleave(func(i int, at func(f, g func())) string {
		ns := e.namespace(fmt.Sprintf("il-release-%d", i), 1)
		l := e.acquire(a, ns, "a", e.long())
		used := l.Floor + 5
		var taken store.Lease
		var rerr, aerr error
		at(func() { rerr = a.Slots().ReleaseUsed(e.ctx, l, used) },
			func() { taken, aerr = b.Slots().Acquire(e.ctx, ns, "b", e.long()) })
		if rerr != nil {
			e.t.Errorf("Release of a live term (fence %d) racing an Acquire: %v (the Acquire: %+v, %v)", l.Fence, rerr, taken, aerr)
		}
		switch {
		case aerr == nil:
			if taken.Fence != l.Fence+1 || taken.Floor < used+1 {
				e.t.Errorf("Acquire after a Release (fence %d, used %d) got fence %d, floor %d; want fence %d, floor at least %d",
					l.Fence, used, taken.Fence, taken.Floor, l.Fence+1, used+1)
			}
			return "release first"
		case errors.Is(aerr, store.ErrExhausted):
			return "acquire first"
		default:
			e.t.Fatalf("Acquire racing a Release in %s: %v", ns.Name, aerr)
			return ""
		}
	})
}

// checkInterleaveReleaseRenew: a term's Release races its Renew from
// another store. The Release succeeds; the Renew comes first or gives
// ErrLeaseLost; either way the slot ends released (no Renew writes over
// the Release).
func checkInterleaveReleaseRenew(e *env) {
	a, b := e.open(), e.open()
	e.interleave(func(i int, at func(f, g func())) string {
		ns := e.namespace(fmt.Sprintf("il-release-renew-%d", i), 1)
		l := e.acquire(a, ns, "a", e.long())
		var relErr, renErr error
		at(func() { relErr = a.Slots().ReleaseUsed(e.ctx, l, l.Floor) }, func() { _, renErr = b.Slots().Renew(e.ctx, l) })
		e.fatalIf(relErr, "Release racing a Renew")
		order := "renew first"
		if renErr != nil {
			order = "release first"
			e.wantIs(renErr, store.ErrLeaseLost, "Renew racing a Release, after it")
		}
		if in, ok := e.slotInfo(b, ns.Name, l.Slot); !ok || in.Owner != "" {
			e.t.Errorf("after a Release and a Renew (%s) slot %d of %s lists owner %q fence %d: the Renew wrote over the Release",
				order, l.Slot, ns.Name, in.Owner, in.Fence)
		}
		return order
	})
}

// checkInterleaveSealNamespace: one store renews a term and then acquires
// another while a second seals the namespace and at once lists its
// slots, as a migration does. A Renew or Acquire that succeeded shows in
// that listing (its fence, and a ceiling at least its own); any other
// gives ErrSealed.
func checkInterleaveSealNamespace(e *env) {
	a, b := e.open(), e.open()
	e.interleave(func(i int, at func(f, g func())) string {
		ns := e.namespace(fmt.Sprintf("il-seal-%d", i), 2)
		l := e.acquire(a, ns, "a", e.long())
		var renewed, acquired store.Lease
		var rerr, aerr, serr, lerr error
		var infos []store.SlotInfo
		at(func() {
			renewed, rerr = a.Slots().Renew(e.ctx, l)
			acquired, aerr = a.Slots().Acquire(e.ctx, ns, "x", e.long())
		}, func() {
			if serr = b.Slots().Seal(e.ctx, ns.Name); serr == nil {
				infos, lerr = b.Slots().List(e.ctx, ns.Name)
			}
		})
		e.fatalIf(serr, "SealNamespace(%s)", ns.Name)
		e.fatalIf(lerr, "Slots(%s) after its seal", ns.Name)
		listed := func(slot int) (store.SlotInfo, bool) {
			for _, in := range infos {
				if in.Slot == slot {
					return in, true
				}
			}
			return store.SlotInfo{}, false
		}
		var sealed []string
		if rerr == nil {
			if in, ok := listed(l.Slot); !ok || in.Fence != l.Fence || in.Ceiling < renewed.Ceiling {
				e.t.Errorf("a Renew (ceiling %d) succeeded that the listing right after the seal does not show (%+v): it landed after the seal",
					renewed.Ceiling, in)
			}
		} else {
			e.wantIs(rerr, store.ErrSealed, "Renew racing a seal")
			sealed = append(sealed, "renew sealed")
		}
		if aerr == nil {
			if in, ok := listed(acquired.Slot); !ok || in.Fence < acquired.Fence {
				e.t.Errorf("an Acquire (slot %d, fence %d) succeeded that the listing right after the seal does not show (%+v): it landed after the seal",
					acquired.Slot, acquired.Fence, in)
			}
		} else {
			e.wantIs(aerr, store.ErrSealed, "Acquire racing a seal")
			sealed = append(sealed, "acquire sealed")
		}
		if len(sealed) == 0 {
			return "both before the seal"
		}
		return strings.Join(sealed, " and ")
	})
}
