package driver

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func req(owner, inc string, reclaim bool) AcquireRequest {
	return AcquireRequest{
		Namespace: Namespace{Name: "ns", Limit: 4, Tolerance: 50 * time.Millisecond},
		Owner:     owner, Incarnation: inc, TTL: 100 * time.Millisecond, Reclaim: reclaim,
	}
}

// live is a term of a/1, fence 3, written at 1000: expires at 1100,
// ceiling 1150.
var live = SlotRecord{Owner: "a", Incarnation: "1", LastOwner: "z", Fence: 3, TTL: 100, Tolerance: 50,
	Floor: 900, CeilingMin: 900, NextFloor: 900, Written: 1000}

func TestSlotJudge(t *testing.T) {
	released := live
	released.Owner, released.Incarnation = "", ""
	maxed := released
	maxed.Fence = math.MaxInt64
	for _, c := range []struct {
		name string
		r    SlotRecord
		req  AcquireRequest
		now  int64
		want SlotVerdict
		err  bool
	}{
		{"never used", SlotRecord{}, req("b", "1", false), 1000, SlotFree, false},
		{"released", released, req("b", "1", false), 1000, SlotFree, false},
		{"another owner's live term", live, req("b", "1", false), 1099, SlotBusy, false},
		{"another owner's term at its expiry", live, req("b", "1", false), 1100, SlotFree, false},
		{"own live term", live, req("a", "1", false), 1099, SlotOwn, false},
		{"own expired term", live, req("a", "1", false), 1100, SlotFree, false},
		{"other incarnation, no reclaim", live, req("a", "2", false), 1099, SlotBusy, false},
		{"other incarnation, reclaim", live, req("a", "2", true), 1099, SlotFree, false},
		{"reclaim never takes another owner's term", live, req("b", "2", true), 1099, SlotBusy, false},
		{"fence cannot grow", maxed, req("b", "1", false), 1000, SlotBusy, true},
	} {
		got, err := c.r.Judge(c.req, c.now)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("%s: Judge = %v, %v; want %v, error %v", c.name, got, err, c.want, c.err)
		}
	}
}

func TestSlotNewTerm(t *testing.T) {
	released := live
	released.Owner, released.Incarnation, released.LastOwner, released.NextFloor = "", "", "a", 1042
	seededAbove := live // expired term whose next floor a seed raised above its ceiling
	seededAbove.NextFloor = 5000
	term := func(fence, floor int64, last string) SlotRecord {
		return SlotRecord{Owner: "b", Incarnation: "9", LastOwner: last, Fence: fence, TTL: 100, Tolerance: 50,
			Floor: floor, CeilingMin: floor, NextFloor: floor, Written: 2000}
	}
	for _, c := range []struct {
		name string
		old  SlotRecord
		want SlotRecord
	}{
		{"never used: fence 1, floor 0", SlotRecord{}, term(1, 0, "")},
		{"never used after a purge: above the purged fences", SlotRecord{Fence: 9}, term(10, 0, "")},
		{"after a release: the next floor", released, term(4, 1042, "a")},
		{"after an expiry: the old ceiling", live, term(4, 1150, "a")},
		{"after an expiry: a higher next floor", seededAbove, term(4, 5000, "a")},
	} {
		got := c.old.NewTerm(req("b", "9", false), 2000)
		if d := cmp.Diff(c.want, got); d != "" {
			t.Errorf("%s: -want +got:\n%s", c.name, d)
		}
	}
	// A floor far ahead of now still gets a ceiling at or above it.
	far := SlotRecord{Fence: 1, NextFloor: 1 << 50}
	if n := far.NewTerm(req("b", "9", false), 2000); n.Ceiling() < n.Floor || n.ExpiresAt() != 2100 {
		t.Errorf("term with floor %d: expires %d, ceiling %d; want 2100 and at least the floor", n.Floor, n.ExpiresAt(), n.Ceiling())
	}
}

func TestSlotRenewed(t *testing.T) {
	l := live.Lease("ns", 2)
	got, err := live.Renewed(l, 1050)
	want := live
	want.ExpiresMin, want.CeilingMin, want.Written = 1100, 1150, 1050
	if err != nil || got != want {
		t.Errorf("Renewed at 1050 = %+v, %v; want %+v", got, err, want)
	}
	if got.ExpiresAt() != 1150 || got.Ceiling() != 1200 {
		t.Errorf("renewed term: expires %d, ceiling %d; want 1150, 1200", got.ExpiresAt(), got.Ceiling())
	}
	// The store's clock stepped back: nothing goes back.
	back, err := live.Renewed(l, 500)
	if err != nil || back.ExpiresAt() != 1100 || back.Ceiling() != 1150 {
		t.Errorf("Renewed at an earlier time: expires %d, ceiling %d, %v; want 1100, 1150", back.ExpiresAt(), back.Ceiling(), err)
	}
	// After its expiry, untouched: continued.
	if late, err := live.Renewed(l, 5000); err != nil || late.ExpiresAt() != 5100 || late.Fence != 3 {
		t.Errorf("Renewed after expiry: %+v, %v; want the same term until 5100", late, err)
	}
	for name, l := range map[string]Lease{
		"another fence":       {Owner: "a", Incarnation: "1", Fence: 2},
		"another incarnation": {Owner: "a", Incarnation: "2", Fence: 3},
		"another owner":       {Owner: "b", Incarnation: "1", Fence: 3},
	} {
		if _, err := live.Renewed(l, 1050); !errors.Is(err, ErrLeaseLost) {
			t.Errorf("Renewed with %s: %v, want ErrLeaseLost", name, err)
		}
	}
	released, _ := live.Released(l, -1, 1050)
	if _, err := released.Renewed(l, 1060); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Renewed after Release: %v, want ErrLeaseLost", err)
	}
}

// TestSlotForgedLease: Renewed and Released take only the term's identity
// from the lease; a lease whose times or bounds disagree with the stored
// term is refused, naming the field, and the record stays as it was. An
// older copy of the lease (lower ExpiresAt and Ceiling) is still good.
func TestSlotForgedLease(t *testing.T) {
	l := live.Lease("ns", 2)
	renewed, err := live.Renewed(l, 1050) // expires 1150, ceiling 1200
	if err != nil {
		t.Fatal(err)
	}
	if _, err := renewed.Renewed(l, 1060); err != nil {
		t.Errorf("Renewed with an older copy of the lease: %v", err)
	}
	if got, err := renewed.Released(l, -1, 1060); err != nil || got.NextFloor != 1200 {
		t.Errorf("Released with an older copy: next floor %d, %v; want the term's ceiling 1200", got.NextFloor, err)
	}
	for _, c := range []struct {
		name, field string
		spoil       func(*Lease)
	}{
		{"ExpiresAt in microseconds", "ExpiresAt", func(l *Lease) { l.ExpiresAt *= 1000 }},
		{"ExpiresAt MaxInt64", "ExpiresAt", func(l *Lease) { l.ExpiresAt = math.MaxInt64 }},
		{"Ceiling MaxInt64", "Ceiling", func(l *Lease) { l.Ceiling = math.MaxInt64 }},
		{"every time MaxInt64", "Floor", func(l *Lease) { l.Floor, l.ExpiresAt, l.Ceiling = math.MaxInt64, math.MaxInt64, math.MaxInt64 }},
		{"Ceiling moved up", "Ceiling", func(l *Lease) { l.Ceiling += 1000 }},
		{"Ceiling below Floor", "Ceiling", func(l *Lease) { l.Ceiling = l.Floor - 1 }},
		{"Ceiling below ExpiresAt + Tolerance", "Ceiling", func(l *Lease) { l.Ceiling = l.ExpiresAt }},
		{"Floor moved", "Floor", func(l *Lease) { l.Floor++ }},
		{"TTL changed", "TTL", func(l *Lease) { l.TTL = time.Hour }},
		{"TTL in microseconds", "TTL", func(l *Lease) { l.TTL += time.Microsecond }},
		{"Tolerance changed", "Tolerance", func(l *Lease) { l.Tolerance = 0 }},
	} {
		f := renewed.Lease("ns", 2)
		c.spoil(&f)
		got, err := renewed.Renewed(f, 1060)
		if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("Renewed with %s: %v; want ErrInvalidArgument naming %s", c.name, err, c.field)
		}
		if got != renewed {
			t.Errorf("Renewed with %s changed the record: %+v", c.name, got)
		}
		got, err = renewed.Released(f, 1100, 1060)
		if !errors.Is(err, ErrInvalidArgument) || got != renewed {
			t.Errorf("Released with %s: %+v, %v; want ErrInvalidArgument and the record unchanged", c.name, got, err)
		}
	}
	// Another term's lease is lost whatever its times say.
	other := renewed.Lease("ns", 2)
	other.Fence, other.ExpiresAt = 2, math.MaxInt64
	if _, err := renewed.Renewed(other, 1060); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Renewed with another fence and forged times: %v, want ErrLeaseLost", err)
	}
}

func TestSlotReleased(t *testing.T) {
	l := live.Lease("ns", 2)
	for _, c := range []struct {
		name      string
		used, now int64
		want      int64
	}{
		{"used unknown", -1, 1050, 1150},
		{"used", 1000, 1050, 1001},
		{"used below the floor", 10, 1050, 900},
		{"used past the ceiling", 9000, 1050, 1150},
		{"expired term nobody took", 1000, 5000, 1001},
	} {
		got, err := live.Released(l, c.used, c.now)
		if err != nil || got.NextFloor != c.want || got.Owner != "" || got.Incarnation != "" ||
			got.LastOwner != "a" || got.Fence != 3 || got.Written != c.now {
			t.Errorf("%s: Released = %+v, %v; want next floor %d, no owner, last owner a, fence 3", c.name, got, err, c.want)
		}
	}
	if _, err := live.Released(Lease{Owner: "a", Incarnation: "1", Fence: 4}, -1, 1050); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Released of another term: %v, want ErrLeaseLost", err)
	}
}

func TestSlotSeeded(t *testing.T) {
	released, _ := live.Released(live.Lease("ns", 2), 1000, 1050) // next floor 1001
	for _, c := range []struct {
		name        string
		r           SlotRecord
		fence, nf   int64
		now         int64
		wantFence   int64
		wantNext    int64
		wantChanged bool
		wantErr     error
	}{
		{"never used", SlotRecord{}, 10, 5000, 2000, 10, 5000, true, nil},
		{"never used, zero values", SlotRecord{}, 0, 0, 2000, 0, 0, true, nil},
		{"never used after a purge", SlotRecord{Fence: 9}, 0, 0, 2000, 9, 0, true, nil},
		{"raise both", released, 10, 5000, 2000, 10, 5000, true, nil},
		{"lower values change nothing", released, 1, 5, 2000, 3, 1001, false, nil},
		{"raise the fence only", released, 7, 5, 2000, 7, 1001, true, nil},
		{"live term", live, 10, 5000, 1099, 3, 900, false, ErrLocked},
		{"expired term ends, its ceiling kept", live, 1, 5, 1100, 3, 1150, true, nil},
		{"expired term ends, a higher seed wins", live, 1, 9000, 1100, 3, 9000, true, nil},
	} {
		got, changed, err := c.r.Seeded(c.fence, c.nf, c.now)
		if !errors.Is(err, c.wantErr) || (c.wantErr == nil && err != nil) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.wantErr)
			continue
		}
		if got.Fence != c.wantFence || got.NextFloor != c.wantNext || changed != c.wantChanged {
			t.Errorf("%s: fence %d, next floor %d, changed %v; want %d, %d, %v",
				c.name, got.Fence, got.NextFloor, changed, c.wantFence, c.wantNext, c.wantChanged)
		}
		if c.wantErr == nil && got.Owner != "" {
			t.Errorf("%s: a seeded slot has owner %q, want none", c.name, got.Owner)
		}
	}
	// The holder of an expired term a seed ended has lost it.
	ended, _, _ := live.Seeded(0, 0, 1100)
	if _, err := ended.Renewed(live.Lease("ns", 2), 1200); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Renewed after a seed ended the term: %v, want ErrLeaseLost", err)
	}
	if ended.LastOwner != "a" {
		t.Errorf("seed that ended a's term: last owner %q, want a", ended.LastOwner)
	}
}

func TestSlotViews(t *testing.T) {
	wantLease := Lease{Namespace: "ns", Slot: 2, Owner: "a", Incarnation: "1", Fence: 3, TTL: 100 * time.Millisecond,
		Tolerance: 50 * time.Millisecond, Floor: 900, ExpiresAt: 1100, Ceiling: 1150}
	if d := cmp.Diff(wantLease, live.Lease("ns", 2)); d != "" {
		t.Errorf("Lease: -want +got:\n%s", d)
	}
	wantInfo := SlotInfo{Slot: 2, Owner: "a", Incarnation: "1", LastOwner: "z", Fence: 3, TTL: 100 * time.Millisecond,
		Tolerance: 50 * time.Millisecond, Floor: 900, ExpiresAt: 1100, Ceiling: 1150, NextFloor: 900}
	if d := cmp.Diff(wantInfo, live.Info(2)); d != "" {
		t.Errorf("Info: -want +got:\n%s", d)
	}
}

func TestOwnerIndex(t *testing.T) {
	for _, c := range []struct {
		index []int
		n     int
		want  []int
	}{
		{nil, 3, []int{3}},
		{[]int{1, 2}, 3, []int{3, 1, 2}},
		{[]int{1, 3, 2}, 3, []int{3, 1, 2}},
		{[]int{0, 1, 2, 3, 4, 5, 6, 7}, 9, []int{9, 0, 1, 2, 3, 4, 5, 6}},
	} {
		in := slices.Clone(c.index)
		if got := RememberSlot(c.index, c.n); !slices.Equal(got, c.want) || !slices.Equal(in, c.index) {
			t.Errorf("RememberSlot(%v, %d) = %v, want %v (input unchanged)", in, c.n, got, c.want)
		}
	}
	for _, c := range []struct {
		index            []int
		preferred, limit int
		want             []int
	}{
		{nil, 2, 4, []int{2}},
		{[]int{3, 1}, 2, 4, []int{3, 1, 2}},
		{[]int{3, 2, 3}, 2, 4, []int{3, 2}},
		{[]int{7, 1}, 0, 4, []int{1, 0}}, // 7: the index of a namespace recreated smaller
	} {
		if got := FirstSlots(c.index, c.preferred, c.limit); !slices.Equal(got, c.want) {
			t.Errorf("FirstSlots(%v, %d, %d) = %v, want %v", c.index, c.preferred, c.limit, got, c.want)
		}
	}
}
