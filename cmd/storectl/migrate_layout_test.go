package main

import (
	"errors"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/idgen"
)

// TestMigrateCarriesLayout: migrate carries the ID layout a namespace
// keeps into the target, so that a generator of another layout is refused
// there as in the source, and one of the same layout goes on.
func TestMigrateCarriesLayout(t *testing.T) {
	forEachPair(t, func(t *testing.T, from, to backend) {
		src, dst := from.fresh(t), to.fresh(t)
		s, d := src.open(t), dst.open(t)
		g, err := idgen.NewSnowflake(t.Context(), s, workers, "host-a", idgen.SnowflakeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.NextID(t.Context()); err != nil {
			t.Fatal(err)
		}
		worker := g.Worker()
		if err := g.Close(t.Context()); err != nil {
			t.Fatal(err)
		}
		layout, err := s.Slots().Layout(t.Context(), workers.Name)
		if err != nil || layout != g.Layout().String() {
			t.Fatalf("the source keeps layout %q (%v), want the generator's %q", layout, err, g.Layout().String())
		}
		migrate(src, dst).want(t, exitOK, "namespace workers: sealed in source; limit 8, tolerance 50ms, 1 slot used, ID layout "+layout+"\n")
		if got, err := d.Slots().Layout(t.Context(), workers.Name); err != nil || got != layout {
			t.Fatalf("the target keeps layout %q (%v), want the source's %q", got, err, layout)
		}
		_, err = idgen.NewSnowflake(t.Context(), d, workers, "host-b", idgen.SnowflakeOptions{Layout: idgen.Layout{Unit: 10 * time.Millisecond}})
		if !errors.Is(err, store.ErrConfigMismatch) {
			t.Fatalf("a generator of another layout in the target: %v, want ErrConfigMismatch", err)
		}
		// host-a's slot, so that the namespace still has 1 slot used.
		g, err = idgen.NewSnowflake(t.Context(), d, workers, "host-b", idgen.SnowflakeOptions{Acquire: store.AcquireOptions{Preferred: new(worker)}})
		if err != nil {
			t.Fatalf("a generator of the carried layout in the target: %v", err)
		}
		g.Close(t.Context())
		ctl(with(args("inspect"), dst.flags())...).want(t, exitOK, "namespace workers: limit 8, tolerance 50ms, ID layout "+layout+", 1 slot used")
		// A rerun finds the layout carried.
		migrate(src, dst).want(t, exitOK, "ID layout "+layout)
	})
}
