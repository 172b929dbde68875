package driver

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Options reads a driver's option map. Each getter declares a known key and
// returns its value or the default; Err then reports the first malformed
// value, or any key no getter asked for (with the list of known keys), so a
// typo is never silently ignored.
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

func (o *Options) fail(key, value, why string) {
	if o.err == nil {
		o.err = &optionError{fmt.Sprintf("option %q: value %q: %s", key, value, why)}
	}
}

// String returns the value of key, or def when it is not set.
func (o *Options) String(key, def string) string {
	if v, ok := o.lookup(key); ok {
		return v
	}
	return def
}

// Duration parses key with time.ParseDuration (a bare integer is taken as
// milliseconds); it must not be negative.
func (o *Options) Duration(key string, def time.Duration) time.Duration {
	v, ok := o.lookup(key)
	if !ok {
		return def
	}
	s := strings.TrimSpace(v)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			o.fail(key, v, "must not be negative")
			return def
		}
		return time.Duration(n) * time.Millisecond
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		o.fail(key, v, "not a duration (e.g. 500ms, 3s)")
		return def
	}
	if d < 0 {
		o.fail(key, v, "must not be negative")
		return def
	}
	return d
}

// Int parses key as a decimal integer that must not be negative.
func (o *Options) Int(key string, def int) int {
	v, ok := o.lookup(key)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		o.fail(key, v, "not an integer")
		return def
	}
	if n < 0 {
		o.fail(key, v, "must not be negative")
		return def
	}
	return n
}

// Err returns the first malformed value, or an error naming every unknown
// key and listing the known ones. Call it after every getter.
func (o *Options) Err() error {
	if o.err != nil {
		return o.err
	}
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
		return nil
	}
	sort.Strings(unknown)
	names := append([]string(nil), o.known...)
	sort.Strings(names)
	return &optionError{fmt.Sprintf("unknown option %s (known: %s)", strings.Join(unknown, ", "), strings.Join(names, ", "))}
}

// optionError is a rejected option. It is ErrInvalidArgument for errors.Is
// without appending that sentinel's text to a message that says it already.
type optionError struct{ msg string }

func (e *optionError) Error() string { return e.msg }
func (e *optionError) Unwrap() error { return ErrInvalidArgument }
