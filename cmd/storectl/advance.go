package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cosid-go/store"
)

// maxRaise is the largest raise advance and restore make without --large:
// a raise is final (no key comes back down), and one near math.MaxInt64 (a
// typo, a pasted timestamp) leaves a key exhausted for good.
const maxRaise = 1_000_000_000_000

// checkRaise refuses a raise above maxRaise unless large (--large).
func checkRaise(what string, by int64, large bool) error {
	if by <= maxRaise || large {
		return nil
	}
	return usagef("%s raises by %d, above the maximum %d: a raise is final (no key comes back down), and a large one "+
		"can exhaust a key for good; nothing changed. Give --large to raise by it anyway", what, by, int64(maxRaise))
}

func init() {
	register(&command{name: "advance", run: runAdvance, usage: `Usage: storectl advance [--create] [--large] STORE FLAGS KEY VALUE

Raises range KEY so that its next value is at least VALUE (a whole number
>= 0), and says what it did: the next range starts at VALUE or above. It
never lowers a key: a key already at or above VALUE is left as it is. A
sealed key is refused (exit code 3, nothing changed): its values continue in
the store it moved to. A key that does not exist is refused (nothing
changed) unless --create is given, which creates it at VALUE.

advance is safe while instances run: it can make values skip, never repeat.
It is how a key is put past values a store forgot (a restored backup; see
storectl restore, which raises every key at once).

  --create   create KEY at VALUE if it does not exist
  --large    raise by more than 1000000000000 (refused without it: a raise
             is final, and a huge one exhausts the key for good)

` + storeFlagsUsage})
}

func runAdvance(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("advance")
	var sf storeFlags
	sf.register(fs)
	create := fs.Bool("create", false, "create KEY at VALUE if it does not exist")
	large := fs.Bool("large", false, "raise by more than the maximum")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	key, value, err := keyValue(pos)
	if err != nil {
		return err
	}
	st, desc, err := sf.open(openExisting)
	if err != nil {
		return err
	}
	defer st.Close()
	rs := st.Ranges()
	cur, _, err := rs.Current(ctx, key)
	if err != nil {
		return fmt.Errorf("%w; nothing changed", badKey(err))
	}
	if err := checkRaise(fmt.Sprintf("advance of %q from %d to %d", key, cur, value), value-cur, *large); err != nil {
		return err
	}
	existing, err := rs.Keys(ctx)
	if err != nil {
		return err
	}
	found := slices.Contains(existing, key)
	if !found && !*create {
		return fmt.Errorf("unknown key %q in %s (nothing changed; --create creates it at %d)", key, desc, value)
	}
	prev, err := rs.Advance(ctx, key, value)
	switch {
	case errors.Is(err, store.ErrSealed):
		return refusedf("key %q is sealed at %d: its values continue in the store it moved to, so it is never raised here; nothing changed",
			key, prev)
	case errors.Is(err, store.ErrUnsupported):
		return fmt.Errorf("the driver of %s cannot advance keys; nothing changed", desc)
	case err != nil:
		return err
	case !found:
		fmt.Fprintf(e.stdout, "%s: created at %d\n", key, value)
	case prev >= value:
		fmt.Fprintf(e.stdout, "%s: already at %d, at or above %d; nothing changed\n", key, prev, value)
	default:
		fmt.Fprintf(e.stdout, "%s: raised from %d to %d (values %d to %d are never handed out)\n", key, prev, value, prev, value-1)
	}
	return nil
}
