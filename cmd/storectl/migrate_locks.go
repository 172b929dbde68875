package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cosid-go/store"
)

// lockStep is what migrate does with the source's locks: seal them all
// (driver.LockSealer), so an instance left on the source cannot hold a
// lock beside a holder in the target, and raise the target's lock fences
// above the source's floor, so fences never go back.
type lockStep struct {
	names    int  // lock names the source lists
	sealed   bool // the source's locks were sealed when the plan read them
	canSeal  bool // the source can seal its locks
	canRaise bool // the target can raise its lock fences
	noLocker bool // the target has no locks at all
	reopens  bool // the target's locks are sealed: they move back in
}

// planLocks reads the locks of both stores. A lock held in the source is
// a holder still running there (refused like a live lease, unless
// --force). A target whose locks are sealed had them moved out before:
// they move back in.
func (m *migration) planLocks(ctx context.Context, p *plan) error {
	ls := &lockStep{}
	err := eachLock(ctx, m.src, func(name string, ws []store.Waiter, err error) error {
		ls.names++
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(ws) > 0 {
			p.live = append(p.live, fmt.Sprintf("lock %s held by %s (fence %d), %s", name, ws[0].Owner, ws[0].Fence,
				count(len(ws)-1, "waiter")))
		}
		return nil
	})
	if errors.Is(err, store.ErrUnsupported) {
		return nil // no locks to move
	}
	if err != nil {
		return err
	}
	ls.sealed, err = m.src.Locks().Sealed(ctx)
	switch {
	case err == nil:
		ls.canSeal = true
	case !errors.Is(err, store.ErrUnsupported):
		return err
	}
	if ls.sealed && !p.moved && !m.adopt {
		// A store-wide seal names no target: only a key or namespace of
		// the source found in the target proves that an earlier run moved
		// into this one (planLocks runs after planKeys and planSlots).
		p.refused = append(p.refused, "locks: sealed in the source, and nothing else of the source is in the target "+
			"to show that they moved here")
	}
	dstSealed, err := m.dst.Locks().Sealed(ctx)
	switch {
	case err == nil:
		ls.canRaise, ls.reopens = true, dstSealed
		if dstSealed {
			err = eachLock(ctx, m.dst, func(name string, ws []store.Waiter, err error) error {
				if errors.Is(err, store.ErrNotFound) {
					return nil
				}
				for _, w := range ws {
					p.queued = append(p.queued, fmt.Sprintf("lock %s: %s (fence %d)", name, w.Owner, w.Fence))
				}
				return err
			})
			if err != nil {
				return err
			}
		}
	case errors.Is(err, store.ErrUnsupported):
		_, lerr := m.dst.Locks().List(ctx)
		ls.noLocker = errors.Is(lerr, store.ErrUnsupported)
	default:
		return err
	}
	p.locks = ls
	return nil
}

// moveLocks seals the source's locks and raises the target's fences past
// the floor the seal gives. Both are idempotent, so a rerun does them
// again harmlessly.
func (m *migration) moveLocks(ctx context.Context, ls *lockStep) (string, error) {
	if !ls.canSeal {
		fmt.Fprintf(m.e.stderr, "warning: the source driver cannot seal its locks (it lacks driver.LockSealer): "+
			"an instance left on the source can still take a lock beside one in the target\n")
		return fmt.Sprintf("%s in the source, not sealed", count(ls.names, "lock name")), nil
	}
	floor, err := m.src.Locks().Seal(ctx)
	if err != nil {
		return "", fmt.Errorf("sealing the source's locks: %w", err)
	}
	sealed := fmt.Sprintf("sealed in source (%s, fence floor %d)", count(ls.names, "lock name"), floor)
	if ls.sealed {
		sealed = "already " + sealed
	}
	switch {
	case ls.noLocker:
		return sealed + "; the target has no locks", nil
	case !ls.canRaise:
		fmt.Fprintf(m.e.stderr, "warning: the target driver cannot raise its lock fences (it lacks driver.LockSealer): "+
			"its fences may be below %d, the source's\n", floor)
		return sealed + "; the target's fences not raised", nil
	}
	if err := m.dst.Locks().RaiseFences(ctx, floor); err != nil {
		return "", fmt.Errorf("%s; raising the target's lock fences: %w", sealed, err)
	}
	msg := fmt.Sprintf("%s; every lock fence of the target from now on is above %d", sealed, floor)
	if ls.reopens {
		msg += " (its locks, sealed when they moved out of it before, are open again)"
	}
	return msg, nil
}

// queuedBeforeSeal refuses (exit code 3) to move locks back into a target
// whose locks a holder or waiter queued before they moved out: raising
// the target's fences opens its locks again, and a process of a version
// that looks at the seal only when it grants (before locks_unsealed)
// would then grant such a waiter a fence below those handed out in the
// store the locks went to. This version refuses that waiter (ErrSealed);
// --force, once every instance runs it, carries on.
func queuedBeforeSeal(e *env, p *plan, force bool) error {
	if len(p.queued) == 0 {
		return nil
	}
	if !force {
		return refusedf("nothing changed: the target's locks, sealed when they moved out of it, have %d holders and waiters queued before that:\n  %s\n"+
			"Moving the locks back in opens them again, and an instance of a version before locks_unsealed grants such a waiter "+
			"a fence below those handed out meanwhile. Stop these instances (left on the target when its locks moved out), "+
			"or give --force once every instance is upgraded: this version refuses them (ErrSealed).",
			len(p.queued), strings.Join(p.queued, "\n  "))
	}
	for _, q := range p.queued {
		fmt.Fprintf(e.stderr, "warning: --force: %s was queued before the target's locks moved out; an instance of a version before locks_unsealed would be granted it\n", q)
	}
	return nil
}
