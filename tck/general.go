package tck

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

func generalChecks() []check {
	return []check{
		{"Declared", needNothing, checkDeclared},
		{"AtLeastOne", needNothing, checkAtLeastOne},
		{"Ping", needNothing, checkPing},
		{"Identity", needNothing, checkIdentity},
	}
}

func purgeChecks() []check {
	return []check{{"Everything", needNothing, checkPurge}, {"Locked", needLocks, checkPurgeLocked},
		{"LiveLease", needSlots, checkPurgeLiveLease}, {"FloorAhead", needSlots, checkPurgeFloorAhead},
		{"Seals", needNothing, checkPurgeSeals}, {"LiveLeaseRace", needSlots, checkPurgeLiveLeaseRace}}
}

func optionChecks() []check {
	return []check{
		{"UnknownKey", needFactory, checkUnknownOption},
		{"UnknownWithValid", needOptions, checkUnknownWithValid},
		{"KeysExact", needOptions, checkOptionKeysExact},
		{"MalformedValue", needOptions, checkMalformedValue},
		{"MissingRequired", needOptions, checkMissingRequired},
		{"CreateFalse", needOptions, checkCreateFalse},
	}
}

func closeChecks() []check {
	return []check{
		{"Ranges", needRanges, checkCloseRanges},
		{"Slots", needSlots, checkCloseSlots},
		{"Locks", needLocks, checkCloseLocks},
	}
}

func errorChecks() []check {
	return []check{
		{"Wrapped", needNothing, checkWrapped},
		{"Deadline", needLocks, checkDeadline},
	}
}

// checkDeclared: the store implements each capability the suite declares,
// and a capability it lacks gives ErrUnsupported.
func checkDeclared(e *env) {
	st := e.open()
	d := driverType(st)
	caps := []struct {
		name     string
		declared bool
		has      bool
		call     func() error
	}{
		{"Ranges", e.suite.Ranges, has[driver.RangeStore](st), func() error { _, err := st.Ranges().Keys(e.ctx); return err }},
		{"Slots", e.suite.Slots, has[driver.SlotLeaseStore](st), func() error { _, err := st.Slots().Namespaces(e.ctx); return err }},
		{"Locks", e.suite.Locks, has[driver.Locker](st), func() error { _, err := st.Locks().List(e.ctx); return err }},
	}
	for _, c := range caps {
		switch {
		case c.declared && !c.has:
			e.t.Errorf("the suite declares %s, but %s does not implement it", c.name, d)
		case !c.declared && !c.has:
			e.wantIs(c.call(), store.ErrUnsupported, "%s of a driver without it", c.name)
		case !c.declared && c.has:
			e.t.Logf("%s implements %s, but the suite does not declare it: its checks are skipped", d, c.name)
		}
	}
}

// has reports whether st's driver implements the driver interface T (an
// optional capability); false once st is closed.
func has[T any](st *store.Store) bool {
	var ok bool
	_ = st.Raw(func(d driver.Store) error { _, ok = d.(T); return nil })
	return ok
}

// needDriver skips the check unless st's driver implements the optional
// interface D.
func needDriver[D any](e *env, st *store.Store) {
	e.t.Helper()
	if !has[D](st) {
		e.t.Skipf("the driver does not implement the optional %v", reflect.TypeFor[D]())
	}
}

// harnessPart returns the harness as its optional interface H, or skips
// the check, saying what the check needs it for.
func harnessPart[H any](e *env, need string) H {
	e.t.Helper()
	h, ok := e.h.(H)
	if !ok {
		e.t.Skipf("the harness (%T) does not implement the optional %v: this check %s", e.h, reflect.TypeFor[H](), need)
	}
	return h
}

// driverType names st's driver's type, for messages.
func driverType(st *store.Store) string {
	name := "a closed store's driver"
	_ = st.Raw(func(d driver.Store) error { name = fmt.Sprintf("%T", d); return nil })
	return name
}

// driverLock takes name at st's driver, below the portable layer (no
// checks, no store timeout): the checks of what a driver's own lock must
// do whatever its caller.
func (e *env) driverLock(st *store.Store, name, owner string) driver.Lock {
	e.t.Helper()
	var l driver.Lock
	err := st.Raw(func(d driver.Store) error {
		lk, ok := d.(driver.Locker)
		if !ok {
			return fmt.Errorf("store %T declares Locks but does not implement driver.Locker", d)
		}
		var err error
		l, err = lk.Lock(e.ctx, name, owner, false)
		return err
	})
	e.fatalIf(err, "driver Lock of %q by %s", name, owner)
	return l
}

// checkUnknownOption: the factory refuses an unknown option, naming it.
func checkUnknownOption(e *env) {
	const key = "tck.no-such-option"
	d, err := e.suite.Factory(map[string]string{key: "1"})
	if err == nil {
		e.t.Errorf("the factory accepted the unknown option %q", key)
		if d != nil {
			_ = d.Close() // the failure is reported; release the store
		}
		return
	}
	e.wantIs(err, store.ErrInvalidArgument, "unknown option %q", key)
	if !strings.Contains(err.Error(), key) {
		e.t.Errorf("the error for the unknown option %q does not name it: %v", key, err)
	}
}

// wantClosed checks that each call, made after Close, gives ErrClosed.
func (e *env) wantClosed(calls map[string]func() error) {
	e.t.Helper()
	for what, call := range calls {
		e.wantIs(call(), store.ErrClosed, "%s after Close", what)
	}
}

// closeTwice closes st twice; both must succeed.
func (e *env) closeTwice(st *store.Store) {
	e.t.Helper()
	e.fatalIf(st.Close(), "Close")
	e.fatalIf(st.Close(), "second Close")
}

// checkCloseRanges: range operations after Close give ErrClosed; other
// stores keep working.
func checkCloseRanges(e *env) {
	st := e.open()
	e.next(st, "closed", 3)
	e.closeTwice(st)
	r := st.Ranges()
	e.wantClosed(map[string]func() error{
		"Next":    func() error { _, err := r.Next(e.ctx, "closed", 1); return err },
		"Current": func() error { _, _, err := r.Current(e.ctx, "closed"); return err },
		"Seal":    func() error { _, err := r.Seal(e.ctx, "closed"); return err },
		"Init":    func() error { return r.Init(e.ctx, "closed/new", 1) },
		"Keys":    func() error { _, err := r.Keys(e.ctx); return err },
	})
	e.wantRange(e.next(e.open(), "closed", 1), 3, 4, "Next from another store after one closed")
}

// checkCloseSlots: slot operations after Close give ErrClosed.
func checkCloseSlots(e *env) {
	st := e.open()
	ns := e.namespace("closed", 2)
	l := e.acquire(st, ns, "owner", e.long())
	e.closeTwice(st)
	s := st.Slots()
	e.wantClosed(map[string]func() error{
		"Acquire":     func() error { _, err := s.Acquire(e.ctx, ns, "other", e.long()); return err },
		"Renew":       func() error { _, err := s.Renew(e.ctx, l); return err },
		"Release":     func() error { return s.Release(e.ctx, l) },
		"ReleaseUsed": func() error { return s.ReleaseUsed(e.ctx, l, l.Floor) },
		"Namespaces":  func() error { _, err := s.Namespaces(e.ctx); return err },
		"Slots":       func() error { _, err := s.List(e.ctx, ns.Name); return err },
	})
	e.wantSearched(e.acquire(e.open(), ns, "other", e.long()), ns.Limit, []int{1 - l.Slot},
		fmt.Sprintf("slot %d is still held: closing leaves leases to expire", l.Slot))
}

// checkCloseLocks: lock operations after Close give ErrClosed, a Lock
// waiting when its store closes returns promptly, and the store's waits
// and holds leave the queues.
func checkCloseLocks(e *env) {
	st := e.open(store.WithOwner("closing"))
	other := e.open(store.WithOwner("other"))
	held := e.lock(st, "closed-held")
	o := e.lock(other, "closed-wait")
	ch := e.lockAsync(e.timeout(e.lockWait), st, "closed-wait")
	e.awaitWaiters(other, "closed-wait", "other", "closing")

	e.closeTwice(st)
	r := e.await(ch, "Lock waiting while its store closed")
	if r.err == nil {
		e.t.Errorf("a Lock waiting while its store closed got the lock")
	} else {
		e.wantIs(r.err, store.ErrClosed, "Lock waiting while its store closed")
	}
	k := st.Locks()
	e.wantClosed(map[string]func() error{
		"Lock":    func() error { _, err := k.Lock(e.ctx, "closed-new"); return err },
		"TryLock": func() error { _, err := k.TryLock(e.ctx, "closed-new"); return err },
		"Locks":   func() error { _, err := k.List(e.ctx); return err },
		"Waiters": func() error { _, err := k.Waiters(e.ctx, "closed-held"); return err },
		"Unlock":  func() error { return held.Unlock(e.ctx) },
	})
	e.awaitWaiters(other, "closed-wait", "other")
	e.awaitWaiters(other, "closed-held")
	e.unlock(o)
	e.unlock(e.lock(other, "closed-held"))
}

// checkWrapped: errors are *store.Error naming the operation and key, and
// wrapping the sentinel.
func checkWrapped(e *env) {
	if !e.suite.Ranges && !e.suite.Slots && !e.suite.Locks {
		e.t.Skip("the driver declares no capability")
	}
	st := e.open()
	want := func(err error, op, key string, sentinel error) {
		e.t.Helper()
		var se *store.Error
		if !errors.As(err, &se) {
			e.t.Errorf("%s: error %v (%T) is not a *store.Error", op, err, err)
			return
		}
		if se.Op != op || se.Key != key {
			e.t.Errorf("error %v names operation %q and key %q, want %q and %q", err, se.Op, se.Key, op, key)
		}
		e.wantIs(err, sentinel, "%s", op)
	}
	if e.suite.Ranges {
		_, err := st.Ranges().Seal(e.ctx, "wrapped")
		e.fatalIf(err, "Seal")
		_, err = st.Ranges().Next(e.ctx, "wrapped", 1)
		want(err, "Next", "wrapped", store.ErrSealed)
		_, err = st.Ranges().Next(e.ctx, "wrapped", 0)
		want(err, "Next", "wrapped", store.ErrInvalidArgument)
	}
	if e.suite.Slots {
		ns := e.namespace("wrapped", 1)
		e.acquire(st, ns, "a", e.long())
		_, err := st.Slots().Acquire(e.ctx, ns, "b", e.long())
		want(err, "Acquire", "wrapped", store.ErrExhausted)
	}
	if e.suite.Locks {
		l := e.lock(st, "wrapped")
		_, err := e.open().Locks().TryLock(e.ctx, "wrapped")
		want(err, "TryLock", "wrapped", store.ErrLocked)
		e.unlock(l)
	}
}

// checkDeadline: a Lock that runs out of time satisfies
// errors.Is(err, context.DeadlineExceeded), as a *store.Error.
func checkDeadline(e *env) {
	holder := e.open()
	l := e.lock(holder, "deadline")
	ctx, cancel := context.WithTimeout(e.ctx, e.short)
	defer cancel()
	start := time.Now()
	got, err := e.open().Locks().Lock(ctx, "deadline")
	if err == nil {
		e.t.Errorf("Lock of a held lock succeeded (fence %d)", got.Fence())
		_ = got.Unlock(e.ctx) // the failure is reported; free the lock
	}
	e.wantIs(err, context.DeadlineExceeded, "Lock of a held lock with a %v timeout", e.short)
	var se *store.Error
	if err != nil && !errors.As(err, &se) {
		e.t.Errorf("deadline error %v (%T) is not a *store.Error", err, err)
	}
	if d := time.Since(start); d > e.short+e.prompt {
		e.t.Errorf("Lock with a %v timeout returned after %v", e.short, d)
	}
	e.unlock(l)
}

// checkPurge: the optional Purger deletes everything: afterwards a new
// store finds nothing, and lock fences still grow.
func checkPurge(e *env) {
	st := e.open()
	needDriver[driver.Purger](e, st)
	var fence int64
	if e.suite.Ranges {
		e.next(st, "purge/key", 5)
	}
	var released store.Lease
	if e.suite.Slots {
		// Released with its last used timestamp: a next floor ahead of
		// the clock stops a purge (Purge/FloorAhead).
		released = e.acquire(st, e.namespace("purge", 2), "owner", e.long())
		e.releaseUsed(st, released)
	}
	if e.suite.Locks {
		l := e.lock(st, "purge")
		fence = l.Fence()
		e.unlock(l)
	}
	deleted, err := st.Purge(e.ctx)
	e.fatalIf(err, "Purge")
	if len(deleted) == 0 && (e.suite.Ranges || e.suite.Slots || e.suite.Locks) {
		e.t.Errorf("Purge of a store with data reports nothing deleted")
	}
	for _, d := range deleted {
		if strings.TrimSpace(d) == "" {
			e.t.Errorf("Purge reports an empty entry among %q", deleted)
			break
		}
	}
	e.wantPurged(deleted, released)

	fresh := e.open()
	if e.suite.Ranges {
		keys, err := fresh.Ranges().Keys(e.ctx)
		e.fatalIf(err, "Keys after Purge")
		e.wantEmpty("Keys after Purge (see driver.Purger: no keys)", keys)
		e.wantRange(e.next(fresh, "purge/key", 1), 0, 1, "Next of a purged key from a new store")
	}
	if e.suite.Slots {
		nss, err := fresh.Slots().Namespaces(e.ctx)
		e.fatalIf(err, "Namespaces after Purge")
		e.wantEmpty("Namespaces after Purge", nss)
		_, err = fresh.Slots().List(e.ctx, "purge")
		e.wantIs(err, store.ErrNotFound, "Slots of a purged namespace")
		// Its namespace is gone with it: a renewal is lost (see
		// driver.SlotLeaseStore.Renew), whatever else it finds missing.
		_, err = st.Slots().Renew(e.ctx, released)
		e.wantIs(err, store.ErrLeaseLost, "Renew of a released term after a Purge deleted its namespace")
	}
	if e.suite.Locks {
		names, err := fresh.Locks().List(e.ctx)
		e.fatalIf(err, "Locks after Purge")
		e.wantEmpty("Locks after Purge", names)
		l := e.lock(fresh, "purge")
		if l.Fence() <= fence {
			e.t.Errorf("lock fence %d after Purge is not above %d from before: fences must never repeat", l.Fence(), fence)
		}
		e.unlock(l)
	}
}

// checkAtLeastOne: a driver store implements at least one capability.
func checkAtLeastOne(e *env) {
	st := e.open()
	if !has[driver.RangeStore](st) && !has[driver.SlotLeaseStore](st) && !has[driver.Locker](st) {
		e.t.Errorf("%s implements none of driver.RangeStore, driver.SlotLeaseStore and driver.Locker", driverType(st))
	}
}

// checkPing: a driver that is a driver.Pinger answers Ping on an open store,
// and Ping with a context already ended fails with the context's error
// (ErrUnsupported for a driver that is not one).
func checkPing(e *env) {
	st := e.open()
	if !has[driver.Pinger](st) {
		e.wantIs(st.Ping(e.ctx), store.ErrUnsupported, "Ping of a driver that is not a driver.Pinger")
		return
	}
	e.fatalIf(st.Ping(e.ctx), "Ping of an open store")
	ended, cancel := context.WithCancel(e.ctx)
	cancel()
	e.wantIs(st.Ping(ended), context.Canceled, "Ping with a cancelled context")
}

// checkPurgeLocked: a purge run by mistake while one store holds a lock and
// another waits for it deletes nothing and gives ErrLocked; the hold stays
// good and the wait goes on (ending a hold would make two holders: the
// holder may be paused). Once the lock is free the purge goes through.
func checkPurgeLocked(e *env) {
	a, b := e.open(), e.open()
	needDriver[driver.Purger](e, a)
	var before store.Range
	if e.suite.Ranges {
		before = e.next(a, "purge-locked", 1)
	}
	held := e.lock(a, "purge")
	waited := make(chan error, 1)
	e.goroutine(func() {
		k, err := b.Locks().Lock(e.timeout(e.lockWait), "purge")
		if err == nil {
			err = k.Unlock(e.ctx)
		}
		waited <- err
	})
	if !e.eventually(e.prompt, func() bool {
		ws, err := a.Locks().Waiters(e.ctx, "purge")
		return err == nil && len(ws) == 2
	}) {
		e.t.Fatal("the waiter never showed in Waiters")
	}
	op := e.open()
	deleted, err := op.Purge(e.ctx)
	e.wantIs(err, store.ErrLocked, "Purge while a lock is held and waited on (deleted %q)", deleted)
	if isClosed(held.Lost()) {
		e.t.Fatal("the refused purge lost the hold (see driver.Purger)")
	}
	if _, err := op.Locks().TryLock(e.ctx, "purge"); !errors.Is(err, store.ErrLocked) {
		e.t.Fatalf("TryLock after a refused purge: %v, want ErrLocked (a still holds the lock)", err)
	}
	if e.suite.Ranges {
		if got := e.next(op, "purge-locked", 1); got.Start < before.End {
			e.t.Errorf("after a refused purge Next gave %v, after %v: the purge deleted the key", got, before)
		}
	}
	select {
	case err := <-waited:
		e.t.Fatalf("the wait ended at the refused purge: %v", err)
	default:
	}
	e.unlock(held)
	select {
	case err := <-waited:
		e.fatalIf(err, "the waiter's Lock once the holder unlocked")
	case <-time.After(e.lockWait):
		e.t.Fatal("the waiter was not granted the lock after the holder unlocked")
	}
	// The purging store's own hold counts as much as another's.
	own := e.lock(op, "purge-own")
	deleted, err = op.Purge(e.ctx)
	e.wantIs(err, store.ErrLocked, "Purge by the store that holds a lock (deleted %q; see driver.Purger: "+
		"while any lock is held or waited on, Purge deletes nothing)", deleted)
	if isClosed(own.Lost()) {
		e.t.Fatal("the refused purge lost its own store's hold (see driver.Purger)")
	}
	e.unlock(own)
	_, err = op.Purge(e.ctx)
	e.fatalIf(err, "Purge once no lock is held or waited on")
}

// checkIdentity: the optional Identifier gives every store of one storage
// the same non-empty identity, and a store of another storage another one.
func checkIdentity(e *env) {
	const rule = "(see driver.Identifier: two stores are the same exactly when their identities are equal)"
	a, b := e.open(), e.open()
	if !has[driver.Identifier](a) {
		e.wantIs(func() error { _, err := a.ID(e.ctx); return err }(), store.ErrUnsupported, "ID of a driver that is not a driver.Identifier")
		return
	}
	ida, err := a.ID(e.ctx)
	e.fatalIf(err, "ID")
	idb, err := b.ID(e.ctx)
	e.fatalIf(err, "ID from a second store on the same storage")
	if ida == "" || ida != idb {
		e.t.Errorf("two stores on one storage give the identities %q and %q %s", ida, idb, rule)
	}
	h, err := e.suite.NewHarness(e.ctx, e.t)
	e.fatalIf(err, "NewHarness for a second storage")
	defer func() { e.fatalIf(h.Close(), "Harness.Close of the second storage") }()
	d, err := h.NewStore(e.ctx)
	e.fatalIf(err, "NewStore on a second storage")
	other, err := store.OpenDriver(d)
	if err != nil {
		_ = d.Close()
		e.t.Fatalf("store.OpenDriver on a second storage: %v", err)
	}
	defer other.Close()
	ido, err := other.ID(e.ctx)
	e.fatalIf(err, "ID of a second storage")
	if ido == "" || ido == ida {
		e.t.Errorf("two storages give the identities %q and %q %s", ida, ido, rule)
	}
}

// checkCreateFalse: once a store exists at Suite.Options (opened,
// connected (driver.Connector) and written to: a driver may create it at
// Connect or at the first write), the factory opens it with
// create=false too (driver.OptionCreate), or refuses the option as unknown
// (a driver should accept it, need not). Options naming no store
// (Suite.MissingOptions) opened with create=false are refused with
// ErrNotFound, twice: the first refusal created nothing.
func checkCreateFalse(e *env) {
	open := func(opts map[string]string) (*store.Store, error) {
		d, err := e.suite.Factory(opts)
		if err != nil {
			return nil, err
		}
		if c, ok := d.(driver.Connector); ok {
			err = c.Connect(e.ctx)
		}
		var st *store.Store
		if err == nil {
			st, err = store.OpenDriver(d)
		}
		if err != nil {
			_ = d.Close()
		}
		return st, err
	}
	st, err := open(maps.Clone(e.suite.Options))
	e.fatalIf(err, "opening a store with Suite.Options %q", e.suite.Options)
	if e.suite.Ranges { // something written, for a driver that creates its store at the first write
		_, err = st.Ranges().Next(e.ctx, "create-false", 1)
		e.fatalIf(err, "Next")
	}
	e.fatalIf(st.Close(), "closing the store opened with Suite.Options")
	opts := maps.Clone(e.suite.Options)
	opts[driver.OptionCreate] = "false"
	st, err = open(opts)
	if err != nil {
		if errors.Is(err, store.ErrInvalidArgument) && strings.Contains(err.Error(), driver.OptionCreate) {
			e.t.Skipf("the driver does not accept the option %q: %v", driver.OptionCreate, err)
		}
		e.t.Fatalf("opening with create=false refused the existing store at %q: %v "+
			"(see driver.OptionCreate: false opens an existing store)", e.suite.Options, err)
	}
	e.fatalIf(st.Close(), "closing the store opened with create=false")
	if e.suite.MissingOptions == nil {
		return
	}
	opts = maps.Clone(e.suite.MissingOptions(e.t))
	opts[driver.OptionCreate] = "false"
	for _, when := range []string{"", " again (the first refusal must have created nothing)"} {
		st, err = open(opts)
		if err == nil {
			e.fatalIf(st.Close(), "closing the store opened with create=false")
			e.t.Fatalf("opening with create=false%s opened a store at %q, where none exists "+
				"(see driver.OptionCreate: it fails with ErrNotFound, having created nothing)", when, opts)
		}
		if !errors.Is(err, store.ErrNotFound) {
			e.t.Fatalf("opening with create=false%s at %q, where no store exists, gave %v, not ErrNotFound "+
				"(see driver.OptionCreate)", when, opts, err)
		}
	}
}
