package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/config"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/drivers/sqlite"
)

func init() {
	register(&command{name: "restore", run: runRestore, usage: `Usage: storectl restore --raise N (--no-moves | --moved-to SPEC...) BACKUP PATH
       storectl restore --raise N (--no-moves | --moved-to SPEC...) [--key KEY]... [--force] STORE FLAGS

Makes a store restored from a backup safe to use again. A backup is behind
what its original handed out after it was taken; restore raises the store
past all of that, so that no value, fence or timestamp is handed out twice:

  - every range key that is not sealed: its next value by N;
  - every slot of every namespace that is not sealed, used or not: its fence
    by N, and the floor of its next term to at least the ceiling of a term
    never released and the time of the restore plus the longest ttl the
    backup's slots show plus twice the namespace's clock tolerance (a term
    of the lost time ended at most a ttl after its last renewal);
  - the store's lock fences, unless its locks are sealed: every fence handed
    out later by N above the highest the store holds (drivers with
    driver.LockSealer; restore warns of one without);
  - then it clears the backup mark (storectl backup writes it into a copy,
    which then opens for tools only and hands out nothing).

N is how far the backup may be behind: more than the values any key handed
out, the terms any slot started and the locks taken, after the backup was taken (a day's
worth, say, for a nightly backup). Too large only skips values.

The first form, for SQLite, copies the backup file BACKUP to the new file
PATH (a damaged store there is moved aside first: nothing is overwritten),
raises the copy before it takes the name PATH, and leaves BACKUP as it is.
The second form raises a store in place: a SQLite file that is a marked
backup copy, or a PostgreSQL, ZooKeeper or etcd store its own tools put
back (pg_restore, a snapshot).

Stop every instance that uses the store first: restore refuses (exit code
3, nothing changed) while a lease may be in use or a lock is held (see
--force for a hold the backup carries). Keys and
namespaces created after the backup was taken are not in it: name such keys
with --key (each is created at N), and give such namespaces new names. Sealed
keys and namespaces stay as they are: they had moved to another store.

A key or namespace that storectl migrate moved out after the backup was
taken is unsealed in the backup, and raised it would be handed out here
and in the store it moved to. restore cannot tell them from the backup, so
it needs one of: --no-moves (nothing was migrated out since the backup), or
--moved-to SPEC for each store keys or namespaces moved to since: every key
and namespace that store has is sealed here instead of raised (a name that
never came from here is sealed too: its callers get ErrSealed). A store
not named is not known: keys moved to it come back to life. Locks moved by
a full migrate after the backup are not sealed again. It is safe to run
again: it only raises and seals. SIGINT or SIGTERM stops it after the key
or namespace in hand: it says how many it raised and what to run next (exit
code 4); the backup mark stays until a restore finishes.

  --raise N   how far the backup may be behind (required, a whole number > 0)
  --no-moves       nothing was migrated out of the store after the backup
  --moved-to SPEC  a store keys or namespaces were migrated to after the
                   backup (repeatable; SPEC as for migrate --from)
  --key KEY   a key created after the backup was taken (repeatable)
  --large     allow N above 1000000000000 (refused without it: a raise is
              final, and a huge one exhausts every key for good)
  --force     carry on although a lock shows a holder: a PostgreSQL backup
              taken while a lock was held carries the hold, which no
              stopped instance can end (a live lease is still refused)

` + storeFlagsUsage})
}

func runRestore(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("restore")
	var sf storeFlags
	sf.register(fs)
	raise := fs.Int64("raise", 0, "how far the backup may be behind")
	var keys listFlag
	fs.Var(&keys, "key", "a range `KEY` created after the backup (repeatable)")
	force := fs.Bool("force", false, "carry on although a lock shows a holder (a hold the backup carries)")
	var movedTo listFlag
	fs.Var(&movedTo, "moved-to", "a store `SPEC` keys or namespaces were migrated to after the backup (repeatable)")
	noMoves := fs.Bool("no-moves", false, "nothing was migrated out of the store after the backup was taken")
	large := fs.Bool("large", false, "raise by more than the maximum")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if *raise <= 0 {
		return usagef("--raise N is required: how far the backup may be behind, a whole number > 0 (values per key, terms per slot)")
	}
	if err := checkRaise("restore", *raise, *large); err != nil {
		return err
	}
	switch {
	case len(movedTo) == 0 && !*noMoves:
		// The backup holds unsealed what migrate moved out after it was
		// taken; raised, it would be handed out twice.
		return usagef("say whether anything moved out of the store after the backup was taken: --moved-to SPEC for each store " +
			"that storectl migrate moved keys or namespaces to since (they are sealed here, not raised), or --no-moves if nothing " +
			"was migrated out since (nothing changed)")
	case len(movedTo) > 0 && *noMoves:
		return usagef("give either --moved-to or --no-moves, not both")
	}
	mv, err := readMoves(ctx, movedTo, sf.config, sf.timeout)
	if err != nil {
		return err
	}
	switch len(pos) {
	case 0:
		st, desc, err := sf.open(openExisting)
		if err != nil {
			return err
		}
		defer st.Close()
		return restoreStore(ctx, e, st, desc, *raise, keys, *force, mv)
	case 2:
		if sf.driver != "" || sf.config != "" {
			return usagef("give either BACKUP PATH (SQLite files) or the store flags, not both")
		}
		backup, path := pos[0], pos[1]
		err := sqlite.RestoreFile(ctx, backup, path, func(ctx context.Context, copyPath string) error {
			sc := config.StoreConfig{Type: "sqlite", Options: map[string]string{"path": copyPath}}
			st, _, err := openStore(sc, sf.timeout, "", openExisting)
			if err != nil {
				return err
			}
			defer st.Close()
			return restoreStore(ctx, e, st, "the copy of "+backup, *raise, keys, *force, mv)
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "restored %s to %s\n", backup, path)
		return nil
	}
	return usagef("want BACKUP PATH, or no argument with the store flags; got %d arguments", len(pos))
}

// restoreStore raises st past what its original handed out after the
// backup, then clears the backup mark.
func restoreStore(stop context.Context, e *env, st *store.Store, desc string, raise int64, extra []string, force bool, mv *moves) error {
	if err := mv.check(stop, st, desc); err != nil {
		return err
	}
	now := e.now().UnixMilli()
	r, err := survey(stop, st, now)
	if err != nil {
		return err
	}
	// A lock row outlives its holder's process in a backup (PostgreSQL
	// keeps a hold until a store takes it over), and raising the fences
	// under a live holder is harmless: --force lets held locks by.
	busy := inUse(&report{Namespaces: r.Namespaces, Now: r.Now})
	held := inUse(&report{Locks: r.Locks, Now: r.Now})
	if !force {
		busy = append(busy, held...)
	}
	if len(busy) > 0 {
		hint := ""
		if !force && len(held) > 0 {
			hint = "\nA lock held when the backup was taken shows its holder after the restore, every instance stopped or not: " +
				"once every instance is stopped, run the same command again with --force."
		}
		return refusedf("%s is in use; stop every instance first (nothing changed):\n  %s%s", desc, strings.Join(busy, "\n  "), hint)
	}
	for _, h := range held {
		fmt.Fprintf(e.stdout, "%s: left to its holder (--force); fences handed out later are raised\n", h)
	}
	// A signal (stop) starts no further raise; the one in hand finishes.
	ctx := context.WithoutCancel(stop)
	stopped := func(keys, namespaces int) error {
		sig, ok := interrupted(stop)
		if !ok {
			return nil
		}
		return interruptedf("%s: stopped after raising %d of %d keys and %d of %d namespaces of %s; the backup mark, if any, "+
			"stays, and the keys and slots not raised yet would hand out again what the original handed out: keep every instance stopped.\n%s",
			sig, keys, len(r.Keys)+len(extra), namespaces, len(r.Namespaces), desc, rerunAdvice(e))
	}
	up := func(v int64) int64 { return min(v, math.MaxInt64-raise) + raise }
	keys, skipped := 0, 0
	var movedKeys, movedNS []string
	for _, k := range r.Keys {
		if err := stopped(keys+skipped, 0); err != nil {
			return err
		}
		if k.Sealed {
			skipped++
			fmt.Fprintf(e.stdout, "key %s: sealed at %d (it moved to another store); left as it is\n", k.Key, k.Next)
			continue
		}
		if _, ok := mv.keys[k.Key]; ok {
			skipped++
			movedKeys = append(movedKeys, k.Key)
			continue
		}
		if _, err := st.Ranges().Advance(ctx, k.Key, up(k.Next)); err != nil {
			return fmt.Errorf("key %s: %w (run restore again once fixed: it only raises)", k.Key, err)
		}
		keys++
		fmt.Fprintf(e.stdout, "key %s: raised from %d to %d\n", k.Key, k.Next, up(k.Next))
	}
	for i, k := range extra {
		if err := stopped(len(r.Keys)+i, 0); err != nil {
			return err
		}
		if _, _, err := st.Ranges().Current(ctx, k); err != nil {
			return badKey(err)
		}
		prev, err := st.Ranges().Advance(ctx, k, raise)
		if err != nil {
			return fmt.Errorf("key %s: %w", k, err)
		}
		fmt.Fprintf(e.stdout, "key %s (--key): at %d, now at least %d\n", k, prev, raise)
	}
	slots := 0
	for i, ns := range r.Namespaces {
		if err := stopped(len(r.Keys)+len(extra), i); err != nil {
			return err
		}
		if ns.Sealed {
			fmt.Fprintf(e.stdout, "namespace %s: sealed (it moved to another store); left as it is\n", ns.Name)
			continue
		}
		if _, ok := mv.namespaces[ns.Name]; ok {
			movedNS = append(movedNS, ns.Name)
			continue
		}
		tol := time.Duration(ns.ToleranceMs) * time.Millisecond
		// A term of the lost time may have run until its ceiling, up to
		// its ttl past its last renewal: the longest ttl the backup shows
		// stands for it.
		var ttl int64
		used := map[int]slotReport{}
		for _, s := range ns.Slots {
			used[s.Slot] = s
			ttl = max(ttl, s.TTLMs)
		}
		floor := now + ttl + 2*tol.Milliseconds()
		sns := store.Namespace{Name: ns.Name, Limit: ns.Limit, Tolerance: tol}
		for n := range ns.Limit {
			fence, next := raise, floor
			if s, ok := used[n]; ok {
				fence, next = up(s.Fence), max(next, carriedFloor(s.info))
			}
			if err := st.Slots().Seed(ctx, sns, n, fence, next); err != nil {
				if errors.Is(err, store.ErrLocked) {
					return refusedf("slot %s/%d has a live term: stop every instance first (run restore again: it only raises): %v", ns.Name, n, err)
				}
				return fmt.Errorf("slot %s/%d: %w (run restore again once fixed: it only raises)", ns.Name, n, err)
			}
			slots++
		}
		fmt.Fprintf(e.stdout, "namespace %s: %s raised: fences by %d, next terms from %s\n",
			ns.Name, count(ns.Limit, "slot"), raise, utc(floor))
	}
	if err := restoreLocks(ctx, e, st, up); err != nil {
		return err
	}
	if _, err := rawAs(st, func(bm driver.BackupMarker) error {
		mark, err := bm.BackupMark(ctx)
		if err != nil || mark == "" {
			return err
		}
		if err := bm.ClearBackupMark(ctx); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "backup mark cleared (%s)\n", mark)
		return nil
	}); err != nil {
		return err
	}
	if err := mv.seal(ctx, e, st, movedKeys, movedNS); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "raised %s by %d and %s (%s left sealed); the store may be used again\n",
		count(keys, "key"), raise, count(slots, "slot"), count(skipped, "sealed key"))
	return nil
}

// notABackup refuses a store marked as a backup copy (driver.BackupMarker)
// where a live store is needed: it may be behind what its original handed
// out, and would hand that out again.
func notABackup(ctx context.Context, st *store.Store, what, desc string) error {
	var mark string
	if _, err := rawAs(st, func(bm driver.BackupMarker) (err error) {
		mark, err = bm.BackupMark(ctx)
		return err
	}); err != nil || mark == "" {
		return err
	}
	return refusedf("%s %s is a backup copy (%s), which may be behind what its original handed out since; nothing changed. "+
		"Restore it first (storectl restore --raise N ...), or migrate from the store it is a copy of", what, desc, mark)
}

// restoreLocks raises the lock fences past those handed out after the
// backup: the fence counter it put back is behind them, and a fence handed
// out twice lets a resource that keeps the highest fence it saw take a
// stale holder for the current one. Sealing gives the highest fence the
// store holds; raising above it unseals again. Locks sealed before (moved
// to another store) stay sealed.
func restoreLocks(ctx context.Context, e *env, st *store.Store, up func(int64) int64) error {
	sealed, err := st.Locks().Sealed(ctx)
	if errors.Is(err, store.ErrUnsupported) {
		if _, lerr := st.Locks().List(ctx); !errors.Is(lerr, store.ErrUnsupported) {
			fmt.Fprintf(e.stderr, "warning: the driver cannot raise its lock fences (it lacks driver.LockSealer): "+
				"lock fences handed out after the backup may be handed out again\n")
		}
		return nil
	}
	if err != nil {
		return err
	}
	if sealed {
		fmt.Fprintf(e.stdout, "locks: sealed (they moved to another store); left as they are\n")
		return nil
	}
	// The seal and the raise are one step: a signal between them would
	// leave the locks sealed, and a rerun would take them for moved out.
	ctx = context.WithoutCancel(ctx)
	floor, err := st.Locks().Seal(ctx)
	if err != nil {
		return fmt.Errorf("locks: %w (run restore again once fixed: it only raises)", err)
	}
	raised := min(up(floor), math.MaxInt64-1)
	if err := st.Locks().RaiseFences(ctx, raised); err != nil {
		return fmt.Errorf("locks: sealed at fence %d, not raised (they stay sealed: Lock gives ErrSealed): %w", floor, err)
	}
	fmt.Fprintf(e.stdout, "locks: fences raised from %d to above %d\n", floor, raised)
	return nil
}
