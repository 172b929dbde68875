package memory

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/tck"
)

// tckHarness opens stores on one named state; a name of its own per check
// keeps checks (and repeated runs, -count=n) apart.
type tckHarness struct{ name string }

var tckHarnesses atomic.Int64

func newTCKHarness(context.Context, *testing.T) (tck.Harness, error) {
	return tckHarness{name: fmt.Sprintf("tck-%d", tckHarnesses.Add(1))}, nil
}

func (h tckHarness) NewStore(context.Context) (driver.Store, error) {
	return Open(map[string]string{"name": h.name})
}

// Close has nothing to free: a named state lives as long as the program.
func (tckHarness) Close() error { return nil }

// notPersistent is why the Restart check skips: a state lives in the
// process, and nothing of it outlives the program.
const notPersistent = "a memory state lives in the process and ends with it"

func TestTCK(t *testing.T) {
	tck.Run(t, tck.Suite{
		NewHarness: newTCKHarness,
		Ranges:     true, Slots: true, Locks: true,
		Factory:       Open,
		NotPersistent: notPersistent,
	})
}
