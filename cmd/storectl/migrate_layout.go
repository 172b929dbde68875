package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/cosid-go/store"
)

// carryLayout records the ID layout the source keeps for n's namespace in
// the target (store.SlotLeaseStore.KeepLayout), before any slot is seeded,
// so that a generator of another layout is refused there too. It returns
// what to add to the namespace's line: "" when the source keeps none or
// cannot keep layouts. A target that keeps another layout fails the step:
// IDs of the two layouts could be equal.
func (m *migration) carryLayout(ctx context.Context, n nsStep) (string, error) {
	layout, err := m.src.Slots().Layout(ctx, n.ns.Name)
	switch {
	case errors.Is(err, store.ErrUnsupported) || err == nil && layout == "":
		return "", nil
	case err != nil:
		return "", fmt.Errorf("reading its ID layout: %w", err)
	}
	have, err := m.dst.Slots().KeepLayout(ctx, n.ns, layout)
	switch {
	case errors.Is(err, store.ErrUnsupported):
		fmt.Fprintf(m.e.stderr, "warning: namespace %s: the target cannot keep the ID layout %q: a generator of another layout is not refused there\n",
			n.ns.Name, layout)
		return "", nil
	case err != nil:
		return "", fmt.Errorf("recording its ID layout in the target: %w", err)
	case have != layout:
		return "", fmt.Errorf("the target's namespace keeps the ID layout %q, not the source's %q: "+
			"IDs of the two layouts could be equal; carry it into a new namespace: %w", have, layout, store.ErrConfigMismatch)
	}
	return fmt.Sprintf(", ID layout %s", layout), nil
}
