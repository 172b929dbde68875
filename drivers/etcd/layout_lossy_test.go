package etcd

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
)

// TestKeepLayoutLostAnswers: KeepLayout through a store whose transactions
// lose every third answer (applied, then retried) returns the layout it
// recorded, never "" for one lost answer: the layout decides the IDs a
// generator issues. A mutant that returned "" after a retry's backoff
// went unseen (make mutants-etcd).
func TestKeepLayoutLostAnswers(t *testing.T) {
	var lost atomic.Int64
	lossy := openLossy(t, freshPrefix("layoutlossy"), &lost)
	ctx := t.Context()
	for i := range 6 {
		ns := driver.Namespace{Name: fmt.Sprintf("ns%d", i), Limit: 4, Tolerance: time.Second}
		want := fmt.Sprintf("layout %d", i)
		for range 2 { // recorded, then read back
			var got string
			err := lossy.Raw(func(d driver.Store) error {
				var err error
				got, err = d.(driver.LayoutKeeper).KeepLayout(ctx, ns, want)
				return err
			})
			if err != nil || got != want {
				t.Fatalf("KeepLayout(%s, %q) with lost answers = %q, %v; want %q", ns.Name, want, got, err, want)
			}
		}
	}
	if lost.Load() == 0 {
		t.Fatal("no answer was lost")
	}
	t.Logf("%d answers lost", lost.Load())
}
