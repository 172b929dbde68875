package tck

import (
	"math"
	"slices"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// checkAdvance: the optional driver.RangeAdvancer raises a key, never
// lowers one, creates a missing key at the value, refuses a sealed key with
// ErrSealed leaving it as it was, and is seen by another store's Next.
func checkAdvance(e *env) {
	st, other := e.open(), e.open()
	needDriver[driver.RangeAdvancer](e, st)
	r := st.Ranges()
	adv := func(key string, next, wantPrev int64) {
		e.t.Helper()
		prev, err := r.Advance(e.ctx, key, next)
		e.fatalIf(err, "Advance(%q, %d)", key, next)
		if prev != wantPrev {
			e.t.Errorf("Advance(%q, %d) reports the key was at %d, want %d", key, next, prev, wantPrev)
		}
	}
	e.next(other, "adv", 30)
	adv("adv", 100, 30)
	e.wantCurrent(st, "adv", 100, false)
	e.wantRange(e.next(other, "adv", 10), 100, 110, `another store's Next("adv", 10) after Advance(100)`)
	adv("adv", 50, 110) // never lowers
	adv("adv", 110, 110)
	e.wantCurrent(other, "adv", 110, false)

	adv("adv/new", 70, 0) // a missing key is created at the value
	keys, err := other.Ranges().Keys(e.ctx)
	e.fatalIf(err, "Keys")
	if !slices.Contains(keys, "adv/new") {
		e.t.Errorf("Keys %q after Advance of a missing key lack it", keys)
	}
	e.wantRange(e.next(other, "adv/new", 5), 70, 75, `Next("adv/new", 5) after Advance(70) created it`)
	adv("adv/zero", 0, 0)
	e.wantCurrent(st, "adv/zero", 0, false)
	adv("adv/top", math.MaxInt64, 0)
	_, err = r.Next(e.ctx, "adv/top", 1)
	e.wantIs(err, store.ErrExhausted, "Next(1) of a key advanced to MaxInt64")

	_, err = other.Ranges().Seal(e.ctx, "adv")
	e.fatalIf(err, "Seal")
	for _, next := range []int64{200, 5} {
		_, err = r.Advance(e.ctx, "adv", next)
		e.wantIs(err, store.ErrSealed, "Advance(%d) of a key sealed at 110", next)
		e.wantCurrent(other, "adv", 110, true)
	}
	_, err = r.Advance(e.ctx, "adv", -1)
	e.wantIs(err, store.ErrInvalidArgument, "Advance(-1)")
}
