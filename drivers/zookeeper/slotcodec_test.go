package zookeeper

import (
	"bytes"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/cosid-go/store/driver"
)

// fullSlot is a slot node with every field set, as the store writes it.
const fullSlot = "owner=host-a\nincarnation=5f3a9c\nlast_owner=host-b\nfence=7\nttl=60000\ntolerance=1000\n" +
	"floor=1700000000000\nexpires_min=1700000060000\nceiling_min=1700000061000\nnext_floor=1700000000000\n"

func TestSlotCodecRoundTrip(t *testing.T) {
	for _, n := range []slotNode{
		{},
		{fence: 1, nextFloor: 500},
		{owner: "host-a", incarnation: "run", lastOwner: "host-b", fence: 7, ttl: 60000, tolerance: 1000,
			floor: 17, expiresMin: 18, ceilingMin: 19, nextFloor: 17},
		{owner: "ü-ñ", incarnation: "a=b c", fence: math.MaxInt64, ttl: 1, floor: math.MaxInt64,
			expiresMin: math.MaxInt64, ceilingMin: math.MaxInt64, nextFloor: math.MaxInt64},
		{lastOwner: "x", extra: []nodeLine{{"restored_from", "backup=1"}, {"Note.v-2", ""}}},
	} {
		data := formatSlot(n)
		got, err := parseSlot(data)
		if err != nil {
			t.Errorf("parseSlot(%q): %v", data, err)
			continue
		}
		if !reflect.DeepEqual(got, n) {
			t.Errorf("parseSlot(formatSlot(%+v)) = %+v", n, got)
		}
	}
}

func TestSlotCodecReads(t *testing.T) {
	want, err := parseSlot([]byte(fullSlot))
	if err != nil {
		t.Fatal(err)
	}
	if want.owner != "host-a" || want.fence != 7 || want.ceilingMin != 1700000061000 {
		t.Fatalf("parseSlot(%q) = %+v", fullSlot, want)
	}
	lines := strings.Split(strings.TrimSuffix(fullSlot, "\n"), "\n")
	for what, data := range map[string]string{
		"no final newline": strings.TrimSuffix(fullSlot, "\n"),
		"blank lines":      "\n\n" + strings.ReplaceAll(fullSlot, "\n", "\n\n"),
		"lines reversed":   strings.Join(reverse(lines), "\n"),
		"leading zeros":    strings.Replace(fullSlot, "fence=7", "fence=0007", 1),
	} {
		got, err := parseSlot([]byte(data))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: parseSlot(%q) = %+v, %v; want %+v", what, data, got, err, want)
		}
	}
}

func reverse(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

func TestSlotCodecRejects(t *testing.T) {
	replace := func(old, new string) string { return strings.Replace(fullSlot, old, new, 1) }
	for data, why := range map[string]string{
		"":                                                "no \"owner\" line",
		"garbage":                                         "no '='",
		replace("fence=7\n", ""):                          `no "fence" line`,
		replace("last_owner=host-b\n", ""):                `no "last_owner" line`,
		fullSlot + "fence=8\n":                            `"fence" appears twice`,
		fullSlot + "note=1\nnote=2\n":                     `"note" appears twice`,
		replace("fence=7", "fence=-7"):                    "not a non-negative decimal",
		replace("fence=7", "fence=+7"):                    "not a non-negative decimal",
		replace("fence=7", "fence= 7"):                    "not a non-negative decimal",
		replace("fence=7", "fence=0x7"):                   "not a non-negative decimal",
		replace("fence=7", "fence="):                      "fence is empty",
		replace("fence=7", "fence=9223372036854775808"):   "larger than the largest int64",
		replace("ttl=60000", "ttl=86400001"):              "ttl 86400001ms is above",
		replace("tolerance=1000", "tolerance=3600001"):    "tolerance 3600001ms is above",
		replace("owner=host-a", "owner=a\rb"):             "control character",
		replace("incarnation=5f3a9c", "incarnation=a\tb"): "control character",
		replace("incarnation=5f3a9c", "incarnation="):     "an owner without an incarnation",
		replace("owner=host-a", "owner="):                 "an incarnation without an owner",
		replace("fence=7", "fence=0"):                     "fence 0",
		replace("ttl=60000", "ttl=0"):                     "ttl 0",
		fullSlot + "bad name=1\n":                         "is not a name",
		fullSlot + "=1\n":                                 "is not a name",
		fullSlot + "\xff=1\n":                             "not valid UTF-8",
		fullSlot + "note=\xff\n":                          "not valid UTF-8",
	} {
		_, err := parseSlot([]byte(data))
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("parseSlot(%q) = %v, want an error saying %q", data, err, why)
		}
	}
}

func TestSlotNamespaceCodec(t *testing.T) {
	limit, tol, sealed, err := parseNamespace(formatNamespace(1024, 1000))
	if err != nil || limit != 1024 || tol != 1000 || sealed {
		t.Errorf("round trip of limit 1024, tolerance 1000: (%d, %d, %v, %v)", limit, tol, sealed, err)
	}
	if limit, tol, sealed, err := parseNamespace([]byte("tolerance=0\nowner_hint=x\nlimit=1")); err != nil || limit != 1 || tol != 0 || sealed {
		t.Errorf("hand-written settings: (%d, %d, %v, %v)", limit, tol, sealed, err)
	}
	// A seal appends a line; a namespace a seal created has limit 0.
	for data, want := range map[string]int{
		string(formatNamespace(4, 0)) + sealedLine: 4,
		"limit=0\ntolerance=0\n" + sealedLine:      0,
	} {
		if limit, _, sealed, err := parseNamespace([]byte(data)); err != nil || limit != want || !sealed {
			t.Errorf("parseNamespace(%q) = (%d, %v, %v), want limit %d, sealed", data, limit, sealed, err, want)
		}
	}
	for data, why := range map[string]string{
		"":                               `no "limit" line`,
		"limit=4\n":                      `no "tolerance" line`,
		"limit=0\ntolerance=0\n":         "below 1",
		"limit=1048577\ntolerance=0":     "above the largest",
		"limit=4\ntolerance=3600001":     "above the largest",
		"limit=4\ntolerance=-1":          "not a non-negative decimal",
		"limit=4\nlimit=4\ntolerance=0":  "appears twice",
		"limit=4\ntolerance=0\nsealed=1": `sealed "1" is not true`,
	} {
		if _, _, _, err := parseNamespace([]byte(data)); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("parseNamespace(%q) = %v, want an error saying %q", data, err, why)
		}
	}
}

func TestSlotOwnerIndexCodec(t *testing.T) {
	for data, want := range map[string][]int{
		"":              nil,
		"3":             {3},
		"3,17,0":        {3, 17, 0},
		"3,3,1,3":       {3, 1},
		"1048575,00012": {1048575, 12},
	} {
		got, err := parseOwnerIndex([]byte(data))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("parseOwnerIndex(%q) = %v, %v; want %v", data, got, err, want)
		}
	}
	for _, data := range []string{",", "1,", ",1", "1;2", "-1", "a", "1 ,2", "1048576", "99999999999999999999"} {
		if got, err := parseOwnerIndex([]byte(data)); err == nil {
			t.Errorf("parseOwnerIndex(%q) = %v, want an error", data, got)
		}
	}
	if got := string(formatOwnerIndex(driver.RememberSlot([]int{1, 2, 3, 4, 5, 6, 7, 8}, 5))); got != "5,1,2,3,4,6,7,8" {
		t.Errorf("rememberSlot of a listed slot: %q", got)
	}
	if got := string(formatOwnerIndex(driver.RememberSlot([]int{1, 2, 3, 4, 5, 6, 7, 8}, 9))); got != "9,1,2,3,4,5,6,7" {
		t.Errorf("rememberSlot of a new slot into a full index: %q", got)
	}
}

func TestSlotTimes(t *testing.T) {
	n := slotNode{ttl: 1000, tolerance: 100, expiresMin: 5000, ceilingMin: 7000}
	if got := n.record(3000).ExpiresAt(); got != 5000 {
		t.Errorf("expiresAt below expires_min = %d, want 5000", got)
	}
	if got := n.record(4500).ExpiresAt(); got != 5500 {
		t.Errorf("expiresAt = %d, want mtime+ttl 5500", got)
	}
	if got := n.record(4500).Ceiling(); got != 7000 {
		t.Errorf("ceiling below ceiling_min = %d, want 7000", got)
	}
	if got := n.record(6950).Ceiling(); got != 8050 {
		t.Errorf("ceiling = %d, want expiresAt+tolerance 8050", got)
	}
	if back := n.withRecord(n.record(1)); !reflect.DeepEqual(back, n) {
		t.Errorf("node to record and back: %+v became %+v", n, back)
	}
	huge := slotNode{ttl: 1000, tolerance: 100, expiresMin: math.MaxInt64 - 10}
	if got := huge.record(0).Ceiling(); got != math.MaxInt64 {
		t.Errorf("ceiling near the largest int64 = %d, want it saturated", got)
	}
}

// FuzzSlotCodec: parsing never panics; what parses formats to data that
// parses to the same node and formats the same again; and the store's
// own output always parses.
func FuzzSlotCodec(f *testing.F) {
	for _, seed := range []string{
		fullSlot,
		string(formatSlot(slotNode{})),
		string(formatSlot(slotNode{fence: 3, nextFloor: 9, extra: []nodeLine{{"note", "a=b"}}})),
		"\n" + fullSlot + "\nx=1\n",
		strings.Replace(fullSlot, "fence=7", "fence=99999999999999999999", 1),
		"owner=a\nowner=b\n",
		"=",
		"a=\xff",
		"garbage",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := parseSlot(data)
		if err != nil {
			return
		}
		out := formatSlot(n)
		again, err := parseSlot(out)
		if err != nil {
			t.Fatalf("formatSlot(parseSlot(%q)) = %q does not parse: %v", data, out, err)
		}
		if !reflect.DeepEqual(again, n) {
			t.Fatalf("round trip of %q: %+v became %+v", data, n, again)
		}
		if out2 := formatSlot(again); !bytes.Equal(out, out2) {
			t.Fatalf("formatting is not stable: %q then %q", out, out2)
		}
		if r := n.record(math.MaxInt64); r.Ceiling() < r.ExpiresAt() || n.record(0).ExpiresAt() < 0 {
			t.Fatalf("times of %+v wrap", n)
		}
	})
}

// FuzzSlotNamespaceCodec: settings parse within their bounds or not at all.
func FuzzSlotNamespaceCodec(f *testing.F) {
	for _, seed := range []string{"limit=1024\ntolerance=1000\n", "limit=0\ntolerance=0", "tolerance=1\nlimit=1\nx=y", "limit=\n", ""} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		limit, tol, sealed, err := parseNamespace(data)
		if err != nil {
			return
		}
		if (limit < 1 && !(limit == 0 && sealed)) || limit > 1<<20 || tol < 0 || tol > 3_600_000 {
			t.Fatalf("parseNamespace(%q) = (%d, %d) out of bounds", data, limit, tol)
		}
		if sealed {
			return // formatNamespace writes settings only
		}
		if l2, t2, _, err := parseNamespace(formatNamespace(limit, tol)); err != nil || l2 != limit || t2 != tol {
			t.Fatalf("round trip of (%d, %d): (%d, %d, %v)", limit, tol, l2, t2, err)
		}
	})
}

// FuzzSlotOwnerIndexCodec: an index parses to distinct slot numbers in range,
// and round-trips.
func FuzzSlotOwnerIndexCodec(f *testing.F) {
	for _, seed := range []string{"", "3", "3,17,0", "3,3", "1,", "a", "1048576"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		slots, err := parseOwnerIndex(data)
		if err != nil {
			return
		}
		seen := map[int]bool{}
		for _, n := range slots {
			if n < 0 || n >= 1<<20 || seen[n] {
				t.Fatalf("parseOwnerIndex(%q) = %v", data, slots)
			}
			seen[n] = true
		}
		again, err := parseOwnerIndex(formatOwnerIndex(slots))
		if err != nil || !reflect.DeepEqual(again, slots) {
			t.Fatalf("round trip of %v: %v, %v", slots, again, err)
		}
	})
}

func TestFenceFloorLines(t *testing.T) {
	for _, c := range []struct {
		data string
		want int64
		bad  bool
	}{
		{"", 0, false},
		{"limit=4\ntolerance=50\n", 0, false},
		{"limit=4\ntolerance=50\nfence_floor=12\n", 12, false},
		{"fence_floor=-1\n", 0, true},
		{"fence_floor=1\nfence_floor=2\n", 0, true},
	} {
		got, err := parseFenceFloor([]byte(c.data), fieldFenceFloor)
		if got != c.want || (err != nil) != c.bad {
			t.Errorf("parseFenceFloor(%q) = %d, %v; want %d, error %v", c.data, got, err, c.want, c.bad)
		}
	}
	for _, c := range []struct{ data, want string }{
		{"", "slot_fence_floor=7\n"},
		{"a=b\nslot_fence_floor=3\nc=d=e\n", "a=b\nslot_fence_floor=7\nc=d=e\n"},
	} {
		got, err := withLine([]byte(c.data), fieldSlotFenceFloor, "7")
		if err != nil || string(got) != c.want {
			t.Errorf("withLine(%q) = %q, %v; want %q", c.data, got, err, c.want)
		}
	}
}
