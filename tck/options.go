package tck

import (
	"errors"
	"maps"
	"strings"

	"github.com/cosid-go/store"
)

// checkUnknownWithValid: the factory accepts Suite.Options, and refuses them
// with one unknown key added, naming it: a known key beside it must not
// make the check lax.
func checkUnknownWithValid(e *env) {
	d, err := e.suite.Factory(maps.Clone(e.suite.Options))
	e.fatalIf(err, "the factory with Suite.Options %q", e.suite.Options)
	e.fatalIf(d.Close(), "closing the store opened with Suite.Options")

	const key = "tck.no-such-option"
	opts := maps.Clone(e.suite.Options)
	opts[key] = "1"
	d, err = e.suite.Factory(opts)
	if err == nil {
		e.t.Errorf("the factory accepted the unknown option %q given with valid ones (%q)", key, e.suite.Options)
		_ = d.Close() // the failure is reported; release the store
		return
	}
	e.wantIs(err, store.ErrInvalidArgument, "unknown option %q with valid ones", key)
	if !strings.Contains(err.Error(), key) {
		e.t.Errorf("the error for the unknown option %q does not name it: %v", key, err)
	}
}

// checkMalformedValue: the factory refuses each of Suite.MalformedOptions
// and Suite.MalformedValues, given with the valid Suite.Options, with an error naming the key and the
// value.
func checkMalformedValue(e *env) {
	if len(e.suite.MalformedOptions) == 0 && len(e.suite.MalformedValues) == 0 {
		e.t.Skip("no Suite.MalformedOptions: the driver names no option value it must refuse")
	}
	type bad struct{ key, value string }
	var all []bad
	for key, value := range e.suite.MalformedOptions {
		all = append(all, bad{key, value})
	}
	for key, values := range e.suite.MalformedValues {
		for _, value := range values {
			all = append(all, bad{key, value})
		}
	}
	for _, b := range all {
		key, value := b.key, b.value
		opts := maps.Clone(e.suite.Options)
		opts[key] = value
		d, err := e.suite.Factory(opts)
		if err == nil {
			e.t.Errorf("the factory accepted the malformed value %q of option %q", value, key)
			_ = d.Close() // the failure is reported; release the store
			continue
		}
		e.wantIs(err, store.ErrInvalidArgument, "option %q with the malformed value %q", key, value)
		if !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), value) {
			e.t.Errorf("the error for option %q with the malformed value %q does not name both: %v", key, value, err)
		}
	}
}

// checkOptionKeysExact: each key of Suite.Options, written with another
// case or with a space around it, is an unknown key: keys match exactly, so
// a typo is never taken for a key the driver knows.
func checkOptionKeysExact(e *env) {
	for key, value := range e.suite.Options {
		for _, other := range []string{strings.ToUpper(key), strings.ToLower(key), " " + key, key + " "} {
			if _, known := e.suite.Options[other]; known || other == key {
				continue
			}
			opts := maps.Clone(e.suite.Options)
			delete(opts, key)
			opts[other] = value
			d, err := e.suite.Factory(opts)
			if err == nil {
				e.t.Errorf("the factory accepted the option key %q, which is not %q "+
					"(see driver.Factory: keys match exactly, as written)", other, key)
				_ = d.Close() // the failure is reported; release the store
				continue
			}
			if errors.Is(err, store.ErrInvalidArgument) && !strings.Contains(err.Error(), other) {
				e.t.Errorf("the error for the unknown option key %q does not name it: %v", other, err)
			}
		}
	}
}

// checkMissingRequired: the factory refuses Suite.Options with one of
// Suite.RequiredOptions left out, wrapping ErrInvalidArgument and naming
// the key: a store must never open on a default the operator did not mean
// (an empty path, another database).
func checkMissingRequired(e *env) {
	if len(e.suite.RequiredOptions) == 0 {
		e.t.Skip("no Suite.RequiredOptions: the driver names no option it cannot open without")
	}
	for _, key := range e.suite.RequiredOptions {
		if _, ok := e.suite.Options[key]; !ok {
			e.t.Errorf("Suite.RequiredOptions names %q, which Suite.Options does not hold", key)
			continue
		}
		opts := maps.Clone(e.suite.Options)
		delete(opts, key)
		d, err := e.suite.Factory(opts)
		if err == nil {
			e.t.Errorf("the factory opened a store without the required option %q", key)
			_ = d.Close() // the failure is reported; release the store
			continue
		}
		e.wantIs(err, store.ErrInvalidArgument, "the required option %q left out", key)
		if !strings.Contains(err.Error(), key) {
			e.t.Errorf("the error for the required option %q left out does not name it: %v", key, err)
		}
	}
}
