package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cosid-go/store"
)

func init() {
	register(&command{name: "purge", run: runPurge, usage: `Usage: storectl purge --yes STORE FLAGS

Deletes everything the store keeps (for ZooKeeper, every node under the root)
and prints what it deleted. Run it only with every instance that uses the
store stopped: a range key deleted under a running store would hand out its
values again. purge therefore refuses (exit code 3) while any lease may be in
use (its owner is set and its ceiling, the expiry plus the clock tolerance, is
ahead) or any lock has a holder, or while the store holds nodes that are not
its own (for ZooKeeper, another store's root inside this one: /ids/v2 in /ids),
and without --yes it only says what it would delete. The store itself refuses
too (exit code 3, nothing deleted), by its own clock and together with the
deletion: an instance that starts while purge runs is never purged under it.

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
	if foreign, err := foreignNodes(ctx, st); err != nil {
		return fmt.Errorf("%s: %w", desc, err)
	} else if len(foreign) > 0 {
		return refusedf("%s holds nodes that are not its own, which a purge would delete with it (nothing deleted):\n  %s\n"+
			"Another store's root inside this one is another store: move it out, or purge it first, then purge this one.",
			desc, strings.Join(foreign, "\n  "))
	}
	if !yes {
		return refusedf("purge deletes everything in %s: %s; run again with --yes once every instance is stopped",
			desc, r.contents())
	}
	deleted, err := st.Purge(ctx)
	if errors.Is(err, store.ErrUnsupported) {
		return fmt.Errorf("the driver of %s cannot purge (nothing deleted)", desc)
	}
	if errors.Is(err, store.ErrLocked) && len(deleted) == 0 {
		// The store's own check, made with the deletion and on its clock:
		// a lease or lock taken since the survey, or one this machine's
		// clock took for over.
		return refusedf("%s is in use: the store refused the purge (nothing deleted); stop every instance first:\n  %v",
			desc, err)
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

// foreignNodes lists the nodes below a ZooKeeper store's root that are not
// part of its layout (range/KEY..., slot/NS/SLOT, slot/NS/.clock,
// owner/NS/OWNER, lock/NAME/_c_WAITER): most likely another store's root
// (/ids/v2, /ids/lock/v2 inside /ids), which the driver's purge deletes
// with everything else below the root. Only the topmost node of each
// foreign subtree is listed. Drivers that list no nodes have none.
func foreignNodes(ctx context.Context, st *store.Store) ([]string, error) {
	l, ok := st.Driver().(aclLister)
	if !ok {
		return nil, nil
	}
	// Two round trips a node, one node at a time: a bound for big stores
	// (a minute is 30 000 nodes or more on a LAN), not for a stuck server.
	ctx, cancel := context.WithTimeout(ctx, max(100*st.Timeout(), 10*time.Minute))
	defer cancel()
	nodes, err := l.ACLs(ctx)
	if err != nil || len(nodes) == 0 {
		return nil, err
	}
	var out []string
	root := nodes[0].Path // the walk starts at the root, parents before children
	for _, n := range nodes[1:] {
		if len(out) > 0 && strings.HasPrefix(n.Path, out[len(out)-1]+"/") {
			continue
		}
		if rel, ok := strings.CutPrefix(n.Path, root+"/"); ok && !inLayout(strings.Split(rel, "/")) {
			out = append(out, n.Path)
		}
	}
	return out, nil
}

// inLayout reports whether a node below a ZooKeeper store's root, given as
// its path segments below the root, is one the store itself makes.
func inLayout(segs []string) bool {
	switch segs[0] {
	case "range":
		return true // keys have any number of segments
	case "slot":
		if len(segs) == 3 {
			_, err := strconv.Atoi(segs[2])
			return err == nil || segs[2] == ".clock"
		}
		return len(segs) < 3
	case "owner":
		return len(segs) <= 3
	case "lock":
		return len(segs) < 3 || len(segs) == 3 && strings.HasPrefix(segs[2], "_c_")
	}
	return false
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
