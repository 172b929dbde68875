package tck_test

import (
	"context"
	"sync"

	"github.com/cosid-go/store/driver"
)

// A gap in a key's ranges is allowed only where a write's outcome was
// unknown (see driver.RangeStore.Next): a driver that skips values and
// says so (UnknownOutcome, as the etcd driver does when it cuts a slow
// round trip short and tries again) passes Ranges/NeverTwice; one that
// skips them silently does not.
func init() {
	variants = append(variants,
		variant{name: "gap-reported", checks: []string{"Ranges/NeverTwice"}, suite: wrapSuite(func(s memDriver) driver.Store { return &gapRange{memDriver: s, report: true} })},
		variant{name: "gap-silent", checks: []string{"Ranges/NeverTwice"}, broken: true, suite: wrapSuite(func(s memDriver) driver.Store { return &gapRange{memDriver: s} })},
	)
}

// gapRange throws away every fifth range it takes, reporting it as a write
// whose outcome was unknown if report is set.
type gapRange struct {
	memDriver
	report bool
	mu     sync.Mutex
	calls  int
	notify func(driver.Event)
}

func (d *gapRange) Notify(f func(driver.Event)) { d.notify = f }

func (d *gapRange) Next(ctx context.Context, key string, step int64) (int64, error) {
	d.mu.Lock()
	d.calls++
	skip := d.calls%5 == 0
	d.mu.Unlock()
	if skip {
		start, err := d.memDriver.Next(ctx, key, step)
		if err != nil {
			return 0, err
		}
		if d.report && d.notify != nil {
			d.notify(driver.Event{Kind: driver.UnknownOutcome, Key: key, Value: start, Count: step})
		}
	}
	return d.memDriver.Next(ctx, key, step)
}
