package sqlite

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/leakcheck"
	"github.com/cosid-go/store/tck"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// harness opens stores on one file of the check's own temp directory.
type harness struct{ path string }

func (h harness) NewStore(context.Context) (driver.Store, error) {
	return fromOptions(map[string]string{"path": h.path})
}

// Close has nothing to do: the test's temp directory goes with the file.
func (harness) Close() error { return nil }

// Restart has nothing to stop: every store on the file is closed, so the
// next one opens it afresh, as after a machine restart (tck.Restarter).
func (harness) Restart(context.Context) error { return nil }

func TestTCK(t *testing.T) {
	tck.Run(t, tck.Suite{
		NewHarness: func(_ context.Context, t *testing.T) (tck.Harness, error) {
			return harness{path: filepath.Join(t.TempDir(), "store.db")}, nil
		},
		Ranges: true, Slots: true, Locks: false,
		Factory:          fromOptions,
		Options:          map[string]string{"path": filepath.Join(t.TempDir(), "options.db"), "busyTimeout": "1s"},
		MalformedOptions: map[string]string{"busyTimeout": "soon", "create": "maybe"},
		RequiredOptions:  []string{"path"},
		MissingOptions: func(t *testing.T) map[string]string {
			return map[string]string{"path": filepath.Join(t.TempDir(), "missing.db")}
		},
	})
}
