package driver

import (
	"strings"
	"testing"
)

// TestSlotMarkOrder checks the order of a slot's states: each row is a
// record read after the mark of live (a term of fence 3) or of its release.
func TestSlotMarkOrder(t *testing.T) {
	released := live
	released.Owner, released.Incarnation, released.NextFloor = "", "", 1200
	lower, renewed, seeded, copied := live, live, released, live
	lower.Fence = 2
	renewed.CeilingMin = 1150
	seeded.NextFloor = 1300
	copied.CeilingMin = 800

	for _, c := range []struct {
		name      string
		mark      SlotMark
		read      SlotRecord
		behind    string // a word of Behind's answer; "" for none
		fenceOnly string // the same against the FenceMark of the mark's fence
	}{
		{"same", MarkOf(live), live, "", ""},
		{"renewed", MarkOf(live), renewed, "", ""},
		{"released", MarkOf(live), released, "", ""},
		{"lower fence", MarkOf(live), lower, "below 3", "below 3"},
		{"ceiling back", MarkOf(live), copied, "ceiling_min 800", ""},
		{"held after release", MarkOf(released), live, "released before", ""},
		{"seeded", MarkOf(released), seeded, "", ""},
		{"floor back", MarkOf(seeded), released, "next_floor 1200", ""},
		{"zero mark", SlotMark{}, lower, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			check := func(m SlotMark, want string) {
				t.Helper()
				got := m.Behind(c.read)
				if want == "" && got != "" || want != "" && !strings.Contains(got, want) {
					t.Errorf("Behind = %q, want %q", got, want)
				}
				if got == "" && m.Ahead(MarkOf(c.read)).Behind(c.read) != "" {
					t.Errorf("a record is behind the mark it moved ahead to")
				}
			}
			check(c.mark, c.behind)
			if c.mark != (SlotMark{}) {
				check(FenceMark(c.mark.Fence()), c.fenceOnly)
			}
		})
	}
}

// TestSlotMarkAhead checks that Ahead keeps the furthest of two marks.
func TestSlotMarkAhead(t *testing.T) {
	released := live
	released.Owner, released.Incarnation = "", ""
	lower := live
	lower.Fence = 2
	for _, m := range []SlotMark{MarkOf(lower).Ahead(MarkOf(live)), MarkOf(live).Ahead(MarkOf(lower))} {
		if m != MarkOf(live) {
			t.Errorf("Ahead of fences 2 and 3 = %+v, want fence 3's", m)
		}
	}
	if m := MarkOf(released).Ahead(MarkOf(live)); m.Behind(live) == "" {
		t.Errorf("a term held after its release is not behind the released mark")
	}
}
