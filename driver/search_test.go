package driver

import (
	"fmt"
	"slices"
	"testing"
)

func TestSearchOrder(t *testing.T) {
	for _, c := range []struct {
		start, limit int
		want         []int
	}{
		{0, 4, []int{0, 1, 2, 3}},
		{2, 4, []int{2, 3, 0, 1}},
		{3, 4, []int{3, 0, 1, 2}},
		{0, 1, []int{0}},
	} {
		if got := slices.Collect(SearchOrder(c.start, c.limit)); !slices.Equal(got, c.want) {
			t.Errorf("SearchOrder(%d, %d) = %v, want %v", c.start, c.limit, got, c.want)
		}
	}
}

// SearchStart is within the namespace, the same for the same owner and
// incarnation, and spreads a fleet: 1,000 owners over 2,048 slots start on
// about as many distinct slots as random points would (about 800).
func TestSearchStart(t *testing.T) {
	if got := SearchStart("a", "b", 1); got != 0 {
		t.Errorf("SearchStart in a namespace of one slot: %d", got)
	}
	if a, b := SearchStart("a", "b", 2048), SearchStart("a", "b", 2048); a != b {
		t.Errorf("SearchStart differs for the same owner and incarnation: %d, then %d", a, b)
	}
	if SearchStart("ab", "", 1<<20) == SearchStart("a", "b", 1<<20) {
		t.Error("owner and incarnation run together: (ab, '') and (a, b) start at the same slot")
	}
	starts := map[int]bool{}
	for i := range 1000 {
		n := SearchStart(fmt.Sprintf("host-%d", i), "run-1", 2048)
		if n < 0 || n >= 2048 {
			t.Fatalf("SearchStart of host-%d: %d, outside 0..2047", i, n)
		}
		starts[n] = true
	}
	if len(starts) < 700 {
		t.Errorf("1,000 owners start at %d distinct slots of 2,048, want at least 700", len(starts))
	}
	// One owner key shared by the fleet: the incarnations spread it.
	starts = map[int]bool{}
	for i := range 1000 {
		starts[SearchStart("service", fmt.Sprintf("run-%d", i), 2048)] = true
	}
	if len(starts) < 700 {
		t.Errorf("1,000 incarnations of one owner start at %d distinct slots of 2,048, want at least 700", len(starts))
	}
}
