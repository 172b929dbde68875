package idgen

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cosid-go/store"
)

// String gives a resolved layout as the text a namespace keeps (see
// store.SlotLeaseStore.KeepLayout): every field, in a fixed order, so
// that two layouts issue the same IDs exactly when their texts are equal.
func (l Layout) String() string {
	return fmt.Sprintf("epoch=%s unit=%v timestamp_bits=%d worker_bits=%d sequence_bits=%d",
		time.UnixMilli(l.Epoch.UnixMilli()).UTC().Format(time.RFC3339Nano), l.Unit, l.TimestampBits, l.WorkerBits, l.SequenceBits)
}

// keepLayout makes sure ns issues IDs of one layout only: the first
// generator's is recorded with the namespace, and a generator of another
// layout, whose IDs could equal earlier ones (a unit of 10ms makes
// timestamps ten times smaller, a later epoch makes them smaller, other
// bit widths move the fields), is refused with store.ErrConfigMismatch.
// A store that cannot keep layouts (store.ErrUnsupported) is not checked.
func keepLayout(ctx context.Context, st *store.Store, ns store.Namespace, l Layout) error {
	mine := l.String()
	have, err := st.Slots().KeepLayout(ctx, ns, mine)
	switch {
	case errors.Is(err, store.ErrUnsupported):
		return nil
	case err != nil:
		return fmt.Errorf("idgen: keep the layout of namespace %q: %w", ns.Name, err)
	case have != mine:
		return fmt.Errorf("idgen: namespace %q issued its IDs with another layout (%s); IDs of two layouts can be equal, "+
			"so a namespace keeps the layout of its first generator: to change the layout, use a new namespace: %w",
			ns.Name, layoutDiff(mine, have), store.ErrConfigMismatch)
	}
	return nil
}

// layoutDiff names the fields in which this generator's layout (mine)
// differs from the namespace's (have), both as String gives them.
func layoutDiff(mine, have string) string {
	fields := func(s string) (names []string, values map[string]string) {
		values = map[string]string{}
		for f := range strings.FieldsSeq(s) {
			name, value, _ := strings.Cut(f, "=")
			names = append(names, name)
			values[name] = value
		}
		return names, values
	}
	names, m := fields(mine)
	hnames, h := fields(have)
	var out []string
	for _, n := range names {
		if hv, ok := h[n]; !ok || hv != m[n] {
			if !ok {
				hv = "none"
			}
			out = append(out, fmt.Sprintf("%s %s here, %s in the namespace", strings.ReplaceAll(n, "_", " "), m[n], hv))
		}
	}
	for _, n := range hnames {
		if _, ok := m[n]; !ok {
			out = append(out, fmt.Sprintf("%s none here, %s in the namespace", strings.ReplaceAll(n, "_", " "), h[n]))
		}
	}
	if len(out) == 0 { // the same fields, spelled differently
		return fmt.Sprintf("%q here, %q in the namespace", mine, have)
	}
	return strings.Join(out, "; ")
}
