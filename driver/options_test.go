package driver_test

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
)

// TestOptionValues pins what a user reads for each refused number or
// duration: the key, the value and the reason; a value out of bounds (an
// overflow included) is refused, never wrapped or clamped.
func TestOptionValues(t *testing.T) {
	ints := []struct{ v, want string }{
		{"7", "7"},
		{" 7 ", "7"},
		{"100", "100"},
		{"-1", `option "n": value "-1": must be between 0 and 100`},
		{"101", `option "n": value "101": must be between 0 and 100`},
		{"99999999999", `option "n": value "99999999999": must be between 0 and 100`},
		{"9223372036854775808", `option "n": value "9223372036854775808": must be between 0 and 100`},
		{"-9223372036854775809", `option "n": value "-9223372036854775809": must be between 0 and 100`},
		{"many", `option "n": value "many": not an integer`},
		{"1.5", `option "n": value "1.5": not an integer`},
		{"", `option "n": value "": not an integer`},
	}
	for _, c := range ints {
		o := driver.NewOptions(map[string]string{"n": c.v})
		got := o.Int("n", 42, 0, 100)
		if err := o.Err(); err != nil {
			if err.Error() != c.want || !errors.Is(err, driver.ErrInvalidArgument) || got != 42 {
				t.Errorf("Int(%q) = %d, %v; want the default and %s", c.v, got, err, c.want)
			}
		} else if strconv.Itoa(got) != c.want {
			t.Errorf("Int(%q) = %d, want %s", c.v, got, c.want)
		}
	}
	durs := []struct{ v, want string }{
		{"500ms", "500ms"},
		{"3s", "3s"},
		{"250", "250ms"}, // a bare integer is milliseconds
		{"1h", "1h0m0s"},
		{"0", `option "d": value "0": must be between 1ms and 1h`},
		{"-1s", `option "d": value "-1s": must be between 1ms and 1h`},
		{"2h", `option "d": value "2h": must be between 1ms and 1h`},
		{"9223372036855", `option "d": value "9223372036855": must be between 1ms and 1h`},
		{"99999999999999999999", `option "d": value "99999999999999999999": must be between 1ms and 1h`},
		{"9999999999h", `option "d": value "9999999999h": must be between 1ms and 1h`},
		{"1h9999999999999m", `option "d": value "1h9999999999999m": must be between 1ms and 1h`},
		{"soon", `option "d": value "soon": not a duration (e.g. 500ms, 3s)`},
		{"1 s", `option "d": value "1 s": not a duration (e.g. 500ms, 3s)`},
		{"5x", `option "d": value "5x": not a duration (e.g. 500ms, 3s)`},
		{"1.5.5h", `option "d": value "1.5.5h": not a duration (e.g. 500ms, 3s)`},
		{".h", `option "d": value ".h": not a duration (e.g. 500ms, 3s)`},
	}
	for _, c := range durs {
		o := driver.NewOptions(map[string]string{"d": c.v})
		got := o.Duration("d", 7*time.Second, time.Millisecond, time.Hour)
		if err := o.Err(); err != nil {
			if err.Error() != c.want || !errors.Is(err, driver.ErrInvalidArgument) || got != 7*time.Second {
				t.Errorf("Duration(%q) = %v, %v; want the default and %s", c.v, got, err, c.want)
			}
		} else if got.String() != c.want {
			t.Errorf("Duration(%q) = %v, want %s", c.v, got, c.want)
		}
	}
	// One-sided bounds read as such.
	o := driver.NewOptions(map[string]string{"n": "-1"})
	o.Int("n", 0, 0, math.MaxInt)
	if err := o.Err(); err == nil || err.Error() != `option "n": value "-1": must be at least 0` {
		t.Errorf("Int below a lower bound only: %v", err)
	}
}

// TestRequired: a missing or empty required option is named, and the
// sentinel's text is not appended to a message that says it already.
func TestRequired(t *testing.T) {
	for _, m := range []map[string]string{nil, {"path": ""}} {
		o := driver.NewOptions(m)
		o.Required("path")
		err := o.Err()
		if err == nil || err.Error() != `option "path" is required` || !errors.Is(err, driver.ErrInvalidArgument) {
			t.Errorf("Required with %v: %v", m, err)
		}
	}
	e := &driver.OptionError{Key: "password", Value: "hunter2", Secret: true, Reason: "too short"}
	if got := e.Error(); got != `option "password": value (redacted): too short` {
		t.Errorf("a secret option error reads %q", got)
	}
}

// TestOptionErrorRedacts: an option error hides a value by the rule Redact
// uses, so a driver that forgets Secret leaks nothing Redact would hide.
func TestOptionErrorRedacts(t *testing.T) {
	for _, c := range []struct {
		key, value, want string
	}{
		{"sslpassword", "hunter2", `option "sslpassword": value (redacted): bad`},
		{"auth", "digest:alice:hunter2", `option "auth": value (redacted): bad`},
		{"tls.keyPassword", "hunter2", `option "tls.keyPassword": value (redacted): bad`},
		{"connString", "postgres://ids:hunter2@db/ids", `option "connString": value "postgres://ids:***@db/ids": bad`},
		{"hosts", "127.0.0.1:2181", `option "hosts": value "127.0.0.1:2181": bad`},
	} {
		e := &driver.OptionError{Key: c.key, Value: c.value, Reason: "bad"}
		if got := e.Error(); got != c.want {
			t.Errorf("%s=%s: error reads %q, want %q", c.key, c.value, got, c.want)
		}
	}
}

// FuzzOptionValue: whatever the value, a getter either returns a value
// within its bounds or refuses it, returning the default (nothing taken
// from it) with an error naming the key and the value.
func FuzzOptionValue(f *testing.F) {
	for _, s := range []string{"7", "-1", "99999999999", "9223372036854775808", "3s", "250", "1h9999999999999m", "soon", "", " 1ms", "1.5h", "+5", "0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		named := func(err error) {
			t.Helper()
			if !errors.Is(err, driver.ErrInvalidArgument) || !strings.Contains(err.Error(), `"k"`) ||
				!strings.Contains(err.Error(), strconv.Quote(v)) {
				t.Fatalf("value %q: error %v does not name the key and the value", v, err)
			}
		}
		o := driver.NewOptions(map[string]string{"k": v})
		n := o.Int("k", -7, -1000, 1000)
		if err := o.Err(); err != nil {
			named(err)
			if n != -7 {
				t.Fatalf("Int(%q) refused but returned %d", v, n)
			}
		} else if n < -1000 || n > 1000 {
			t.Fatalf("Int(%q) = %d, outside its bounds", v, n)
		}
		o = driver.NewOptions(map[string]string{"k": v})
		d := o.Duration("k", -7, 0, 24*time.Hour)
		if err := o.Err(); err != nil {
			named(err)
			if d != -7 {
				t.Fatalf("Duration(%q) refused but returned %v", v, d)
			}
		} else if d < 0 || d > 24*time.Hour {
			t.Fatalf("Duration(%q) = %v, outside its bounds", v, d)
		}
	})
}
