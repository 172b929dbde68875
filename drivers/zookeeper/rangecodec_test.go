package zookeeper

import (
	"math"
	"testing"
)

func TestParseRange(t *testing.T) {
	for _, c := range []struct {
		data          string
		next          int64
		sealed, empty bool
		bad           bool
	}{
		{data: "", empty: true},
		{data: "0", next: 0},
		{data: "1200", next: 1200},
		{data: "1200:sealed", next: 1200, sealed: true},
		{data: "0:sealed", sealed: true},
		{data: "007", next: 7},
		{data: "9223372036854775807", next: math.MaxInt64},
		{data: "9223372036854775807:sealed", next: math.MaxInt64, sealed: true},
		{data: "9223372036854775808", bad: true},
		{data: "-1", bad: true},
		{data: "+1", bad: true},
		{data: " 1", bad: true},
		{data: "1\n", bad: true},
		{data: ":sealed", bad: true},
		{data: "1:sealed:sealed", bad: true},
		{data: "1:SEALED", bad: true},
		{data: "1:seal", bad: true},
		{data: "abc", bad: true},
		{data: "0x10", bad: true},
	} {
		next, sealed, empty, err := parseRange([]byte(c.data))
		if c.bad {
			if err == nil {
				t.Errorf("parseRange(%q) = (%d, %v, %v), want an error", c.data, next, sealed, empty)
			}
			continue
		}
		if err != nil || next != c.next || sealed != c.sealed || empty != c.empty {
			t.Errorf("parseRange(%q) = (%d, %v, %v, %v), want (%d, %v, %v, nil)",
				c.data, next, sealed, empty, err, c.next, c.sealed, c.empty)
		}
	}
}

func TestFormatRange(t *testing.T) {
	for _, c := range []struct {
		next   int64
		sealed bool
		want   string
	}{
		{0, false, "0"},
		{1200, false, "1200"},
		{1200, true, "1200:sealed"},
		{math.MaxInt64, true, "9223372036854775807:sealed"},
	} {
		if got := string(formatRange(c.next, c.sealed)); got != c.want {
			t.Errorf("formatRange(%d, %v) = %q, want %q", c.next, c.sealed, got, c.want)
		}
	}
}

// FuzzParseRange: parsing never panics, anything accepted holds a value
// that formats back to the same data (up to leading zeros), and every
// formatted value parses back.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"", "0", "1200", "1200:sealed", "007", "-1", ":sealed", "9223372036854775808"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		next, sealed, empty, err := parseRange(data)
		if err != nil || empty {
			return
		}
		if next < 0 {
			t.Fatalf("parseRange(%q) accepted a negative value %d", data, next)
		}
		again, againSealed, _, err := parseRange(formatRange(next, sealed))
		if err != nil || again != next || againSealed != sealed {
			t.Fatalf("%q: round trip through %q gave (%d, %v, %v)", data, formatRange(next, sealed), again, againSealed, err)
		}
		trimmed := string(data)
		for len(trimmed) > 1 && trimmed[0] == '0' && trimmed[1] >= '0' && trimmed[1] <= '9' {
			trimmed = trimmed[1:]
		}
		if got := string(formatRange(next, sealed)); got != trimmed {
			t.Fatalf("parseRange(%q) accepted data that formats as %q", data, got)
		}
	})
}
