package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/config"
	"github.com/cosid-go/store/driver"
)

func init() {
	register(&command{name: "migrate", run: runMigrate, usage: `Usage: storectl migrate --from SPEC --to SPEC [--config FILE] [--key KEY]... [--namespace NS]... [--force]

Moves range keys and slot histories from one store to another so that IDs stay
unique across the move. Stop every instance that uses the source first. The
source must exist; the target is created if it does not.

  --from SPEC        the source store
  --to SPEC          the target store
  --config FILE      names stores for SPEC
  --key KEY          move this range key (repeatable)
  --namespace NS     carry this slot namespace (repeatable)
                     Without --key and --namespace every key and namespace
                     moves; with either, only those named.
  --force            carry slots whose leases may still be in use
  --adopt-sealed     carry keys, namespaces and locks sealed in the source and
                     missing in the target: only for what moved nowhere else
                     (sealed by hand with storectl seal, never migrated)
  --timeout DURATION bound of each store operation (default 3s)

SPEC is a store NAME of --config FILE, or DRIVER:KEY=VALUE,KEY=VALUE (a piece
without '=' continues the value before it), or DRIVER: for default options.

Each range key is created in the target at the source's next value, then
sealed in the source, which gives its final next value, and raised in the
target to that value, so Next in the target continues above every value the
source handed out. Each carried namespace is sealed in the
source likewise, before its slots are read: from then on an instance still
running on the source gets ErrSealed from Acquire and Renew there (it stops
at the ceiling it has; Release still works), so no term starts or grows in
the source after the read. The ID layout the namespace keeps (that of its
Snowflake IDs) is recorded in the target, which must keep no other. Each used
slot is then seeded in the target with
its fence and the floor its next term must respect: the next floor of a
released slot, and at least the ceiling of a term that was never released.
The slot's next term in the target gets the next fence and starts at or
above that floor. When everything moves (no --key, no --namespace), the
source's locks are sealed last, every name at once: Lock and TryLock there
give ErrSealed from then on (a holder can still unlock), and every lock
fence the target hands out is raised above the source's (drivers with
driver.LockSealer; a target whose locks were sealed gets them back). A lock
exists only while held, so none is carried. Owner indexes are not moved:
in the target an owner gets its old slot back only as its preferred slot.

migrate first reads both stores and changes nothing if something is wrong:
--from and --to being one store (their identities are equal, however the
options are spelled: exit code 3), a named key or namespace missing in the
source, a key the target has at a lower value or sealed (it moved out of the
target before: a seal is final, and purge refuses a store that holds one, so
such a move goes to another, new target), namespace settings
that differ, a namespace the target has sealed (it moved out of the target
before), a target slot with a live term, or a target driver that cannot
seed slots (exit code 1); a source lease that may still be in use, that is
whose ceiling (expiry plus clock tolerance) is ahead, or a source lock held
(exit code 3, unless --force: use it only for holders known to be dead,
which must never renew).

It is safe to run again into the same target after a failure part-way, or
after the target was used: what is already done is reported as such and
left alone. A source moves into one target only: each key and namespace is
written into the target before it is sealed in the source, so what a run
sealed is in its target. A key, a namespace with used slots, or the locks
sealed in the source and missing in the target moved to another store,
which hands them out: migrate refuses them (exit code 3, nothing changed;
the locks count as moved here when a key or namespace of the source is in
the target). Move the rest with --key and --namespace naming the others;
--adopt-sealed carries them only if they moved nowhere (sealed by hand). SIGINT
(Ctrl-C) or SIGTERM stops it between keys: the key or namespace in hand is
finished, and migrate prints how many of how many keys and namespaces
moved and the command to run next (exit code 4). Keep the
target's instances stopped until migrate is done: a key an instance creates
in the target starts at 0, below the source's values. migrate warns of a key
the target has although the source never moved it, and fails on one created
in the target while it runs.
`})
}

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	*l = append(*l, s)
	return nil
}

func runMigrate(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("migrate")
	cfgPath := fs.String("config", "", "config `FILE` naming stores")
	from := fs.String("from", "", "source store `SPEC`")
	to := fs.String("to", "", "target store `SPEC`")
	var keys, namespaces listFlag
	fs.Var(&keys, "key", "range `KEY` to move (repeatable)")
	fs.Var(&namespaces, "namespace", "slot namespace `NS` to carry (repeatable)")
	force := fs.Bool("force", false, "carry slots whose leases may be in use")
	adopt := fs.Bool("adopt-sealed", false, "carry what is sealed in the source and missing in the target")
	var timeout durationFlag
	fs.Var(&timeout, "timeout", "bound of each store operation")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q (name keys with --key)", pos[0])
	}
	var cfg *config.Config
	if *cfgPath != "" {
		if cfg, err = loadConfig(*cfgPath); err != nil {
			return err
		}
	}
	srcCfg, srcName, err := parseSpec("--from", *from, cfg, *cfgPath)
	if err != nil {
		return err
	}
	dstCfg, dstName, err := parseSpec("--to", *to, cfg, *cfgPath)
	if err != nil {
		return err
	}
	// The source must exist; the target may be created. The source opens
	// first, so a mistyped source creates no target.
	src, srcDesc, err := openStore(srcCfg, timeout, srcName, openExisting)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, dstDesc, err := openStore(dstCfg, timeout, dstName, openOrCreate)
	if err != nil {
		return err
	}
	defer dst.Close()
	if err := notABackup(ctx, src, "--from", srcDesc); err != nil {
		return err
	}
	if err := notABackup(ctx, dst, "--to", dstDesc); err != nil {
		return err
	}
	if err := differentStores(ctx, e, src, dst, srcCfg, dstCfg, srcDesc, dstDesc); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "source: %s\ntarget: %s\n", srcDesc, dstDesc)

	m := &migration{e: e, src: src, dst: dst, now: e.now().UnixMilli(), keys: keys, namespaces: namespaces,
		adopt: *adopt}
	p, err := m.plan(ctx)
	if sig, ok := interrupted(ctx); ok {
		return interruptedf("%s while reading the stores: nothing moved (the target may exist now, empty of what the source has).\n%s",
			sig, rerunAdvice(e))
	}
	if err != nil {
		return err
	}
	if len(p.live) > 0 {
		if !*force {
			return refusedf("nothing changed: %d of the source's leases and locks may still be in use:\n  %s\n"+
				"Stop their holders and wait until their ceilings pass, or give --force if they are known to be dead.",
				len(p.live), strings.Join(p.live, "\n  "))
		}
		for _, l := range p.live {
			fmt.Fprintf(e.stderr, "warning: --force: carrying %s; its holder must not renew it\n", l)
		}
	}
	if err := queuedBeforeSeal(e, p, *force); err != nil {
		return err
	}
	return m.apply(ctx, p)
}

// differentStores refuses (exit code 3) when src and dst are one store,
// however their options are spelled: their identities are equal. The
// target's identity is read first: a target that may create writes one if
// it has none, so a source without one (made before identities existed,
// and opened without create) is another store.
func differentStores(ctx context.Context, e *env, src, dst *store.Store, srcCfg, dstCfg config.StoreConfig, srcDesc, dstDesc string) error {
	dstID, dstErr := dst.ID(ctx)
	srcID, srcErr := src.ID(ctx)
	switch {
	case dstErr == nil && srcErr == nil:
		if srcID == dstID {
			return refusedf("--from and --to are the same store (identity %s): %s and %s reach one storage, "+
				"or one is a copy of the other (a copied SQLite file, a restored backup); nothing changed. "+
				"Check --to: migrating a store into itself would seal every key it hands out, "+
				"and a copy must never serve beside its original: both would hand out the same values", srcID, srcDesc, dstDesc)
		}
		return nil
	case dstErr == nil && errors.Is(srcErr, store.ErrNotFound):
		return nil
	case errors.Is(srcErr, store.ErrUnsupported) || errors.Is(dstErr, store.ErrUnsupported):
		// A driver without identities: only the spelling can be compared.
		if srcCfg.Type == dstCfg.Type {
			return refusedf("the %s driver gives no store identity, so storectl cannot tell whether --from and --to are one store; "+
				"nothing changed", srcCfg.Type)
		}
		fmt.Fprintf(e.stderr, "warning: a driver gives no store identity; storectl relies on %s and %s being different drivers' stores\n",
			srcCfg.Type, dstCfg.Type)
		return nil
	case srcErr != nil:
		return fmt.Errorf("reading the identity of the source: %w", srcErr)
	}
	return fmt.Errorf("reading the identity of the target: %w", dstErr)
}

// migration moves keys and slot histories from src to dst.
type migration struct {
	e                *env
	src, dst         *store.Store
	now              int64
	keys, namespaces []string // selected by name; both empty: everything
	// adopt carries keys, namespaces and locks sealed in the source that
	// the target lacks: the operator says they moved to no other store.
	adopt bool
}

type plan struct {
	keys       []keyStep
	namespaces []nsStep
	locks      *lockStep // the source's locks, when every key and namespace moves
	live       []string  // source leases that may be in use
	// queued: holders and waiters of the target's locks, sealed when
	// they moved out of it, queued before that (queuedBeforeSeal).
	queued []string
	// moved: something sealed in the source is in the target already,
	// which proves the target is where an earlier run moved things.
	moved   bool
	refused []string // sealed in the source, missing in the target
}

type keyStep struct {
	key       string
	srcNext   int64 // the source's next value when the plan read it
	srcSealed bool
	inTarget  bool // the target had the key when the plan read it
}

type nsStep struct {
	ns    store.Namespace
	slots []slotStep // as the plan read them, before the seal
	dst   map[int]store.SlotInfo
}

type slotStep struct {
	src   store.SlotInfo
	fence int64 // the target slot's fence becomes at least this
	floor int64 // and its next floor at least this
	done  bool  // the target carries it already
}

// plan reads both stores and decides what to do. Any problem stops the
// migration before it changes anything.
func (m *migration) plan(ctx context.Context) (*plan, error) {
	p := &plan{}
	var problems []string
	problem := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	all := len(m.keys) == 0 && len(m.namespaces) == 0

	if all || len(m.keys) > 0 {
		if err := m.planKeys(ctx, p, problem); err != nil {
			return nil, err
		}
	}
	if all || len(m.namespaces) > 0 {
		if err := m.planSlots(ctx, p, problem); err != nil {
			return nil, err
		}
	}
	if all {
		if err := m.planLocks(ctx, p); err != nil {
			return nil, err
		}
	}
	if len(problems) > 0 {
		problems = append(problems, p.refused...)
		problems = append(problems, p.live...)
		return nil, fmt.Errorf("nothing changed:\n  %s", strings.Join(problems, "\n  "))
	}
	if len(p.refused) > 0 {
		return nil, refusedf("nothing changed:\n  %s\n%s", strings.Join(p.refused, "\n  "), movedElsewhereAdvice)
	}
	return p, nil
}

// sealedTargetAdvice says what to do about a key or namespace sealed in
// the target: it moved out of the target before, and its seal is final. A
// purge of the target would forget it (and refuses to: an instance still
// pointed at the target must get ErrSealed, not values or slots the store
// it moved to hands out too), so the way on is another target.
// movedElsewhereAdvice explains a refusal of keys, namespaces or locks
// sealed in the source and missing in the target. migrate starts each key
// and namespace in the target before it seals it in the source, so an
// interrupted migrate leaves its target holding all it sealed; one
// missing there went to another store, which hands it out now: carried
// here too, both stores would hand out the same values and IDs.
const movedElsewhereAdvice = "Each of these moved out of the source before, to another store (a migrate writes into its " +
	"target before it seals the source, so a rerun into the same target finds them there). Migrate them to the store they " +
	"moved to, or leave them: the rest moves with --key and --namespace naming the others. Only if they moved nowhere (sealed " +
	"with storectl seal, never migrated) give --adopt-sealed to carry them here."

const sealedTargetAdvice = "keep both stores as they are and migrate to another target, a new store " +
	"(another file, schema, root or prefix): a seal is final, and purge refuses a store that holds one"

func (m *migration) planSlots(ctx context.Context, p *plan, problem func(string, ...any)) error {
	srcNS, err := m.src.Slots().Namespaces(ctx)
	if errors.Is(err, store.ErrUnsupported) {
		if len(m.namespaces) > 0 {
			problem("the source driver has no slot namespaces")
		}
		return nil
	}
	if err != nil {
		return err
	}
	selected := srcNS
	if len(m.namespaces) > 0 {
		selected = nil
		for _, name := range m.namespaces {
			i := slices.IndexFunc(srcNS, func(ns store.Namespace) bool { return ns.Name == name })
			switch {
			case i < 0:
				problem("namespace %q: no such namespace in the source", name)
			case !slices.Contains(selected, srcNS[i]):
				selected = append(selected, srcNS[i])
			}
		}
	}
	if len(selected) == 0 {
		return nil
	}
	dstNS, err := m.dst.Slots().Namespaces(ctx)
	if errors.Is(err, store.ErrUnsupported) {
		problem("the target driver has no slot namespaces, and the source has %s", count(len(selected), "namespace"))
		return nil
	}
	if err != nil {
		return err
	}
	if !hasCap[driver.SlotSeeder](m.dst) {
		problem("the target driver cannot seed slots (it lacks driver.SlotSeeder), so slot histories cannot be carried")
	}
	for _, ns := range selected {
		step := nsStep{ns: ns}
		srcSlots, err := m.src.Slots().List(ctx, ns.Name)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		dstSlots := map[int]store.SlotInfo{}
		i := slices.IndexFunc(dstNS, func(d store.Namespace) bool { return d.Name == ns.Name })
		switch {
		case ns.Sealed && i >= 0:
			p.moved = true
		case ns.Sealed && len(srcSlots) > 0 && !m.adopt:
			// A sealed namespace without used slots has no history to
			// repeat: carrying it seeds nothing.
			p.refused = append(p.refused, fmt.Sprintf("namespace %q: sealed in the source with %s used and missing in the target",
				ns.Name, count(len(srcSlots), "slot")))
		}
		if i >= 0 {
			switch d := dstNS[i]; {
			case d.Sealed:
				problem("namespace %q: the target has it sealed (it moved out of the target before), and the portable API "+
					"cannot reopen a sealed namespace: %s", ns.Name, sealedTargetAdvice)
			case d.Limit != ns.Limit || d.Tolerance != ns.Tolerance:
				problem("namespace %q: the target has limit %d and tolerance %v, the source limit %d and tolerance %v",
					ns.Name, d.Limit, d.Tolerance, ns.Limit, ns.Tolerance)
			}
			infos, err := m.dst.Slots().List(ctx, ns.Name)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			for _, in := range infos {
				dstSlots[in.Slot] = in
			}
		}
		step.dst = dstSlots
		for _, s := range srcSlots {
			if mayBeInUse(s, m.now) {
				p.live = append(p.live, fmt.Sprintf("lease %s/%d of %s (incarnation %s, fence %d): expires %s, ceiling %s",
					ns.Name, s.Slot, s.Owner, s.Incarnation, s.Fence, stamp(s.ExpiresAt, m.now), stamp(s.Ceiling, m.now)))
			}
			ss := slotStep{src: s, fence: s.Fence, floor: carriedFloor(s)}
			if t, ok := dstSlots[s.Slot]; ok {
				ss.done = carries(t, ss.fence, ss.floor)
				if !ss.done && t.Owner != "" && m.now < t.ExpiresAt {
					problem("slot %s/%d: the target has a live term of %s (fence %d, floor %d) below the source's history (fence %d, floor %d)",
						ns.Name, s.Slot, t.Owner, t.Fence, t.Floor, ss.fence, ss.floor)
				}
			}
			step.slots = append(step.slots, ss)
		}
		p.namespaces = append(p.namespaces, step)
	}
	return nil
}

// carriedFloor is the least floor of a slot's next term: a released slot's
// next floor is exact; a term never released may have issued anything below
// its ceiling.
func carriedFloor(s store.SlotInfo) int64 {
	if s.Owner == "" {
		return s.NextFloor
	}
	return max(s.NextFloor, s.Ceiling)
}

// carries reports whether a target slot already respects a history: its
// next term gets a fence above fence and a floor of at least floor.
func carries(t store.SlotInfo, fence, floor int64) bool {
	if t.Fence < fence {
		return false
	}
	if t.Owner == "" {
		return t.NextFloor >= floor
	}
	// A term already started in the target: the next floor can only be
	// higher than this term's.
	return t.Floor >= floor
}

// apply moves the plan's keys, then its namespaces. A signal (stop
// cancelled) starts no further key or namespace; the one in hand is
// finished on ctx without stop's cancel: a key sealed in the source is
// started in the target, a sealed namespace gets all its slots seeded.
func (m *migration) apply(stop context.Context, p *plan) error {
	ctx := context.WithoutCancel(stop)
	out := m.e.stdout
	steps, failed := 0, 0
	fail := func(what string, err error) {
		failed++
		fmt.Fprintf(m.e.stderr, "%s: FAILED: %s\n", what, driver.Redact(err.Error()))
	}
	var progress progress
	for _, k := range p.keys {
		if stop.Err() != nil {
			break
		}
		steps++
		msg, err := m.moveKey(ctx, k)
		if err != nil {
			fail("key "+k.key, err)
			continue
		}
		progress.keys++
		fmt.Fprintf(out, "key %s: %s\n", k.key, msg)
	}
	for _, n := range p.namespaces {
		if stop.Err() != nil {
			break
		}
		// The layout and the slots as the plan read them go into the
		// target before the seal: a rerun finds the namespace there, the
		// proof that the target is where it moved.
		layout, err := m.carryLayout(ctx, n)
		if err == nil {
			err = m.claimNamespace(ctx, n)
		}
		if err != nil {
			steps++
			fail("namespace "+n.ns.Name, fmt.Errorf("not sealed in the source: %w", err))
			continue
		}
		slots, sealed, err := m.sealNamespace(ctx, n)
		if err != nil {
			steps++
			fail("namespace "+n.ns.Name, err)
			continue
		}
		progress.namespaces++
		fmt.Fprintf(out, "namespace %s: %s; limit %d, tolerance %v, %s used%s\n",
			n.ns.Name, sealed, n.ns.Limit, n.ns.Tolerance, count(len(slots), "slot"), layout)
		for _, s := range slots {
			steps++
			what := fmt.Sprintf("slot %s/%d", n.ns.Name, s.src.Slot)
			if s.done {
				fmt.Fprintf(out, "%s: already carried (the target's next term gets a fence above %d and a floor of at least %d, %s)\n",
					what, s.fence, s.floor, utc(s.floor))
				continue
			}
			err := m.dst.Slots().Seed(ctx, n.ns, s.src.Slot, s.fence, s.floor)
			if errors.Is(err, store.ErrLocked) {
				err = fmt.Errorf("the target slot has a live term: %w", err)
			}
			if err != nil {
				fail(what, err)
				continue
			}
			fmt.Fprintf(out, "%s: seeded fence %d, floor %d (%s); the next term gets fence %d (%s in the source)\n",
				what, s.fence, s.floor, utc(s.floor), s.fence+1, slotState(s.src, m.now))
		}
	}
	if p.locks != nil && stop.Err() == nil {
		if msg, err := m.moveLocks(ctx, p.locks); err != nil {
			steps++
			fail("locks", err)
		} else {
			fmt.Fprintf(out, "locks: %s\n", msg)
		}
	}
	if sig, ok := interrupted(stop); ok {
		return m.interruptedAt(sig, p, progress, failed)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d steps failed; fix the cause and run migrate again (it is safe to rerun)", failed, steps)
	}
	fmt.Fprintf(out, "done: %s, %s\n", count(len(p.keys), "key"), count(steps-len(p.keys), "slot"))
	return nil
}

// sealNamespace seals n's namespace in the source, then reads its slots
// again: what the seal froze (no term starts or renews in the source
// after it), so the slots seeded are those the source ends with, not the
// plan's earlier read. It says whether the namespace was sealed before.
func (m *migration) sealNamespace(ctx context.Context, n nsStep) ([]slotStep, string, error) {
	if err := m.src.Slots().Seal(ctx, n.ns.Name); err != nil {
		return nil, "", fmt.Errorf("sealing in the source (nothing carried): %w", err)
	}
	sealed := "sealed in source"
	if n.ns.Sealed {
		sealed = "already " + sealed
	}
	infos, err := m.src.Slots().List(ctx, n.ns.Name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, "", fmt.Errorf("%s; reading its slots: %w", sealed, err)
	}
	var out []slotStep
	for _, s := range infos {
		ss := slotStep{src: s, fence: s.Fence, floor: carriedFloor(s)}
		if t, ok := n.dst[s.Slot]; ok {
			ss.done = carries(t, ss.fence, ss.floor)
		}
		planned := slices.ContainsFunc(n.slots, func(p slotStep) bool { return p.src.Slot == s.Slot && p.src.Fence == s.Fence })
		if !planned && mayBeInUse(s, m.now) {
			fmt.Fprintf(m.e.stderr, "warning: slot %s/%d: a term of %s (fence %d) started in the source after the plan's read; "+
				"its holder stops at its ceiling %s (the seal refuses its renewals) and the target starts above it\n",
				n.ns.Name, s.Slot, s.Owner, s.Fence, stamp(s.Ceiling, m.now))
		}
		out = append(out, ss)
	}
	return out, sealed, nil
}

// claimNamespace seeds the target with n's slots as the plan read them,
// before the source is sealed: seeding only raises, and the slots are
// seeded again from the sealed source's read after the seal.
func (m *migration) claimNamespace(ctx context.Context, n nsStep) error {
	if n.ns.Sealed {
		return nil // sealed before: the plan found it in the target
	}
	for _, s := range n.slots {
		if s.done {
			continue
		}
		if err := m.dst.Slots().Seed(ctx, n.ns, s.src.Slot, s.fence, s.floor); err != nil {
			return fmt.Errorf("seeding slot %d in the target: %w", s.src.Slot, err)
		}
	}
	return nil
}

// moveKey starts k in the target at the source's value, seals k in the
// source and raises the target to the sealed value. The key is in the
// target before it is sealed in the source, so a rerun after a kill finds
// it there: a key sealed in the source and missing in the target moved to
// another store (the plan refuses it). A rerun finds the source sealed at
// the same value and the target at it, or above it when the target was
// used since.
func (m *migration) moveKey(ctx context.Context, k keyStep) (string, error) {
	if !hasCap[driver.RangeAdvancer](m.dst) {
		return m.initKey(ctx, k)
	}
	created := false // by an instance in the target since the plan's read
	if !k.inTarget {
		err := m.dst.Ranges().Init(ctx, k.key, k.srcNext)
		switch {
		case errors.Is(err, store.ErrConfigMismatch):
			created = true
		case errors.Is(err, store.ErrSealed):
			return "", fmt.Errorf("not sealed in the source; the target has it sealed: the key moved out of the target before. %s",
				sealedTargetAdvice)
		case err != nil:
			return "", fmt.Errorf("not sealed in the source; starting it in the target: %w", err)
		}
	}
	sealedAt, err := m.src.Ranges().Seal(ctx, k.key)
	if err != nil {
		return "", fmt.Errorf("sealing in the source: %w", err)
	}
	sealed := fmt.Sprintf("sealed in source at %d", sealedAt)
	if k.srcSealed {
		sealed = "already " + sealed
	}
	prev, err := m.dst.Ranges().Advance(ctx, k.key, sealedAt)
	switch {
	case errors.Is(err, store.ErrSealed):
		return "", fmt.Errorf("%s; the target has it sealed: the key moved out of the target before. "+
			"Keep both stores as they are and run migrate again with another --to: the source's sealed value carries the key's history",
			sealed)
	case err != nil:
		return "", fmt.Errorf("%s; raising it in the target: %w", sealed, err)
	case created:
		// Absent when the plan read the target: an instance created it
		// since, starting at 0, below the source's values.
		return "", fmt.Errorf("%s; created in the target during the migration, at %d: an instance uses the target, "+
			"and values below %d may repeat what the source handed out. Stop the instances of the target before migrating; "+
			"the key is carried now (the target is at or above the source)", sealed, prev, sealedAt)
	case !k.inTarget || prev < sealedAt && !k.srcSealed && prev == k.srcNext:
		// Started here by this run or an interrupted one.
		return fmt.Sprintf("%s; initialised in target at %d", sealed, sealedAt), nil
	case prev < sealedAt:
		return fmt.Sprintf("%s; raised in target from %d to %d", sealed, prev, sealedAt), nil
	case prev == sealedAt:
		return fmt.Sprintf("%s; already in target at %d", sealed, prev), nil
	}
	return fmt.Sprintf("%s; already in target, used since: at %d", sealed, prev), nil
}

// initKey moves k into a target without driver.RangeAdvancer: such a
// target cannot be raised to the sealed value, so the key starts there
// only after the seal, and a kill between the two leaves it missing in the
// target (a rerun then needs --adopt-sealed).
func (m *migration) initKey(ctx context.Context, k keyStep) (string, error) {
	sealedAt, err := m.src.Ranges().Seal(ctx, k.key)
	if err != nil {
		return "", fmt.Errorf("sealing in the source: %w", err)
	}
	sealed := fmt.Sprintf("sealed in source at %d", sealedAt)
	if k.srcSealed {
		sealed = "already " + sealed
	}
	existed := k.inTarget
	if !existed && sealedAt > 0 {
		next, _, err := m.dst.Ranges().Current(ctx, k.key)
		if err != nil {
			return "", fmt.Errorf("%s; reading the target: %w", sealed, err)
		}
		// A missing key reads 0; an instance's key is above 0.
		existed = next > 0
	}
	err = m.dst.Ranges().Init(ctx, k.key, sealedAt)
	if err == nil && !existed {
		return fmt.Sprintf("%s; initialised in target at %d", sealed, sealedAt), nil
	}
	if err != nil && !errors.Is(err, store.ErrConfigMismatch) {
		return "", fmt.Errorf("%s; initialising in the target: %w", sealed, err)
	}
	next, dstSealed, err := m.dst.Ranges().Current(ctx, k.key)
	if err != nil {
		return "", fmt.Errorf("%s; reading the target: %w", sealed, err)
	}
	switch {
	case dstSealed:
		return "", fmt.Errorf("%s; the target has it sealed at %d: the key moved out of the target before. "+
			"Keep both stores as they are and run migrate again with another --to: the source's sealed value carries the key's history",
			sealed, next)
	case next < sealedAt:
		return "", fmt.Errorf("%s; the target has it at %d, below: values could repeat, so the target was left as it is",
			sealed, next)
	case !k.inTarget:
		// Absent when the plan read the target: an instance created it
		// since, starting at 0, below the source's values.
		return "", fmt.Errorf("%s; created in the target during the migration, now at %d: an instance uses the target, "+
			"and values below %d may repeat what the source handed out. Stop the instances of the target before migrating; "+
			"the key is carried now (the target is above the source)", sealed, next, sealedAt)
	case next == sealedAt:
		return fmt.Sprintf("%s; already in target at %d", sealed, next), nil
	}
	return fmt.Sprintf("%s; already in target, used since: at %d", sealed, next), nil
}
