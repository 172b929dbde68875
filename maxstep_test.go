package store_test

import (
	"errors"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cosid-go/store"
	_ "github.com/cosid-go/store/drivers/memory"
	_ "github.com/cosid-go/store/drivers/sqlite"
)

// TestMaxStep: a step above the store's maximum (a typo such as
// math.MaxInt64 for 1000) is refused before it reaches the driver, naming
// the step and the option that raises the maximum, and the key does not
// move; WithMaxStep raises the maximum.
func TestMaxStep(t *testing.T) {
	for _, c := range []struct{ name, driver string }{{"memory", "memory"}, {"sqlite", "sqlite"}} {
		t.Run(c.name, func(t *testing.T) {
			opts := map[string]string{"name": memoryName(t)}
			if c.driver == "sqlite" {
				opts = map[string]string{"path": filepath.Join(t.TempDir(), "ids.db")}
			}
			open := func(o ...store.Option) *store.Store {
				st, err := store.Open(c.driver, opts, o...)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				return st
			}
			st := open()
			if st.MaxStep() != store.DefaultMaxStep || store.DefaultMaxStep != 1_000_000 {
				t.Errorf("MaxStep() = %d, DefaultMaxStep %d; want both 1000000", st.MaxStep(), store.DefaultMaxStep)
			}
			r := st.Ranges()
			if _, err := r.Next(t.Context(), "k", 10); err != nil {
				t.Fatal(err)
			}
			for _, step := range []int64{math.MaxInt64, store.DefaultMaxStep + 1} {
				_, err := r.Next(t.Context(), "k", step)
				if !errors.Is(err, store.ErrInvalidArgument) {
					t.Fatalf("Next(k, %d): %v, want ErrInvalidArgument", step, err)
				}
				for _, want := range []string{strconv.FormatInt(step, 10), "maximum step 1000000", "store.WithMaxStep"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("Next(k, %d): %q does not say %q", step, err, want)
					}
				}
				if next, sealed, err := r.Current(t.Context(), "k"); err != nil || next != 10 || sealed {
					t.Fatalf("after the refused Next(k, %d): Current = %d, %v, %v; want 10, not sealed", step, next, sealed, err)
				}
			}
			if got, err := r.Next(t.Context(), "k", store.DefaultMaxStep); err != nil || got.Start != 10 {
				t.Fatalf("Next(k, DefaultMaxStep) = %v, %v; want a range from 10", got, err)
			}
			big := open(store.WithMaxStep(math.MaxInt64))
			if got, err := big.Ranges().Next(t.Context(), "k", 1<<40); err != nil || got.Start != 10+store.DefaultMaxStep {
				t.Fatalf("Next(k, 1<<40) with WithMaxStep(MaxInt64) = %v, %v", got, err)
			}
			for _, n := range []int64{0, -1} {
				if _, err := store.Open(c.driver, opts, store.WithMaxStep(n)); !errors.Is(err, store.ErrInvalidArgument) {
					t.Errorf("WithMaxStep(%d): %v, want ErrInvalidArgument", n, err)
				}
			}
		})
	}
}
