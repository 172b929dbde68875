package tck

import (
	"slices"

	"github.com/google/go-cmp/cmp"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// pagedKeys are keys whose bytewise order is not the order of a walk of
// their segments ('-' and '.' sort before '/'): "a-b" comes between "a"
// and "a/b", and "a" is both a key and the parent of keys.
var pagedKeys = []string{"a", "a-b", "a.c", "a/b", "a/b-d", "a/b/c", "a0", "b", "b/a/z", "c"}

// checkListPages: RangeStore.All lists every key once, sorted, with its
// state, whatever the page size; a key created during a listing is listed
// once or not at all, and the others all still once and in order; and a
// driver's RangeLister keeps its page contract (at most limit keys above
// after, sorted, fewer only at the end).
func checkListPages(e *env) {
	st := e.open()
	want := make([]store.KeyInfo, 0, len(pagedKeys))
	for i, k := range pagedKeys {
		e.fatalIf(st.Ranges().Init(e.ctx, k, int64(10*i)), "Init(%q)", k)
		want = append(want, store.KeyInfo{Key: k, Next: int64(10 * i)})
	}
	n, err := st.Ranges().Seal(e.ctx, "a/b")
	e.fatalIf(err, `Seal("a/b")`)
	want[3] = store.KeyInfo{Key: "a/b", Next: n, Sealed: true}
	for _, page := range []int{1, 2, 3, len(want), len(want) + 1} {
		var got []store.KeyInfo
		for k, err := range e.open(store.WithListPage(page)).Ranges().All(e.ctx) {
			e.fatalIf(err, "All with pages of %d", page)
			got = append(got, k)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			e.t.Errorf("All with pages of %d: -want +got:\n%s", page, diff)
		}
	}

	// Keys created while the listing runs, below and above where it is.
	lister := e.open(store.WithListPage(2))
	var got []string
	for k, err := range lister.Ranges().All(e.ctx) {
		e.fatalIf(err, "All with keys created during it")
		got = append(got, k.Key)
		if k.Key == "a/b" {
			e.next(st, "a/a", 1) // below: already passed
			e.next(st, "bb", 1)  // above: may be listed
		}
	}
	if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
		e.t.Errorf("All with keys created during it listed %q: not sorted, or a key twice", got)
	}
	for _, w := range want {
		if !slices.Contains(got, w.Key) {
			e.t.Errorf("All with keys created during it left out %q, which existed throughout: listed %q", w.Key, got)
		}
	}
	if slices.Contains(got, "a/a") {
		e.t.Errorf("All listed %q, created below the page it had reached: listed %q", "a/a", got)
	}

	// A break ends the listing.
	count := 0
	for range lister.Ranges().All(e.ctx) {
		count++
		if count == 3 {
			break
		}
	}

	// Below the portable layer: the driver's pages, through Raw.
	e.fatalIf(st.Raw(func(raw driver.Store) error {
		d, ok := raw.(driver.RangeLister)
		if !ok {
			return nil // the portable layer lists such a driver with Keys
		}
		all, err := st.Ranges().Keys(e.ctx)
		e.fatalIf(err, "Keys")
		for _, limit := range []int{1, 4} {
			for i, after := range append([]string{""}, all...) {
				keys := listFrom(e, d, after, limit)
				rest := all[i:]
				if diff := cmp.Diff(slices.Clip(rest[:min(limit, len(rest))]), keys); diff != "" {
					e.t.Errorf("driver ListRanges(%q, %d), and the pages it goes on to: -want +got:\n%s", after, limit, diff)
				}
			}
		}
		if keys := listFrom(e, d, "a/b", 2); !slices.Equal(keys, []string{"a/b-d", "a/b/c"}) {
			e.t.Errorf(`driver ListRanges after "a/b" = %q, want "a/b-d", then "a/b/c"`, keys)
		}
		return nil
	}), "Raw")
}

// listFrom reads the driver's pages from after, each from the next the
// one before gave, until it has limit keys or the listing ends, and checks
// each page's contract: at most limit keys, above where it starts and
// sorted; next "" (the end) or above the start and at or above the page.
// A page may stop short of limit with a next (a driver's work budget).
func listFrom(e *env, d driver.RangeLister, after string, limit int) []string {
	keys := []string{}
	for start := after; len(keys) < limit; {
		page, next, err := d.ListRanges(e.ctx, start, limit)
		e.fatalIf(err, "driver ListRanges(%q, %d)", start, limit)
		if len(page) > limit {
			e.t.Fatalf("driver ListRanges(%q, %d) returned %d keys", start, limit, len(page))
		}
		prev := start
		for _, k := range page {
			if k.Key <= prev && (prev != "" || k.Key == "") {
				e.t.Fatalf("driver ListRanges(%q, %d) listed %q after %q (see driver.RangeLister)", start, limit, k.Key, prev)
			}
			prev = k.Key
			keys = append(keys, k.Key)
		}
		if next == "" {
			break
		}
		if next <= start || next < prev {
			e.t.Fatalf("driver ListRanges(%q, %d) goes on at %q, not above its keys and start (see driver.RangeLister)", start, limit, next)
		}
		start = next
	}
	return keys[:min(limit, len(keys))]
}

// checkLockPages: Locker.All lists the names List lists, once each and
// sorted, whatever the page size, also while names come and go, and a
// driver's LockLister keeps its page contract.
func checkLockPages(e *env) {
	st := e.open()
	names := []string{"n", "n-a", "n.b", "n0", "na", "o"}
	var held []*store.Lock
	for _, n := range names {
		held = append(held, e.lock(st, n)) // held: a driver may forget a name nobody holds
	}
	want, err := st.Locks().List(e.ctx)
	e.fatalIf(err, "Locks().List")
	for _, n := range names {
		if !slices.Contains(want, n) {
			e.t.Fatalf("Locks().List = %q leaves out %q, which is held", want, n)
		}
	}
	for _, page := range []int{1, 2, len(want) + 1} {
		var got []string
		for n, err := range e.open(store.WithListPage(page)).Locks().All(e.ctx) {
			e.fatalIf(err, "Locks().All with pages of %d", page)
			got = append(got, n)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			e.t.Errorf("Locks().All with pages of %d: -want +got:\n%s", page, diff)
		}
	}
	var got []string
	for n, err := range e.open(store.WithListPage(2)).Locks().All(e.ctx) {
		e.fatalIf(err, "Locks().All with names coming and going")
		got = append(got, n)
		if n == "n-a" {
			e.unlock(held[0]) // "n", passed already
			held[0] = e.lock(st, "nb")
		}
	}
	if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
		e.t.Errorf("Locks().All with names coming and going listed %q: not sorted, or a name twice", got)
	}
	for _, n := range names[1:] {
		if !slices.Contains(got, n) {
			e.t.Errorf("Locks().All left out %q, held throughout: listed %q", n, got)
		}
	}
	for _, l := range held {
		e.unlock(l)
	}
	// Below the portable layer: the driver's pages, through Raw.
	e.fatalIf(st.Raw(func(raw driver.Store) error {
		d, ok := raw.(driver.LockLister)
		if !ok {
			return nil
		}
		for _, after := range []string{"", "n", "n.b", "o", "zz"} {
			page, err := d.ListLocks(e.ctx, after, 2)
			e.fatalIf(err, "driver ListLocks(%q, 2)", after)
			if !slices.IsSorted(page) || len(page) > 2 || (len(page) > 0 && page[0] <= after) {
				e.t.Errorf("driver ListLocks(%q, 2) = %q: want at most 2 names above it, sorted", after, page)
			}
		}
		return nil
	}), "Raw")
}
