package zookeeper

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
)

// testSlotCrowd: stores acquiring in one namespace at once all get slots of
// their own with few compare-and-sets: an acquire that loses a slot to
// another searches on from a point of its own (driver.SearchStart) rather
// than racing every other for the next lowest slot, which took about n²/2
// multis for n acquirers (a fleet restart's cost grew with its square).
func testSlotCrowd(t *testing.T, addr string) {
	const n = 64
	w := &wire{}
	root := randomRoot()
	sts := make([]*driverStore, n)
	for i := range sts {
		sts[i] = openTest(t, testOptions(addr, map[string]string{"root": root}), w)
		warmClock(t, sts[i]) // a session's first acquire makes its clock node with a multi
	}
	ns := driver.Namespace{Name: "crowd", Limit: 4 * n, Tolerance: time.Second}
	// The namespace exists before the crowd comes (its creation is a
	// multi too).
	l := mustAcquire(t, sts[0], slotRequest(ns, "first", "x"))
	if err := sts[0].Release(t.Context(), l, -1); err != nil {
		t.Fatal(err)
	}
	before := w.requests(opMulti)
	leases, errs := make([]driver.Lease, n), make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, s := range sts {
		wg.Go(func() {
			<-start
			leases[i], errs[i] = s.Acquire(t.Context(), slotRequest(ns, fmt.Sprintf("owner-%d", i), "x"))
		})
	}
	close(start)
	wg.Wait()
	holder := map[int]int{}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("acquire %d: %v", i, err)
		}
		if j, dup := holder[leases[i].Slot]; dup {
			t.Fatalf("slot %d given to owner-%d and owner-%d", leases[i].Slot, j, i)
		}
		holder[leases[i].Slot] = i
	}
	multis := w.requests(opMulti) - before
	t.Logf("%d acquires at once sent %d multis", n, multis)
	if multis > 4*n {
		t.Errorf("%d acquires at once sent %d multis, want at most %d", n, multis, 4*n)
	}
}
