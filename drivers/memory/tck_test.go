package memory

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

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
	return fromOptions(map[string]string{"name": h.name})
}

// Close has nothing to free: a named state lives as long as the program.
func (tckHarness) Close() error { return nil }

// notPersistent is why the Restart check skips: a state lives in the
// process, and nothing of it outlives the program.
const notPersistent = "a memory state lives in the process and ends with it"

// StepClock moves the harness state's clock by d, as a ZooKeeper leader
// change can move mtime (tck.ClockStepper).
func (h tckHarness) StepClock(_ context.Context, d time.Duration) error {
	sharedState(h.name).stepClock(d)
	return nil
}

// stepClock moves the state's clock by d from where it is now.
func (st *state) stepClock(d time.Duration) {
	st.mu.Lock()
	defer st.mu.Unlock()
	old := st.clock
	st.clock = func() int64 { return old() + d.Milliseconds() }
}

func TestTCK(t *testing.T) {
	tck.Run(t, tck.Suite{
		NewHarness: newTCKHarness,
		Ranges:     true, Slots: true, Locks: true,
		Factory: fromOptions,
		Options: map[string]string{"name": "tck-options"},
		// Its only other option is create; name has a default (the
		// unnamed state), so no option is required.
		MalformedOptions: map[string]string{"create": "maybe"},
		MissingOptions: func(*testing.T) map[string]string {
			return map[string]string{"name": fmt.Sprintf("tck-missing-%d", tckHarnesses.Add(1))}
		},
		NotPersistent: notPersistent,
	})
}

// SetClock stops the harness state's clock at t (tck.ClockSetter).
func (h tckHarness) SetClock(_ context.Context, t time.Time) error {
	st := sharedState(h.name)
	st.mu.Lock()
	defer st.mu.Unlock()
	ms := t.UnixMilli()
	st.clock = func() int64 { return ms }
	return nil
}

// The operator's hooks (tck.Snapshotter, tck.HandDeleter,
// tck.SessionEnder) have nothing to act on: no backup, shell or session
// of a memory state exists outside the process, so the checks skip,
// saying so.

func (tckHarness) Snapshot(context.Context) (func(context.Context) error, error) {
	return nil, fmt.Errorf("a memory state lives in the process: no backup of it can be restored: %w", driver.ErrUnsupported)
}

func (tckHarness) DeleteRangeKey(context.Context, string) error {
	return fmt.Errorf("a memory state lives in the process: no operator's client can delete a key: %w", driver.ErrUnsupported)
}

func (tckHarness) DeleteSlot(context.Context, string, int) error {
	return fmt.Errorf("a memory state lives in the process: no operator's client can delete a slot: %w", driver.ErrUnsupported)
}

func (tckHarness) EndSession(context.Context, driver.Store) error {
	return fmt.Errorf("a memory store has no backend session to end (Close ends its holds: Locks/LostOnClose): %w", driver.ErrUnsupported)
}
