package tck

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// checkPurgeLiveLeaseRace: one store takes, renews and releases a lease in
// a loop (one term at a time, each live from its Acquire to its Release)
// while another purges in a loop, until 10 terms have ended and the purges
// have both gone through and been refused 10 times, within two minutes. A
// purge that deletes a live term shows as that term's Renew or Release
// giving ErrLeaseLost: nothing else ends it. A purge that fails with
// another error (a node changed under it) is allowed: it is a refusal,
// counted apart. It runs at the driver (through Raw), where driver.Purger
// makes its check of live terms with the deletion.
func checkPurgeLiveLeaseRace(e *env) {
	a, op := e.open(), e.open()
	needDriver[driver.Purger](e, op)
	e.fatalIf(rawAll([]*store.Store{a, op}, func(ds []driver.Store) error {
		purgeRace(e, ds[0].(driver.SlotLeaseStore), ds[1].(driver.Purger), 10, 2*time.Minute)
		return nil
	}), "purge race")
}

// purgeRace races slots against purger (checkPurgeLiveLeaseRace).
func purgeRace(e *env, slots driver.SlotLeaseStore, purger driver.Purger, want int, bound time.Duration) {
	t := e.t
	ctx, cancel := context.WithTimeout(e.ctx, bound)
	defer cancel()
	req := driver.AcquireRequest{
		Namespace: driver.Namespace{Name: "purge-race", Limit: 1, Tolerance: time.Second},
		Owner:     "racer", Incarnation: "run", TTL: time.Minute,
	}
	var mu sync.Mutex
	var terms, acquireErrs int
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			l, err := slots.Acquire(ctx, req)
			if err != nil {
				if ctx.Err() == nil {
					mu.Lock()
					acquireErrs++
					n := acquireErrs
					mu.Unlock()
					if n <= 3 {
						t.Logf("Acquire: %v", err)
					}
				}
				continue
			}
			r, err := slots.Renew(ctx, l)
			if err == nil {
				// With its last used timestamp: a next floor ahead of
				// the clock would hold every purge off (driver.Purger).
				err = slots.Release(ctx, r, r.Floor)
			}
			switch {
			case errors.Is(err, driver.ErrLeaseLost):
				t.Errorf("a purge ended the live term of fence %d (floor %d, ceiling %d): %v", l.Fence, l.Floor, l.Ceiling, err)
				cancel()
				return
			case err != nil && ctx.Err() == nil:
				t.Errorf("Renew or Release of fence %d: %v", l.Fence, err)
				cancel()
				return
			}
			mu.Lock()
			terms++
			mu.Unlock()
		}
	})
	var purged, locked, other int
	enough := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return purged >= want && locked >= want && terms >= want
	}
	for ctx.Err() == nil && !enough() {
		_, err := purger.Purge(ctx)
		switch {
		case err == nil:
			purged++
		case errors.Is(err, driver.ErrLocked):
			locked++
		case ctx.Err() == nil:
			if other++; other <= 3 {
				t.Logf("Purge: %v", err)
			}
		}
	}
	cancel()
	wg.Wait()
	t.Logf("%d purges went through, %d were refused with ErrLocked, %d failed otherwise; %d terms, %d failed acquires",
		purged, locked, other, terms, acquireErrs)
	if !enough() {
		t.Errorf("within %v: %d purges went through, %d were refused, %d terms; want %d of each: the race proved little",
			bound, purged, locked, terms, want)
	}
	if acquireErrs > terms {
		t.Errorf("%d acquires failed, %d terms went through", acquireErrs, terms)
	}
}
