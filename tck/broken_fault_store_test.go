package tck_test

// Broken variants for sound listings, options and capabilities, each with
// a probe (see broken_fault_test.go). They use only the driver's
// interfaces; the probe is what they add to the wrappers of
// broken_wrappers_test.go.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/tck"
)

func init() {
	typed := func(v variant, lax bool) variant {
		suite := v.suite
		v.suite = func(t *testing.T) tck.Suite {
			s := suite(t)
			s.Factory = typedFactory(lax)
			s.MalformedOptions = map[string]string{"tck.count": "many"}
			return s
		}
		return v
	}
	sound := func(d memDriver, _ *shared) driver.Store { return d }
	unknown := faulty("unknown-beside-name", "Options/UnknownWithValid", sound, probeUnknownBesideName)
	unknown.suite = func(t *testing.T) tck.Suite {
		s := faultSuite(sound)(t)
		s.Factory = acceptUnknownBesideName
		return s
	}
	unknown.target.factory = acceptUnknownBesideName
	malformed := typed(faulty("malformed-accepted", "Options/MalformedValue", sound, probeMalformed), true)
	malformed.target.factory, malformed.sound.factory = typedFactory(true), typedFactory(false)
	variants = append(variants,
		faulty("current-creates", "Ranges/CurrentCreatesNothing",
			func(d memDriver, _ *shared) driver.Store { return currentCreates{d} }, probeCurrentCreates),
		faulty("keys-skip-sealed", "Ranges/KeysSealed",
			func(d memDriver, _ *shared) driver.Store { return keysSkipSealed{d} }, probeKeysSkipSealed),
		faulty("bare-store", "Capabilities/AtLeastOne",
			func(d memDriver, _ *shared) driver.Store { return bareStore{d} }, probeBare),
		faulty("ping-ignores-context", "Capabilities/Ping",
			func(d memDriver, _ *shared) driver.Store { return pingIgnoresContext{d} }, probePingIgnoresContext),
		unknown,
		// The memory driver has no option with a format; these two give it
		// one (tck.count, a count) so that the malformed-value check runs
		// on a sound factory and on a lax one.
		typed(variant{name: "sound-typed-options", checks: []string{"Options/MalformedValue"}, suite: faultSuite(sound)}, false),
		malformed,
	)
}

// currentCreates creates a missing key at 0 when Current reads it.
type currentCreates struct{ memDriver }

func (s currentCreates) Current(ctx context.Context, key string) (int64, bool, error) {
	next, sealed, err := s.memDriver.Current(ctx, key)
	if err == nil && next == 0 && !sealed {
		err = s.memDriver.Init(ctx, key, 0)
	}
	return next, sealed, err
}

// keysSkipSealed leaves sealed keys out of Keys (which the portable layer
// lists through: memDriver has no driver.RangeLister).
type keysSkipSealed struct{ memDriver }

func (s keysSkipSealed) Keys(ctx context.Context) ([]string, error) {
	keys, err := s.memDriver.Keys(ctx)
	if err != nil {
		return nil, err
	}
	out := []string{}
	for _, k := range keys {
		if _, sealed, err := s.memDriver.Current(ctx, k); err != nil {
			return nil, err
		} else if !sealed {
			out = append(out, k)
		}
	}
	return out, nil
}

// acceptUnknownBesideName checks unknown keys only when no name is given.
func acceptUnknownBesideName(options map[string]string) (driver.Store, error) {
	if name, ok := options["name"]; ok {
		return openMemory(map[string]string{"name": name})
	}
	return openMemory(options)
}

// bareStore implements no capability: only Close.
type bareStore struct{ s memDriver }

func (b bareStore) Close() error { return b.s.Close() }

// pingIgnoresContext answers Ping whatever its context.
type pingIgnoresContext struct{ memDriver }

func (pingIgnoresContext) Ping(context.Context) error { return nil }

// typedFactory opens a memory store and reads one more option, tck.count,
// a count; a lax factory accepts any value of it.
func typedFactory(lax bool) driver.Factory {
	return func(options map[string]string) (driver.Store, error) {
		o := driver.NewOptions(options)
		name := o.String("name", "")
		if lax {
			o.String("tck.count", "0")
		} else {
			o.Int("tck.count", 0, 0, math.MaxInt)
		}
		if err := o.Err(); err != nil {
			return nil, err
		}
		return openMemory(map[string]string{"name": name})
	}
}

// Probes (see checkProbe).

func probeCurrentCreates(ctx context.Context, tg target) (string, error) {
	d, _ := tg.open()
	defer d.Close()
	r := d.(driver.RangeStore)
	if _, _, err := r.Current(ctx, "k"); err != nil {
		return "", err
	}
	keys, err := r.Keys(ctx)
	return fmt.Sprintf("Keys after Current of a missing key: %q", keys), err
}

func probeKeysSkipSealed(ctx context.Context, tg target) (string, error) {
	d, _ := tg.open()
	defer d.Close()
	r := d.(driver.RangeStore)
	if _, err := r.Seal(ctx, "k"); err != nil {
		return "", err
	}
	keys, err := r.Keys(ctx)
	return fmt.Sprintf("Keys with k sealed: %q", keys), err
}

// probeUnknownBesideName: the factory with a valid and an unknown key.
func probeUnknownBesideName(_ context.Context, tg target) (string, error) {
	d, err := tg.openFactory(map[string]string{"name": freshName("probe-options"), "bogus": "1"})
	if err == nil {
		d.Close()
		return "accepted", nil
	}
	if !errors.Is(err, driver.ErrInvalidArgument) {
		return "", err
	}
	return "refused", nil
}

func probeMalformed(_ context.Context, tg target) (string, error) {
	d, err := tg.openFactory(map[string]string{"name": freshName("probe-malformed"), "tck.count": "many"})
	if err == nil {
		d.Close()
		return "tck.count=many accepted", nil
	}
	return fmt.Sprintf("refused: %v", err), nil
}

func probePingIgnoresContext(ctx context.Context, tg target) (string, error) {
	d, _ := tg.open()
	defer d.Close()
	ended, cancel := context.WithCancel(ctx)
	cancel()
	return fmt.Sprintf("Ping with a cancelled context: %v", d.(driver.Pinger).Ping(ended)), nil
}

func probeBare(_ context.Context, tg target) (string, error) {
	d, _ := tg.open()
	defer d.Close()
	_, r := d.(driver.RangeStore)
	_, s := d.(driver.SlotLeaseStore)
	_, k := d.(driver.Locker)
	return fmt.Sprintf("capabilities: ranges %v, slots %v, locks %v", r, s, k), nil
}
