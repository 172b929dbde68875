package tck

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/cosid-go/store"
)

// checkSlotChurn: owners of four stores, twice as many as the namespace's
// three slots, take terms, renew them and release them, or leave every
// fourth to expire (a crash) for another to take over, in a loop. Each
// searches from its own point, and with three slots those points collide,
// so acquirers race for the same slot, one never used, released or
// expired. Every term must be its slot's only: no slot and fence handed to
// two owners, a slot's fences one apart with no term missing, and each
// term's floor at or above the highest ceiling the term before it
// reported (so no two terms of a slot issue the same timestamp).
func checkSlotChurn(e *env) {
	const stores, workers, rounds = 4, 6, 8
	ns := e.namespace("churn", 3)
	var sts []*store.Store
	for range stores {
		sts = append(sts, e.open(store.WithTimeout(e.scaled(60*time.Second))))
	}
	type term struct {
		owner   string
		first   store.Lease
		ceiling int64 // the highest any of its leases reported
	}
	var mu sync.Mutex
	terms := map[[2]int64]*term{} // slot, fence
	record := func(l store.Lease, owner string) {
		mu.Lock()
		defer mu.Unlock()
		k := [2]int64{int64(l.Slot), l.Fence}
		tm := terms[k]
		if tm == nil {
			terms[k] = &term{owner: owner, first: l, ceiling: l.Ceiling}
			return
		}
		if tm.owner != owner {
			e.errorf("slot %d fence %d handed to %s and to %s", l.Slot, l.Fence, tm.owner, owner)
		}
		tm.ceiling = max(tm.ceiling, l.Ceiling)
	}
	var wg sync.WaitGroup
	for w := range workers {
		st := sts[w%stores]
		wg.Go(func() {
			for i := range rounds {
				owner, opts, crash := fmt.Sprintf("o%d", w), e.long(), i%4 == 3
				if crash {
					// An owner of its own: the next round's Acquire must
					// not get this term back (same owner, incarnation).
					owner, opts = fmt.Sprintf("o%d-crash%d", w, i), store.AcquireOptions{TTL: e.ttl}
				}
				l, err := st.Slots().Acquire(e.ctx, ns, owner, opts)
				for errors.Is(err, store.ErrExhausted) && e.ctx.Err() == nil {
					time.Sleep(5 * time.Millisecond) // a backoff: every slot was held
					l, err = st.Slots().Acquire(e.ctx, ns, owner, opts)
				}
				if err != nil {
					e.errorf("Acquire by %s: %v", owner, err)
					return
				}
				record(l, owner)
				if l, err = st.Slots().Renew(e.ctx, l); err != nil {
					if !crash || !errors.Is(err, store.ErrLeaseLost) {
						e.errorf("Renew by %s: %v", owner, err)
						return
					}
					continue
				}
				record(l, owner)
				if crash {
					continue // left to expire and be taken over
				}
				if err := st.Slots().Release(e.ctx, l); err != nil {
					e.errorf("Release by %s: %v", owner, err)
					return
				}
			}
		})
	}
	wg.Wait()
	bySlot := map[int64][]*term{}
	for k, tm := range terms {
		bySlot[k[0]] = append(bySlot[k[0]], tm)
	}
	for slot, ts := range bySlot {
		sort.Slice(ts, func(i, j int) bool { return ts[i].first.Fence < ts[j].first.Fence })
		for i := 1; i < len(ts); i++ {
			prev, cur := ts[i-1], ts[i]
			if cur.first.Fence != prev.first.Fence+1 {
				e.t.Errorf("slot %d: fence %d (%s) follows fence %d (%s)", slot, cur.first.Fence, cur.owner, prev.first.Fence, prev.owner)
			}
			if cur.first.Floor < prev.ceiling {
				e.t.Errorf("slot %d: fence %d (%s) has floor %d, below the ceiling %d that fence %d (%s) reported",
					slot, cur.first.Fence, cur.owner, cur.first.Floor, prev.ceiling, prev.first.Fence, prev.owner)
			}
		}
	}
	if !e.t.Failed() && len(terms) != workers*rounds {
		e.t.Errorf("%d terms handed out, want %d (one per round)", len(terms), workers*rounds)
	}
}
