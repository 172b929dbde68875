package etcd

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/etcdtest"
	"github.com/cosid-go/store/internal/testing/netproxy"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// TestNextFrozenMemberConcurrent: one member of three frozen (its proxy
// holds every byte), six callers each calling Next on a key of its own
// for 8 s. The calls sent to the frozen member are cut by their attempt
// deadline, their outcome unknown, and sent to another: every Next
// succeeds, and each key's ranges follow each other without overlap (a
// write cut, then applied, must not hand out its block again). It logs
// the latencies: a frozen member costs a call its attempt deadline, which
// its cuts must not keep widening (latency.cut).
func TestNextFrozenMemberConcurrent(t *testing.T) {
	c := etcdtest.Start(t, 3)
	proxy := netproxy.New(t, strings.TrimPrefix(c.Members[0].ClientURL, "http://"))
	eps := []string{proxy.Addr(), c.Members[1].ClientURL, c.Members[2].ClientURL}
	st, err := OpenStore(t.Context(), &Options{Endpoints: eps, Prefix: freshPrefix("frozenconc")}, store.WithTimeout(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	d := rawdriver.Of(st).(*driverStore)
	const callers, step = 6, 10
	last := make([]store.Range, callers)
	for i := range 20 {
		r, err := st.Ranges().Next(context.Background(), fmt.Sprint("k", i%callers), step)
		if err != nil {
			t.Fatal(err)
		}
		last[i%callers] = r
	}
	proxy.Freeze()
	defer proxy.Thaw()
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	start := time.Now()
	for g := range callers {
		wg.Go(func() {
			for time.Since(start) < 8*time.Second {
				t0 := time.Now()
				r, err := st.Ranges().Next(context.Background(), fmt.Sprint("k", g), step)
				if err != nil {
					t.Error(err)
					return
				}
				if r.Start < last[g].End || r.Len() != step {
					t.Errorf("key k%d: Next gave %v after %v", g, r, last[g])
					return
				}
				last[g] = r
				mu.Lock()
				lat = append(lat, time.Since(t0))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(lat) == 0 {
		t.Fatal("no Next returned")
	}
	slices.Sort(lat)
	var slow int
	for _, l := range lat {
		if l > time.Second {
			slow++
		}
	}
	t.Logf("%d Nexts in 8s; p50 %v p90 %v p99 %v max %v; over 1s: %d; deadline now %v",
		len(lat), lat[len(lat)/2], lat[len(lat)*9/10], lat[len(lat)*99/100], lat[len(lat)-1], slow, d.latency.deadline())
}
