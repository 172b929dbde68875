package apitest

import (
	"errors"
	"testing"
	"time"

	"github.com/cosid-go/store"
)

// Checked fails the test unless st, what a driver's typed constructor
// returned with store.WithTimeout(timeout), is the portable layer's
// store: the timeout applied, and Next with a negative step refused
// before the driver, so the key keeps the 100 a first Next gave it. The
// issue's case: such a Next once moved the key back to 0.
func Checked(t testing.TB, st *store.Store, timeout time.Duration) {
	t.Helper()
	ctx := t.Context()
	if st.Timeout() != timeout {
		t.Errorf("timeout %v, want the one given", st.Timeout())
	}
	if _, err := st.Ranges().Next(ctx, "k", 100); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Ranges().Next(ctx, "k", -100); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("Next with step -100: %v, want ErrInvalidArgument", err)
	}
	if next, _, err := st.Ranges().Current(ctx, "k"); err != nil || next != 100 {
		t.Errorf("after the refused Next, Current = %d, %v; want 100", next, err)
	}
}
