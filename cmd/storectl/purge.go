package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/cosid-go/store"
)

func init() {
	register(&command{name: "purge", run: runPurge, usage: `Usage: storectl purge --yes STORE FLAGS

Deletes everything the store keeps (for ZooKeeper, every node under the root;
for etcd, every key of the store under its prefix) and prints what it deleted.
Run it only with every instance that uses the store stopped: a range key
deleted under a running store would hand out its values again. purge
therefore refuses (exit code 3) while any lease may be in use (its owner is
set and its ceiling, the expiry plus the clock tolerance, is ahead), any
released slot's next floor is ahead of the clock (a term released without
its last used timestamp: run purge again once the floor has passed) or any
lock has a holder; while the store holds a sealed range key or namespace
(it moved to another store, and its seal is what stops an instance still
pointed here from handing out what the other store hands out: purge never
forgets it, so such a store is kept as it is and a new store is used
instead); or while the store holds keys that are not its own
(another store's ZooKeeper root or etcd prefix inside this one's: /ids/v2 in
/ids), and without --yes it only says what it would delete. The store itself
refuses too (exit code 3, nothing deleted), by its own clock and together
with the deletion: an instance that starts while purge runs is never purged
under it.

  --yes   really delete

` + storeFlagsUsage})
}

func runPurge(ctx context.Context, e *env, args []string) error {
	var yes bool
	st, desc, err := openWithFlags("purge", args, func(fs *flag.FlagSet) { fs.BoolVar(&yes, "yes", false, "really delete") })
	if err != nil {
		return err
	}
	defer st.Close()
	now := e.now().UnixMilli()
	r, err := survey(ctx, st, now)
	if err != nil {
		return err
	}
	if busy := inUse(r); len(busy) > 0 {
		return refusedf("%s is in use; stop every instance first (nothing deleted):\n  %s",
			desc, strings.Join(busy, "\n  "))
	}
	// Seals first: they never pass, floors do.
	if sealed := sealedItems(r); len(sealed) > 0 {
		return refusedf("%s: %s", desc, sealedRefusal(sealed))
	}
	if ahead := floorsAhead(r); len(ahead) > 0 {
		return refusedf("%s has released slots whose next terms must start ahead of the clock; a purge would forget "+
			"those floors and the next terms would start at 0, below timestamps already issued (nothing deleted). "+
			"Run purge again once the clock has passed them:\n  %s", desc, strings.Join(ahead, "\n  "))
	}
	if !yes {
		return refusedf("purge deletes everything in %s: %s; run again with --yes once every instance is stopped",
			desc, r.contents())
	}
	if sig, ok := interrupted(ctx); ok {
		return interruptedf("%s: stopped before deleting anything.\n%s", sig, rerunAdvice(e))
	}
	// Begun, the purge runs to its end: a signal does not cut it short.
	deleted, err := st.Purge(context.WithoutCancel(ctx))
	if errors.Is(err, store.ErrUnsupported) {
		return fmt.Errorf("the driver of %s cannot purge (nothing deleted)", desc)
	}
	if errors.Is(err, store.ErrSealed) && len(deleted) == 0 {
		// A key or namespace sealed since the survey.
		return refusedf("%s: the store refused the purge (nothing deleted):\n  %v\n%s", desc, err, sealedAdvice)
	}
	if errors.Is(err, store.ErrLocked) && len(deleted) == 0 {
		// The store's own check, made with the deletion and on its clock:
		// a lease or lock taken since the survey, or one this machine's
		// clock took for over.
		return refusedf("%s is in use: the store refused the purge (nothing deleted); stop every instance first:\n  %v",
			desc, err)
	}
	if (errors.Is(err, store.ErrCorrupt) || errors.Is(err, store.ErrConfigMismatch)) && len(deleted) == 0 {
		// Keys outside the store's layout (ZooKeeper's nodes: ErrCorrupt)
		// or another store's metadata key under its prefix (etcd:
		// ErrConfigMismatch): most likely another store inside this one.
		// Running it again would not help.
		return refusedf("%s: the store refused the purge (nothing deleted):\n  %v\n"+
			"Another store inside this one (a ZooKeeper root or etcd prefix under its own) is another store: "+
			"move it out, or purge it first, then purge this one.", desc, err)
	}
	for _, d := range deleted {
		fmt.Fprintf(e.stdout, "deleted %s\n", d)
	}
	if err != nil {
		return fmt.Errorf("purge stopped part-way (run it again to finish): %w", err)
	}
	fmt.Fprintf(e.stdout, "purged %s: %s\n", desc, count(len(deleted), "item"))
	return nil
}

// inUse lists the leases that may be in use and the locks that are held.
func inUse(r *report) []string {
	var out []string
	for _, ns := range r.Namespaces {
		for _, s := range ns.Slots {
			if mayBeInUse(s.info, r.Now) {
				out = append(out, fmt.Sprintf("lease %s/%d of %s (incarnation %s, fence %d): expires %s, ceiling %s",
					ns.Name, s.Slot, s.Owner, s.Incarnation, s.Fence, stamp(s.ExpiresAt, r.Now), stamp(s.Ceiling, r.Now)))
			}
		}
	}
	for _, l := range r.Locks {
		if l.Holder != nil {
			out = append(out, fmt.Sprintf("lock %s held by %s (fence %d), %s",
				l.Name, l.Holder.Owner, l.Holder.Fence, count(len(l.Waiters), "waiter")))
		}
	}
	return out
}

// contents summarises what a store holds.
func (r *report) contents() string {
	slots := 0
	for _, ns := range r.Namespaces {
		slots += len(ns.Slots)
	}
	return fmt.Sprintf("%s, %s with %s, %s",
		count(len(r.Keys), "range key"), count(len(r.Namespaces), "namespace"),
		count(slots, "used slot"), count(len(r.Locks), "lock"))
}

// floorsAhead lists the released slots whose next floor is ahead of the
// survey's clock (see driver.Purger).
func floorsAhead(r *report) []string {
	var out []string
	for _, ns := range r.Namespaces {
		for _, s := range ns.Slots {
			if s.Owner == "" && s.NextFloor > r.Now {
				out = append(out, fmt.Sprintf("slot %s/%d (last owner %s, fence %d): next floor %s",
					ns.Name, s.Slot, s.LastOwner, s.Fence, stamp(s.NextFloor, r.Now)))
			}
		}
	}
	return out
}

// sealedItems lists the sealed range keys and namespaces of a survey.
func sealedItems(r *report) []string {
	var out []string
	for _, k := range r.Keys {
		if k.Sealed {
			out = append(out, fmt.Sprintf("range key %q (sealed at %d)", k.Key, k.Next))
		}
	}
	for _, ns := range r.Namespaces {
		if ns.Sealed {
			out = append(out, fmt.Sprintf("namespace %q", ns.Name))
		}
	}
	return out
}

// sealedAdvice says what to do with a store that holds seals.
const sealedAdvice = "Keep this store as it is: an instance still pointed at it must get ErrSealed for what moved away, " +
	"never values or slots. To start afresh, use a new store (another file, schema, root or prefix) instead of purging this one."

func sealedRefusal(sealed []string) string {
	shown := sealed[:min(len(sealed), 20)]
	more := ""
	if len(sealed) > len(shown) {
		more = fmt.Sprintf("\n  ... and %d more", len(sealed)-len(shown))
	}
	return fmt.Sprintf("purge refused (nothing deleted): what moved to another store is sealed here, "+
		"and a purge would forget the seals:\n  %s%s\n%s", strings.Join(shown, "\n  "), more, sealedAdvice)
}
