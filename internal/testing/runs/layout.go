package runs

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/idgen"
)

// LayoutKept: a namespace keeps the layout its IDs were issued with.
// A generator of another layout is refused with ErrConfigMismatch naming
// the difference, and issues nothing: here its epoch is 700ms after the
// first generator's, so its timestamps would have been the first's of
// 700ms before, on the same slot, with the same sequences: IDs issued
// again. A generator of the same layout goes on.
func LayoutKept(t *testing.T, open func(t *testing.T) *store.Store) {
	space := store.Namespace{Name: "layout", Limit: 4, Tolerance: 50 * time.Millisecond}
	st := open(t)
	first := idgen.Layout{Epoch: idgen.DefaultEpoch}
	g, err := idgen.NewSnowflake(t.Context(), st, space, "host-a", idgen.SnowflakeOptions{Layout: first})
	if err != nil {
		t.Fatal(err)
	}
	issued := map[int64]bool{}
	for start := time.Now(); time.Since(start) < time.Second; {
		id, err := g.NextID(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		issued[id] = true
	}
	if err := g.Close(t.Context()); err != nil {
		t.Fatal(err)
	}

	other := open(t) // another process
	for _, c := range []struct {
		layout idgen.Layout
		names  string
	}{
		{idgen.Layout{Epoch: idgen.DefaultEpoch.Add(700 * time.Millisecond)}, "epoch 2024-01-01T00:00:00.7Z here, 2024-01-01T00:00:00Z in the namespace"},
		{idgen.Layout{Unit: 10 * time.Millisecond}, "unit 10ms here, 1ms in the namespace"},
		{idgen.Layout{SequenceBits: 10}, "timestamp bits 51 here, 49 in the namespace; sequence bits 10 here, 12 in the namespace"},
	} {
		g, err := idgen.NewSnowflake(t.Context(), other, space, "host-b", idgen.SnowflakeOptions{Layout: c.layout})
		again := 0
		if err == nil {
			for range 100000 {
				if id, err := g.NextID(t.Context()); err == nil && issued[id] {
					again++
				}
			}
			g.Close(t.Context())
		}
		if !errors.Is(err, store.ErrConfigMismatch) || !strings.Contains(err.Error(), c.names) || !strings.Contains(err.Error(), "new namespace") {
			t.Errorf("a generator differing in %s: %v (and %d IDs issued again); want ErrConfigMismatch naming it and a new namespace", c.names, err, again)
		}
		if again != 0 {
			t.Errorf("a generator differing in %s issued %d IDs again", c.names, again)
		}
	}
	// The layout is not taken by a refused generator: the first's holds.
	g, err = idgen.NewSnowflake(t.Context(), other, space, "host-b", idgen.SnowflakeOptions{})
	if err != nil {
		t.Fatalf("a generator of the namespace's layout: %v", err)
	}
	id, err := g.NextID(t.Context())
	if err != nil || issued[id] {
		t.Errorf("a generator of the namespace's layout: ID %d (issued before: %v), %v", id, issued[id], err)
	}
	g.Close(t.Context())
}
