package tck

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

func rangeChecks() []check {
	return []check{
		{"FirstRange", needRanges, checkFirstRange},
		{"NeverTwice", needRanges, checkNeverTwice},
		{"Current", needRanges, checkCurrent},
		{"Seal", needRanges, checkSeal},
		{"Init", needRanges, checkInit},
		{"Overflow", needRanges, checkOverflow},
		{"Keys", needRanges, checkKeys},
		{"InvalidArguments", needRanges, checkRangeArguments},
		{"CurrentCreatesNothing", needRanges, checkCurrentCreatesNothing},
		{"KeysSealed", needRanges, checkKeysSealed},
		{"ListPages", needRanges, checkListPages},
		{"Advance", needRanges, checkAdvance},
	}
}

// next calls Next and stops the check on an error.
func (e *env) next(st *store.Store, key string, step int64) store.Range {
	e.t.Helper()
	r, err := st.Ranges().Next(e.ctx, key, step)
	e.fatalIf(err, "Next(%q, %d)", key, step)
	return r
}

// wantCurrent checks what Current reports for key.
func (e *env) wantCurrent(st *store.Store, key string, next int64, sealed bool) {
	e.t.Helper()
	n, s, err := st.Ranges().Current(e.ctx, key)
	e.fatalIf(err, "Current(%q)", key)
	if n != next || s != sealed {
		e.t.Errorf("Current(%q) = (%d, sealed %v), want (%d, sealed %v)", key, n, s, next, sealed)
	}
}

func (e *env) wantRange(got store.Range, start, end int64, what string) {
	e.t.Helper()
	if want := (store.Range{Start: start, End: end}); got != want {
		e.t.Errorf("%s = [%d, %d), want [%d, %d)", what, got.Start, got.End, want.Start, want.End)
	}
}

// checkFirstRange: a new key starts at 0, and ranges follow each other.
func checkFirstRange(e *env) {
	st := e.open()
	e.wantRange(e.next(st, "first", 100), 0, 100, `first Next("first", 100)`)
	e.wantRange(e.next(st, "first", 7), 100, 107, `second Next("first", 7)`)
	e.wantRange(e.next(e.open(), "first", 1), 107, 108, `Next("first", 1) from another store`)
	e.wantRange(e.next(st, "other", 1), 0, 1, `first Next("other", 1)`)
}

// checkNeverTwice: many stores and goroutines take ranges of two keys at
// once with mixed steps; the ranges must tile [0, n) with no overlap (a
// value handed out twice) and no gap but where a write's outcome was
// unknown (see driver.RangeStore.Next), which a driver that reports events
// reports (UnknownOutcome): on a loaded machine a driver may cut a slow
// round trip short and try again, and the values of the cut write are a
// gap even though no call failed.
func checkNeverTwice(e *env) {
	const stores, workers, calls = 8, 8, 25
	steps := []int64{1, 2, 3, 5, 8, 13, 100, 1000}
	keys := []string{"never-twice", "never/twice/nested"}

	var mu sync.Mutex
	got := map[string][]store.Range{}
	unknown := map[string][]store.Range{} // values of writes whose outcome was unknown
	seen := store.WithObserver(store.Observer{Event: func(ev store.Event) {
		if ev.Kind == store.UnknownOutcome && ev.Count > 0 {
			mu.Lock()
			unknown[ev.Key] = append(unknown[ev.Key], store.Range{Start: ev.Value, End: ev.Value + ev.Count})
			mu.Unlock()
		}
	}})
	var wg sync.WaitGroup
	for s := range stores {
		st := e.open(seen)
		for w := range workers {
			wg.Go(func() {
				mine := map[string][]store.Range{}
				for i := range calls {
					key := keys[(w+i)%len(keys)]
					step := steps[(s*workers+w+i)%len(steps)]
					r, err := st.Ranges().Next(e.ctx, key, step)
					if err != nil {
						e.errorf("store %d worker %d: Next(%q, %d): %v", s, w, key, step, err)
						break
					}
					if r.Len() != step {
						e.errorf("Next(%q, %d) = [%d, %d), not %d values", key, step, r.Start, r.End, step)
					}
					mine[key] = append(mine[key], r)
				}
				mu.Lock()
				defer mu.Unlock()
				for k, rs := range mine {
					got[k] = append(got[k], rs...)
				}
			})
		}
	}
	wg.Wait()
	if e.t.Failed() {
		return
	}

	st := e.open()
	for _, key := range keys {
		rs := got[key]
		slices.SortFunc(rs, func(a, b store.Range) int { return cmpInt(a.Start, b.Start) })
		var next int64 // everything below was handed out
		problems := 0
		for _, r := range rs {
			switch {
			case r.Start < next:
				e.t.Errorf("%q: [%d, %d) overlaps a range handed out before (values up to %d): a value was returned twice",
					key, r.Start, r.End, next-1)
				problems++
			case r.Start > next && covered(unknown[key], next, r.Start):
				e.t.Logf("%q: gap [%d, %d), reported as writes whose outcome was unknown", key, next, r.Start)
			case r.Start > next:
				e.t.Errorf("%q: gap [%d, %d) although nothing failed and no write's outcome was reported unknown", key, next, r.Start)
				problems++
			}
			if problems >= 5 {
				e.t.Errorf("%q: more problems not shown", key)
				break
			}
			next = max(next, r.End)
		}
		if problems == 0 {
			e.wantCurrent(st, key, next, false)
		}
	}
}

// covered reports whether rs together cover [from, to).
func covered(rs []store.Range, from, to int64) bool {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(a, b store.Range) int { return cmpInt(a.Start, b.Start) })
	for _, r := range rs {
		if r.Start > from {
			break
		}
		from = max(from, r.End)
	}
	return from >= to
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// checkCurrent: Current reports without reserving, and sees other stores.
func checkCurrent(e *env) {
	st := e.open()
	e.wantCurrent(st, "current", 0, false)
	e.wantRange(e.next(st, "current", 5), 0, 5, `Next("current", 5)`)
	e.wantCurrent(st, "current", 5, false)
	e.wantCurrent(st, "current", 5, false)
	e.wantRange(e.next(st, "current", 3), 5, 8, `Next("current", 3) after two Currents`)
	e.wantCurrent(e.open(), "current", 8, false)
}

// checkSeal: Seal returns the final value, is idempotent, and stops Next in
// every store.
func checkSeal(e *env) {
	st, other := e.open(), e.open()
	e.next(st, "sealed", 10)
	for i := range 2 {
		n, err := st.Ranges().Seal(e.ctx, "sealed")
		e.fatalIf(err, "Seal #%d", i+1)
		if n != 10 {
			e.t.Errorf("Seal #%d returned %d, want 10 (the next value)", i+1, n)
		}
	}
	_, err := st.Ranges().Next(e.ctx, "sealed", 1)
	e.wantIs(err, store.ErrSealed, "Next on a sealed key")
	e.wantCurrent(st, "sealed", 10, true)

	// Another store (process) sees the seal.
	e.wantCurrent(other, "sealed", 10, true)
	_, err = other.Ranges().Next(e.ctx, "sealed", 5)
	e.wantIs(err, store.ErrSealed, "Next on a sealed key from another store")
	n, err := other.Ranges().Seal(e.ctx, "sealed")
	e.fatalIf(err, "Seal from another store")
	if n != 10 {
		e.t.Errorf("Seal from another store returned %d, want 10", n)
	}
	// Init at the sealed value is the same key; at another it is not.
	e.fatalIf(other.Ranges().Init(e.ctx, "sealed", 10), "Init at the sealed value")
	// So too from a store that never read the key: it learns the seal from
	// the storage, not from what it remembers.
	e.fatalIf(e.open().Ranges().Init(e.ctx, "sealed", 10), "Init at the sealed value from a store that never read the key")
	e.wantIs(other.Ranges().Init(e.ctx, "sealed", 11), store.ErrConfigMismatch, "Init at another value than the sealed one")
	e.wantCurrent(st, "sealed", 10, true)

	// A missing key is sealed at 0.
	n, err = st.Ranges().Seal(e.ctx, "sealed/empty")
	e.fatalIf(err, "Seal of a missing key")
	if n != 0 {
		e.t.Errorf("Seal of a missing key returned %d, want 0", n)
	}
	_, err = other.Ranges().Next(e.ctx, "sealed/empty", 1)
	e.wantIs(err, store.ErrSealed, "Next on a key sealed while missing")
	e.wantCurrent(other, "sealed/empty", 0, true)
}

// checkInit: Init creates a key at a value, agrees with the same value,
// refuses another, and Next continues from it.
func checkInit(e *env) {
	st, other := e.open(), e.open()
	r := st.Ranges()
	e.fatalIf(r.Init(e.ctx, "init", 500), "Init(500) of a missing key")
	e.fatalIf(r.Init(e.ctx, "init", 500), "Init(500) again")
	e.fatalIf(other.Ranges().Init(e.ctx, "init", 500), "Init(500) again from another store")
	e.wantIs(r.Init(e.ctx, "init", 501), store.ErrConfigMismatch, "Init(501) of a key at 500")
	e.wantIs(other.Ranges().Init(e.ctx, "init", 0), store.ErrConfigMismatch, "Init(0) of a key at 500")
	e.wantCurrent(st, "init", 500, false)
	e.wantRange(e.next(other, "init", 10), 500, 510, `Next("init", 10) after Init(500)`)
	e.wantIs(r.Init(e.ctx, "init", 500), store.ErrConfigMismatch, "Init(500) of a key moved on to 510")
	e.fatalIf(r.Init(e.ctx, "init", 510), "Init(510) of a key at 510")

	// Init at 0, and of a key that Next created.
	e.fatalIf(r.Init(e.ctx, "init/zero", 0), "Init(0)")
	e.wantRange(e.next(st, "init/zero", 4), 0, 4, `Next("init/zero", 4) after Init(0)`)
	e.next(st, "init/by-next", 3)
	e.wantIs(r.Init(e.ctx, "init/by-next", 0), store.ErrConfigMismatch, "Init(0) of a key Next moved to 3")
	e.wantCurrent(st, "init/by-next", 3, false)
}

// checkOverflow: a range past MaxInt64 gives ErrExhausted and changes
// nothing; a range ending exactly at MaxInt64 is fine.
func checkOverflow(e *env) {
	const top = math.MaxInt64
	st := e.open()
	r := st.Ranges()
	e.fatalIf(r.Init(e.ctx, "overflow", top-10), "Init(MaxInt64-10)")
	for _, step := range []int64{11, 12, top} {
		_, err := r.Next(e.ctx, "overflow", step)
		e.wantIs(err, store.ErrExhausted, "Next(%d) at MaxInt64-10", step)
		e.wantCurrent(st, "overflow", top-10, false)
	}
	e.wantRange(e.next(st, "overflow", 4), top-10, top-6, "Next(4) at MaxInt64-10")
	e.wantRange(e.next(st, "overflow", 6), top-6, top, "Next(6) at MaxInt64-6")
	_, err := r.Next(e.ctx, "overflow", 1)
	e.wantIs(err, store.ErrExhausted, "Next(1) at MaxInt64")
	e.wantCurrent(st, "overflow", top, false)

	// The whole int64 range at once, from a missing key.
	e.wantRange(e.next(st, "overflow/all", top), 0, top, "Next(MaxInt64) of a new key")
	_, err = r.Next(e.ctx, "overflow/all", 1)
	e.wantIs(err, store.ErrExhausted, "Next(1) after Next(MaxInt64)")
	e.wantCurrent(st, "overflow/all", top, false)
	e.fatalIf(r.Init(e.ctx, "overflow/top", top), "Init(MaxInt64)")
	_, err = r.Next(e.ctx, "overflow/top", 1)
	e.wantIs(err, store.ErrExhausted, "Next(1) of a key Init at MaxInt64")
	// An exhausted key still seals, at its next value (driver.RangeStore.Seal).
	next, err := r.Seal(e.ctx, "overflow/top")
	e.fatalIf(err, "Seal of a key at MaxInt64 (see driver.RangeStore.Seal: it marks the key sealed and returns its final next value)")
	if next != top {
		e.t.Errorf("Seal of a key at MaxInt64 returned %d (see driver.RangeStore.Seal: its final next value)", next)
	}
	e.wantCurrent(st, "overflow/top", top, true)
	e.fatalIf(r.Init(e.ctx, "overflow/top", top), "Init(MaxInt64) of the sealed key at MaxInt64 "+
		"(see driver.RangeStore.Init: at the same next value, sealed or not, it succeeds)")

	// The same bounds at a store's first Next of a key another store made:
	// a driver may take another path for a key it has not seen (an upsert
	// rather than an update of a row it knows).
	e.fatalIf(e.open().Ranges().Init(e.ctx, "overflow/other", top-10), "Init(MaxInt64-10) from another store")
	_, err = e.open().Ranges().Next(e.ctx, "overflow/other", 11)
	e.wantIs(err, store.ErrExhausted, "a store's first Next(11) of a key another store Init at MaxInt64-10")
	e.wantCurrent(st, "overflow/other", top-10, false)
	e.wantRange(e.next(e.open(), "overflow/other", 10), top-10, top,
		"a store's first Next(10) of a key another store Init at MaxInt64-10")

	// Sealed wins over a step past MaxInt64, also when another store
	// sealed the key after this one last used it (a driver that judges the
	// step on what it remembers must read before refusing).
	e.wantRange(e.next(st, "overflow/sealed", 5), 0, 5, "Next(5) of a new key")
	_, err = e.open().Ranges().Seal(e.ctx, "overflow/sealed")
	e.fatalIf(err, "Seal from a second store")
	_, err = r.Next(e.ctx, "overflow/sealed", top)
	e.wantIs(err, store.ErrSealed, "Next(MaxInt64) of a key another store sealed at 5 "+
		"(see driver.RangeStore.Next: a sealed key is ErrSealed, whatever the step)")
}

// goodKeys are valid keys at the edges of the rules: '/' nesting, a parent
// that is not a key itself, characters just outside the forbidden ranges,
// and the longest key.
func goodKeys() []string {
	return []string{
		"a", "a/b", "a/b/c", "x/y/z", "...", "a.b", "-_~", "a b", " a", "a\u00a0", "\uf900", "\uffef",
		"日本/語", strings.Repeat("k", store.MaxKeyLen),
		strings.Repeat("k/", store.MaxKeyLen/2-1) + "kk",
	}
}

// checkKeys: keys with '/' are independent keys, and Keys lists exactly
// the keys that exist, sorted.
func checkKeys(e *env) {
	st := e.open()
	keys, err := st.Ranges().Keys(e.ctx)
	e.fatalIf(err, "Keys of an empty store")
	e.wantEmpty("Keys of an empty store", keys)
	checkDriverKeys(e, st, nil)
	want := goodKeys()
	for i, k := range want {
		e.wantRange(e.next(st, k, int64(i+1)), 0, int64(i+1), "first Next of key "+quoteShort(k))
	}
	// Each key kept its own value: "a" is not advanced by "a/b".
	for i, k := range want {
		e.wantCurrent(st, k, int64(i+1), false)
	}
	slices.Sort(want)
	// The deepest key is 512 levels: a tree store (ZooKeeper) that walks
	// them stops a page at a work budget of its own and goes on in the
	// next (driver.RangeLister), each page within the usual call bound.
	other := e.open()
	keys, err = other.Ranges().Keys(e.ctx)
	e.fatalIf(err, "Keys")
	if diff := cmp.Diff(want, keys); diff != "" {
		e.t.Errorf("Keys from another store: -want +got:\n%s", diff)
	}
	checkDriverKeys(e, other, want)
}

// checkDriverKeys: a driver that lists in pages (driver.RangeLister) is
// listed through them by the portable layer, never through its own Keys,
// which other callers of the driver still use: it lists the same keys.
func checkDriverKeys(e *env, st *store.Store, want []string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, e.scaled(60*time.Second))
	defer cancel()
	err := st.Raw(func(d driver.Store) error {
		if _, paged := d.(driver.RangeLister); !paged {
			return nil // the portable layer's Keys was its Keys
		}
		keys, err := d.(driver.RangeStore).Keys(ctx)
		if err != nil {
			return err
		}
		if keys == nil {
			e.t.Errorf("the driver's Keys returned nil, not a slice (see driver.RangeStore.Keys)")
		}
		if diff := cmp.Diff(want, keys, cmpopts.EquateEmpty()); diff != "" {
			e.t.Errorf("the driver's own Keys (the portable layer lists through its pages instead) "+
				"differs from the keys written (see driver.RangeStore.Keys): -want +got:\n%s", diff)
		}
		return nil
	})
	e.fatalIf(err, "the driver's Keys")
}

// badKeys are keys every driver must refuse.
func badKeys() []string {
	return []string{
		"", "/", "/a", "a/", "a//b", ".", "..", "a/..", "./a", "a/./b", "a\x00b", "\x01", "a/\x1f",
		"\x7f", "\u0080", "a/\u009f", "\ue000", "\uf8ff", "\ufff0", "\uffff", "\U0001F600", "\xed\xa0\x80", "\xff",
		strings.Repeat("k", store.MaxKeyLen+1), strings.Repeat("k/", store.MaxKeyLen/2) + "k",
		"\u202eab", "a/b\ufeff", "a\u200bb", "a/\u00ad", " ", "a/ /b", "\u00a0", "a/\u3000",
	}
}

// checkRangeArguments: every operation refuses bad keys, steps and values
// with ErrInvalidArgument, and a refused call changes nothing.
func checkRangeArguments(e *env) {
	st := e.open()
	r := st.Ranges()
	e.next(st, "k", 5)
	for _, k := range badKeys() {
		q := quoteShort(k)
		_, err := r.Next(e.ctx, k, 1)
		e.wantIs(err, store.ErrInvalidArgument, "Next(%s, 1)", q)
		_, _, err = r.Current(e.ctx, k)
		e.wantIs(err, store.ErrInvalidArgument, "Current(%s)", q)
		_, err = r.Seal(e.ctx, k)
		e.wantIs(err, store.ErrInvalidArgument, "Seal(%s)", q)
		e.wantIs(r.Init(e.ctx, k, 0), store.ErrInvalidArgument, "Init(%s, 0)", q)
	}
	for _, step := range []int64{0, -1, math.MinInt64} {
		_, err := r.Next(e.ctx, "k", step)
		e.wantIs(err, store.ErrInvalidArgument, `Next("k", %d)`, step)
		_, err = r.Next(e.ctx, "k/new", step)
		e.wantIs(err, store.ErrInvalidArgument, `Next("k/new", %d)`, step)
	}
	// The driver refuses such a step itself: (*store.Store).Raw reaches it,
	// and a negative step would move the key back (driver.CheckStep).
	e.fatalIf(st.Raw(func(d driver.Store) error {
		if d, ok := d.(driver.RangeStore); ok {
			for _, step := range []int64{0, -1, -5, math.MinInt64} {
				_, err := d.Next(e.ctx, "k", step)
				e.wantIs(err, store.ErrInvalidArgument, `the driver's own Next("k", %d) (driver.RangeStore.Next: a step below 1 is refused by the driver too)`, step)
				_, err = d.Next(e.ctx, "k/new", step)
				e.wantIs(err, store.ErrInvalidArgument, `the driver's own Next("k/new", %d)`, step)
			}
		}
		return nil
	}), "Raw")
	for _, next := range []int64{-1, math.MinInt64} {
		e.wantIs(r.Init(e.ctx, "k", next), store.ErrInvalidArgument, `Init("k", %d)`, next)
		e.wantIs(r.Init(e.ctx, "k/new", next), store.ErrInvalidArgument, `Init("k/new", %d)`, next)
	}
	// Nothing was created or moved.
	keys, err := r.Keys(e.ctx)
	e.fatalIf(err, "Keys")
	if diff := cmp.Diff([]string{"k"}, keys); diff != "" {
		e.t.Errorf("Keys after refused calls: -want +got:\n%s", diff)
	}
	e.wantCurrent(st, "k", 5, false)
}
