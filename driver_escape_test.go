package store_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/drivers/sqlite"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// TestDriverEscapeNegativeStep: (*Store).Raw reaches the raw driver.
// An integrator who called its Next (for a "driver-specific need") with a
// negative step moved the key back, and the next process that opened the
// file handed out values again; the driver now refuses such a step itself,
// as the checked API does (TestOpenStoreIsChecked).
func TestDriverEscapeNegativeStep(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "ids.db")
	a, err := sqlite.OpenStore(ctx, &sqlite.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	first, err := a.Ranges().Next(ctx, "orders", 100)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Ranges().Next(ctx, "orders", -100); !errors.Is(err, store.ErrInvalidArgument) {
		t.Fatalf("checked Next(-100): %v, want ErrInvalidArgument", err)
	}
	if rs, ok := rawdriver.Of(a).(driver.RangeStore); ok {
		if _, err := rs.Next(ctx, "orders", -100); !errors.Is(err, store.ErrInvalidArgument) {
			t.Errorf("raw Next(-100) through Raw: %v, want ErrInvalidArgument (driver.CheckStep)", err)
		}
	}
	b, err := sqlite.OpenStore(ctx, &sqlite.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	again, err := b.Ranges().Next(ctx, "orders", 10)
	if err == nil && again.Start < first.End {
		t.Fatalf("a second process got [%d, %d), inside [%d, %d) handed out before: values handed out twice",
			again.Start, again.End, first.Start, first.End)
	}
}
