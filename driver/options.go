package driver

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Options reads a driver's option map. Each getter declares a known key and
// returns its value or the default; Err then reports the first malformed
// value, or any key no getter asked for (with the list of known keys), so a
// typo is never silently ignored.
//
// Numbers and durations are read by one checked parser with bounds: a value
// outside them (an overflow included) is refused with its reason, never
// wrapped or clamped into something else.
type Options struct {
	m     map[string]string
	known []string
	err   error
}

// NewOptions wraps an option map; nil is an empty map.
func NewOptions(m map[string]string) *Options { return &Options{m: m} }

func (o *Options) lookup(key string) (string, bool) {
	o.known = append(o.known, key)
	v, ok := o.m[key]
	return v, ok
}

func (o *Options) fail(err error) {
	if o.err == nil {
		o.err = err
	}
}

// String returns the value of key, or def when it is not set.
func (o *Options) String(key, def string) string {
	if v, ok := o.lookup(key); ok {
		return v
	}
	return def
}

// Required returns the value of key, which must be set and not empty.
func (o *Options) Required(key string) string {
	v, ok := o.lookup(key)
	if !ok || v == "" {
		o.fail(&optionError{fmt.Sprintf("option %q is required", key)})
	}
	return v
}

// Duration parses key with ParseDuration within [min, max].
func (o *Options) Duration(key string, def, min, max time.Duration) time.Duration {
	v, ok := o.lookup(key)
	if !ok {
		return def
	}
	d, err := ParseDuration(v, min, max)
	if err != nil {
		o.fail(&OptionError{Key: key, Value: v, Reason: err.Error()})
		return def
	}
	return d
}

// Int parses key with ParseInt within [min, max].
func (o *Options) Int(key string, def, min, max int) int {
	v, ok := o.lookup(key)
	if !ok {
		return def
	}
	n, err := ParseInt(v, int64(min), int64(max))
	if err != nil {
		o.fail(&OptionError{Key: key, Value: v, Reason: err.Error()})
		return def
	}
	return int(n)
}

// ParseInt reads a decimal integer (spaces around it allowed) that must lie
// within [min, max]. Its error is the reason alone, for the caller to put
// after the value it names.
func ParseInt(s string, min, max int64) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if errors.Is(err, strconv.ErrRange) || err == nil && (n < min || n > max) {
		return 0, errors.New(bounds(min, max, strconv.FormatInt))
	}
	if err != nil {
		return 0, errors.New("not an integer")
	}
	return n, nil
}

// ParseDuration reads a duration as time.ParseDuration does ("500ms",
// "3s"), or a bare integer as milliseconds, that must lie within [min,
// max]. Its error is the reason alone.
func ParseDuration(s string, min, max time.Duration) (time.Duration, error) {
	t := strings.TrimSpace(s)
	out := errors.New(bounds(min, max, func(d time.Duration, _ int) string { return FormatDuration(d) }))
	var d time.Duration
	if n, err := strconv.ParseInt(t, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if err != nil || n > math.MaxInt64/int64(time.Millisecond) || n < math.MinInt64/int64(time.Millisecond) {
			return 0, out
		}
		d = time.Duration(n) * time.Millisecond
	} else if d, err = time.ParseDuration(t); err != nil {
		if strings.TrimLeft(t, "+-0123456789.") != t && validUnits(t) {
			return 0, out // digits and units, too many of them: an overflow
		}
		return 0, errors.New("not a duration (e.g. 500ms, 3s)")
	}
	if d < min || d > max {
		return 0, out
	}
	return d, nil
}

// validUnits reports whether s is made of numbers and duration units only,
// so that time.ParseDuration refused it for its size.
func validUnits(s string) bool {
	s = strings.TrimLeft(s, "+-")
	for s != "" {
		i := len(s) - len(strings.TrimLeft(s, "0123456789."))
		j := len(s) - len(strings.TrimLeft(s[i:], "nsuµμmh")) - i
		if num := s[:i]; i == 0 || j == 0 || num == "." || strings.Count(num, ".") > 1 {
			return false
		}
		switch s[i : i+j] {
		case "ns", "us", "µs", "μs", "ms", "s", "m", "h":
		default:
			return false
		}
		s = s[i+j:]
	}
	return true
}

func bounds[T int64 | time.Duration](min, max T, format func(T, int) string) string {
	switch {
	case max == T(math.MaxInt64):
		return "must be at least " + format(min, 10)
	case min == T(math.MinInt64):
		return "must be at most " + format(max, 10)
	}
	return fmt.Sprintf("must be between %s and %s", format(min, 10), format(max, 10))
}

// FormatDuration writes d in its largest whole unit: 1h rather than 1h0m0s.
func FormatDuration(d time.Duration) string {
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if d != 0 && d%u.d == 0 {
			return strconv.FormatInt(int64(d/u.d), 10) + u.name
		}
	}
	return d.String()
}

// Err returns an error naming every unknown key and listing the known ones
// (a typo of a required key reads best so), or else the first missing or
// malformed value. Call it after every getter.
func (o *Options) Err() error {
	known := map[string]bool{}
	for _, k := range o.known {
		known[k] = true
	}
	var unknown []string
	for k := range o.m {
		if !known[k] {
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	if len(unknown) == 0 {
		return o.err
	}
	sort.Strings(unknown)
	names := append([]string(nil), o.known...)
	sort.Strings(names)
	return &optionError{fmt.Sprintf("unknown option %s (known: %s)", strings.Join(unknown, ", "), strings.Join(names, ", "))}
}

// OptionError is a refused option value: the key, the value and the
// reason. It is ErrInvalidArgument for errors.Is without appending that
// sentinel's text to a message that says it already.
//
// The value is printed through the same rule as Redact: never when the key
// looks secret (Redact's key list) or Secret is set, and with any secret
// Redact recognises inside it (a URL's password, PEM data) hidden
// otherwise; PEM data in the reason is hidden too.
type OptionError struct {
	Key    string
	Value  string
	Secret bool // the value is never printed, whatever the key
	Reason string
}

func (e *OptionError) Error() string {
	v := strconv.Quote(Redact(e.Value))
	if e.Secret || secretKey.MatchString(e.Key+"=") {
		v = "(redacted)"
	}
	// The reason may quote a pasted key, as another option's value or in a
	// file error that repeats it. (Only PEM data: a reason's own text, such
	// as a format "digest:user:password", is not a secret.)
	return fmt.Sprintf("option %q: value %s: %s", e.Key, v, hidePEM(e.Reason))
}

func (e *OptionError) Unwrap() error { return ErrInvalidArgument }

// optionError is a refused option map (an unknown or missing key).
type optionError struct{ msg string }

func (e *optionError) Error() string { return e.msg }
func (e *optionError) Unwrap() error { return ErrInvalidArgument }
