package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cosid-go/store"
)

func init() {
	register(&command{name: "seal", run: runSeal, usage: `Usage: storectl seal [--create] STORE FLAGS KEY...

Seals each range KEY and prints its final next value: Next on a sealed key
fails, so no value at or above it is ever handed out by this store. Sealing a
sealed key again only prints its value. A key that does not exist is refused
(nothing is sealed) unless --create is given, which creates it sealed at 0.

  --create   seal keys that do not exist yet

` + storeFlagsUsage})
	register(&command{name: "init", run: runInit, usage: `Usage: storectl init STORE FLAGS KEY VALUE

Creates range KEY with next value VALUE (a whole number >= 0), so that its
first range starts there. If KEY already has next value VALUE nothing changes;
at another value init fails and changes nothing.

` + storeFlagsUsage})
}

func runSeal(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("seal")
	var sf storeFlags
	sf.register(fs)
	create := fs.Bool("create", false, "seal keys that do not exist yet")
	keys, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		return usagef("no KEY given")
	}
	st, _, err := sf.open(openExisting)
	if err != nil {
		return err
	}
	defer st.Close()
	rs := st.Ranges()
	existing, err := rs.Keys(ctx)
	if err != nil {
		return err
	}
	// Check every key before sealing any, so a typo seals nothing.
	sealed := map[string]bool{}
	var unknown []string
	for _, k := range keys {
		_, s, err := rs.Current(ctx, k)
		if err != nil {
			return fmt.Errorf("%w; nothing sealed", badKey(err))
		}
		sealed[k] = s
		if !slices.Contains(existing, k) {
			unknown = append(unknown, strconv.Quote(k))
		}
	}
	if len(unknown) > 0 && !*create {
		return fmt.Errorf("unknown key %s (nothing sealed; --create seals a key that does not exist yet)",
			strings.Join(unknown, ", "))
	}
	for i, k := range keys {
		if sig, ok := interrupted(ctx); ok {
			return interruptedf("%s: stopped after sealing %d of %d keys (those printed above).\n%s",
				sig, i, len(keys), rerunAdvice(e))
		}
		next, err := rs.Seal(context.WithoutCancel(ctx), k)
		if err != nil {
			return err
		}
		switch {
		case !slices.Contains(existing, k):
			fmt.Fprintf(e.stdout, "%s: created sealed at %d\n", k, next)
		case sealed[k]:
			fmt.Fprintf(e.stdout, "%s: already sealed at %d\n", k, next)
		default:
			fmt.Fprintf(e.stdout, "%s: sealed at %d\n", k, next)
		}
	}
	return nil
}

func runInit(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("init")
	var sf storeFlags
	sf.register(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	key, value, err := keyValue(pos)
	if err != nil {
		return err
	}
	st, _, err := sf.open(openOrCreate)
	if err != nil {
		return err
	}
	defer st.Close()
	rs := st.Ranges()
	existing, err := rs.Keys(ctx)
	if err != nil {
		return err
	}
	err = badKey(rs.Init(context.WithoutCancel(ctx), key, value))
	if errors.Is(err, store.ErrConfigMismatch) {
		if next, s, cerr := rs.Current(ctx, key); cerr == nil {
			return fmt.Errorf("key %q exists at next value %d%s, not %d; nothing changed", key, next, sealedNote(s), value)
		}
	}
	if err != nil {
		return err
	}
	if !slices.Contains(existing, key) {
		fmt.Fprintf(e.stdout, "%s: initialised at %d\n", key, value)
		return nil
	}
	_, s, err := rs.Current(ctx, key)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%s: already at %d%s; nothing changed\n", key, value, sealedNote(s))
	return nil
}

// badKey turns the store's refusal of a KEY argument into a usage error
// that says only what was wrong with it (the store's text names the key),
// not which store call storectl made to find out.
func badKey(err error) error {
	if se, ok := errors.AsType[*store.Error](err); ok && errors.Is(se.Err, store.ErrInvalidArgument) {
		return usagef("%v", se.Err)
	}
	return err
}

func sealedNote(sealed bool) string {
	if sealed {
		return " (sealed)"
	}
	return ""
}

// keyValue reads the KEY VALUE arguments of init and advance: VALUE a
// whole number from 0.
func keyValue(pos []string) (string, int64, error) {
	if len(pos) != 2 {
		return "", 0, usagef("want KEY VALUE, got %d arguments", len(pos))
	}
	value, err := strconv.ParseInt(pos[1], 10, 64)
	if err != nil || value < 0 {
		return "", 0, usagef("VALUE %q is not a whole number from 0 to %d", pos[1], int64(1<<63-1))
	}
	return pos[0], value, nil
}
