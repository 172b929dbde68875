package mysql

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/mysqltest"
)

// TestLockTurnsShortTimeout: stores with the shortest lock timeout
// (100ms, far below the server's one-second lock wait and idle bounds)
// take turns on one name while one of them goes silent again and again
// for longer than the timeout, on a loaded machine where confirmations
// come late. Each grant, as its Lock returns, must find every other hold
// still counted (not releasing) with its Lost closed, and a fence above
// every fence granted before while held.
func TestLockTurnsShortTimeout(t *testing.T) {
	t.Parallel()
	srv := mysqltest.Shared(t)
	database := srv.NewDatabase(t)
	opts := map[string]string{"lockTimeout": "100ms"}
	p := mysqltest.NewProxy(t, srv.Addr())
	stores := []*driverStore{openAt(t, p.Addr(), database, opts)}
	for range 2 {
		stores = append(stores, openAt(t, srv.Addr(), database, opts))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 6*time.Second)
	defer cancel()

	type holding struct {
		l         driver.Lock
		releasing bool
	}
	var (
		mu       sync.Mutex
		holds    = map[*holding]bool{}
		maxFence int64
		grants   int
		bad      []string
	)
	var wg sync.WaitGroup
	wg.Go(func() { // the first store's network goes silent past its timeout, again and again
		for ctx.Err() == nil {
			p.Freeze()
			silent := time.NewTimer(250 * time.Millisecond)
			select {
			case <-silent.C:
			case <-ctx.Done():
			}
			p.Thaw()
			pause := time.NewTimer(400 * time.Millisecond)
			select {
			case <-pause.C:
			case <-ctx.Done():
			}
		}
	})
	for i, s := range stores {
		wg.Go(func() {
			for ctx.Err() == nil {
				lctx, lcancel := context.WithTimeout(ctx, time.Second)
				l, err := s.Lock(lctx, "x", "s", true)
				lcancel()
				if err != nil {
					continue
				}
				h := &holding{l: l}
				mu.Lock()
				if !closed(l.Lost()) {
					grants++
					for o := range holds {
						if !o.releasing && !closed(o.l.Lost()) {
							bad = append(bad, fmt.Sprintf("granted fence %d while fence %d was held with Lost open", l.Fence(), o.l.Fence()))
						}
					}
					if l.Fence() <= maxFence {
						bad = append(bad, fmt.Sprintf("fence %d granted after fence %d", l.Fence(), maxFence))
					}
					maxFence = max(maxFence, l.Fence())
				}
				holds[h] = true
				mu.Unlock()
				if i == 0 {
					// The silent store holds across a silence now and then.
					hold := time.NewTimer(150 * time.Millisecond)
					select {
					case <-hold.C:
					case <-l.Lost():
					}
					hold.Stop()
				}
				mu.Lock()
				h.releasing = true
				mu.Unlock()
				uctx, ucancel := context.WithTimeout(context.Background(), time.Second)
				_ = l.Unlock(uctx) // may find the hold lost: that is the point
				ucancel()
				mu.Lock()
				delete(holds, h)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	p.Thaw()
	if len(bad) > 0 {
		t.Fatalf("%d violations in %d grants, first: %s", len(bad), grants, bad[0])
	}
	if grants < 10 {
		t.Fatalf("only %d grants in 6s: the turns did not run", grants)
	}
	t.Logf("%d grants, highest fence %d", grants, maxFence)
}
