package prefixdriver

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/cosid-go/store/driver"
	_ "github.com/cosid-go/store/drivers/memory"
	"github.com/cosid-go/store/tck"
)

// harness: every store wraps the same shared memory state under one prefix.
type harness struct{ name string }

func (h harness) NewStore(context.Context) (driver.Store, error) {
	return open(map[string]string{"prefix": "app", "inner.name": h.name})
}
func (harness) Close() error { return nil }

// harnesses numbers the shared states: a memory state outlives its stores, so
// a name is never used twice, even across -count runs.
var harnesses atomic.Int64

func TestTCK(t *testing.T) {
	tck.Run(t, tck.Suite{
		Ranges: true, Slots: true, Locks: true,
		Factory:          open,
		Options:          map[string]string{"prefix": "app"},
		MalformedOptions: map[string]string{"prefix": "a/b"},
		// The wrapped memory driver keeps nothing across a restart.
		NotPersistent: "it wraps the memory driver, whose state lives in the process",
		NewHarness: func(ctx context.Context, t *testing.T) (tck.Harness, error) {
			return harness{name: fmt.Sprintf("prefix-tck-%d", harnesses.Add(1))}, nil
		},
	})
}
