package tck

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

// The seal races (D132): stores acquire, renew and release terms in a
// namespace while another store seals it, then reads its slots, as a
// migration does. Every term and renewal a store was granted must show in
// what that read saw: none may start or grow after the seal returned.
// They run at the driver (through Raw), where a seal checked apart from
// the write it guards would let a term in.

// checkSealRace plays 20 rounds, each in a namespace of its own: one
// goroutine per racer (two stores) takes a term, renews it twice and
// releases it, in a loop, until the namespace is sealed; once every racer
// was granted something, a third store seals the namespace and lists its
// slots. Each lease a racer got (from Acquire or Renew) must be covered by
// that listing: its slot listed with a higher fence, or the same fence and
// a ceiling at least the lease's. A racer's call after the seal returned
// must give ErrSealed (each racer stops at its first ErrSealed, so a racer
// that never stops fails the round at the bound).
func checkSealRace(e *env) {
	acquires, renews := e.sealRace("seal-race", 20, true)
	if acquires == 0 || renews == 0 {
		e.t.Errorf("the seal stopped %d Acquires and %d Renews: the race proved little", acquires, renews)
	}
}

// checkSealRaceUncreated is checkSealRace with the seal racing the
// namespace's creation: each round's namespace does not exist yet, and the
// seal runs as the racers start, without waiting for them, so the seal's
// create and the first Acquire's meet. The same checks apply.
func checkSealRaceUncreated(e *env) { e.sealRace("seal-race-new", 40, false) }

// sealRace plays the rounds and returns how many Acquires and Renews the
// seal stopped.
func (e *env) sealRace(prefix string, rounds int, wait bool) (sealedAcquires, sealedRenews int) {
	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Minute)
	defer cancel()
	err := rawAll([]*store.Store{e.open(), e.open(), e.open()}, func(ds []driver.Store) error {
		racers := []driver.SlotLeaseStore{ds[0].(driver.SlotLeaseStore), ds[1].(driver.SlotLeaseStore)}
		sealer := ds[2].(driver.SlotLeaseStore)
		for round := range rounds {
			a, r, err := sealRound(ctx, racers, sealer, fmt.Sprintf("%s-%d", prefix, round), wait)
			if err != nil {
				return fmt.Errorf("round %d: %w", round, err)
			}
			sealedAcquires += a
			sealedRenews += r
		}
		return nil
	})
	e.fatalIf(err, "seal race")
	e.t.Logf("%d rounds: the seal stopped %d Acquires and %d Renews", rounds, sealedAcquires, sealedRenews)
	return sealedAcquires, sealedRenews
}

// rawAll calls f with the drivers of stores, each reached through Raw and
// used only while f runs.
func rawAll(stores []*store.Store, f func([]driver.Store) error) error {
	ds := make([]driver.Store, 0, len(stores))
	var step func(i int) error
	step = func(i int) error {
		if i == len(stores) {
			return f(ds)
		}
		return stores[i].Raw(func(d driver.Store) error {
			ds = append(ds, d)
			return step(i + 1)
		})
	}
	return step(0)
}

// sealRound plays a round in namespace name; with wait, the seal waits until
// every racer was granted something. It returns how the racers stopped.
func sealRound(ctx context.Context, racers []driver.SlotLeaseStore, sealer driver.SlotLeaseStore, name string, wait bool) (acquires, renews int, err error) {
	ns := driver.Namespace{Name: name, Limit: len(racers), Tolerance: time.Second}
	var mu sync.Mutex
	var granted []driver.Lease
	var errs []error
	var stops []string
	active := make(chan struct{}, len(racers))
	var wg sync.WaitGroup
	for i, st := range racers {
		wg.Go(func() {
			req := driver.AcquireRequest{Namespace: ns, Owner: fmt.Sprintf("racer-%d", i), Incarnation: "run", TTL: time.Minute}
			signalled := false
			grant := func(l driver.Lease) {
				mu.Lock()
				granted = append(granted, l)
				mu.Unlock()
				if !signalled {
					signalled = true
					active <- struct{}{}
				}
			}
			stop := func(how string, err error) {
				mu.Lock()
				defer mu.Unlock()
				if errors.Is(err, driver.ErrSealed) {
					stops = append(stops, how)
				} else {
					errs = append(errs, fmt.Errorf("racer %d: %s: %w", i, how, err))
				}
			}
			for ctx.Err() == nil {
				l, err := st.Acquire(ctx, req)
				if err != nil {
					stop("Acquire", err)
					return
				}
				grant(l)
				for range 2 {
					if l, err = st.Renew(ctx, l); err != nil {
						if errors.Is(err, driver.ErrSealed) {
							// Released, as a holder that stops does.
							_ = st.Release(ctx, l, -1)
						}
						stop("Renew", err)
						return
					}
					grant(l)
				}
				if err := st.Release(ctx, l, -1); err != nil {
					stop("Release", err)
					return
				}
			}
		})
	}
	for range racers {
		if !wait {
			break
		}
		select {
		case <-active:
		case <-ctx.Done():
		}
	}
	var infos []driver.SlotInfo
	err = sealer.SealNamespace(ctx, ns.Name)
	if err == nil {
		infos, err = sealer.Slots(ctx, ns.Name)
	}
	wg.Wait()
	if err != nil {
		return 0, 0, fmt.Errorf("seal and read: %w", err)
	}
	if err := errors.Join(errs...); err != nil {
		return 0, 0, err
	}
	if ctx.Err() != nil {
		return 0, 0, fmt.Errorf("racers still running at the bound: %w", ctx.Err())
	}
	read := map[int]driver.SlotInfo{}
	for _, in := range infos {
		read[in.Slot] = in
	}
	for _, l := range granted {
		in, ok := read[l.Slot]
		switch {
		case !ok:
			return 0, 0, fmt.Errorf("slot %d: fence %d was granted, but the read after the seal does not list the slot", l.Slot, l.Fence)
		case in.Fence < l.Fence:
			return 0, 0, fmt.Errorf("slot %d: term of fence %d started after the seal (the read saw fence %d)", l.Slot, l.Fence, in.Fence)
		case in.Fence == l.Fence && in.Ceiling < l.Ceiling:
			return 0, 0, fmt.Errorf("slot %d: fence %d renewed to ceiling %d after the seal (the read saw ceiling %d)",
				l.Slot, l.Fence, l.Ceiling, in.Ceiling)
		}
	}
	for _, how := range stops {
		if how == "Acquire" {
			acquires++
		} else {
			renews++
		}
	}
	return acquires, renews, nil
}
