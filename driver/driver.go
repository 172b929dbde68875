package driver

import (
	"context"
	"errors"
	"time"
)

// Sentinel errors. Package store re-exports them; drivers return them
// (possibly wrapped) and the portable layer adds the operation and key.
var (
	ErrSealed          = errors.New("sealed")
	ErrExhausted       = errors.New("exhausted")
	ErrLeaseLost       = errors.New("lease lost")
	ErrInvalidArgument = errors.New("invalid argument")
	ErrCorrupt         = errors.New("corrupt data")
	ErrRecreated       = errors.New("node was deleted or recreated")
	ErrConfigMismatch  = errors.New("configuration mismatch")
	ErrUnsupported     = errors.New("unsupported by this driver")
	ErrClosed          = errors.New("store closed")
	ErrLocked          = errors.New("held by another") // a lock, or a slot with a live term
	ErrNotFound        = errors.New("not found")
	// ErrUnavailable is wrapped, next to the context error, by an operation
	// that ended because no server answered in time; the message says what
	// the driver saw (when a server last answered, which it tried).
	ErrUnavailable = errors.New("unavailable")
)

// Factory opens a store from a map of options. It must reject an unknown
// option key with an error wrapping ErrInvalidArgument and naming the key,
// also when valid keys come with it, a malformed value with an error
// naming the key and the value (Options does both), and a required option
// left out with an error naming it (Options.Required). Keys match exactly, as
// written: case, spaces and punctuation count ("Name" is not "name"). With
// create=false (OptionCreate) it opens any store that a store opened with
// create and written to made, whether the driver creates its storage at
// open or at the first write.
type Factory func(options map[string]string) (Store, error)

// Store is an open driver store. It must also implement at least one of
// RangeStore, SlotLeaseStore and Locker; the TCK's suite declares which.
//
// Every store a program opens on the same storage acts as a separate
// process: what one writes, the others see at once (no cache of another
// store's writes may be trusted). Calls in flight at once, from any
// stores, are linearizable: each answer is one that a single copy of the
// data, doing the calls one at a time in an order that keeps every call
// between its start and its return, could give. A persistent driver keeps
// everything below across a restart of its storage: ranges, slot records,
// owner indexes and lock fences (the TCK's Restart check).
type Store interface {
	// Close ends every goroutine and connection the store started, and
	// every lock hold and wait of the store (see Locker); lock waits in
	// flight return promptly. Slot terms are not touched: they expire as
	// after a crash. Calls made after Close are refused by the portable
	// layer (ErrClosed), and a second Close never reaches the driver.
	Close() error
}

// RangeStore hands out ranges of int64 values per key. A key keeps one
// int64, its next value, and a sealed flag; keys are independent, "a" and
// "a/b" included (a key is never the parent of another).
type RangeStore interface {
	// Next reserves step values of key and returns the first, start: the
	// range is [start, start+step), so the next value becomes start+step.
	// A missing key starts at 0 and exists from then on. No value is ever
	// returned twice, across goroutines, stores sharing storage and faults:
	// a write whose outcome is unknown is a gap, never retried as if it had
	// failed. A sealed key gives ErrSealed, whatever the step (sealed is
	// told before exhausted). An allocation whose end would
	// pass math.MaxInt64 gives ErrExhausted and changes nothing; one ending
	// exactly at math.MaxInt64 succeeds, so math.MaxInt64 itself is never
	// handed out. Without faults, the ranges of a key tile [0, next) with
	// no gap. A step below 1 gives ErrInvalidArgument and changes nothing:
	// the store checks it first, and the driver checks it again (CheckStep),
	// since (*store.Store).Driver hands the driver itself to callers.
	//
	// A key whose storage went back under the store (a backup restored, a
	// replica promoted without its last commits, the record deleted or
	// written back by hand) is never handed out again from below: a store
	// that saw the key further ahead refuses it, with ErrCorrupt (or
	// ErrRecreated for a key it used that is now missing, which it never
	// creates again), or goes on above every value it handed out. A key
	// whose record does not parse (written wrong by hand, a broken tool)
	// gives ErrCorrupt to Next and Current, from every store: never a
	// range, never a next value guessed from it.
	Next(ctx context.Context, key string, step int64) (start int64, err error)

	// Current returns the next value of key and whether it is sealed,
	// reserving nothing and creating nothing: a missing key is (0, false),
	// and is still missing afterwards (not listed by Keys; Init at any
	// value still succeeds). It sees every other store's writes.
	Current(ctx context.Context, key string) (next int64, sealed bool, err error)

	// Seal marks key sealed and returns its final next value; every store's
	// Next of it then gives ErrSealed. Sealing a sealed key is not an error
	// and returns the same value. A missing key is sealed at 0 (and then
	// exists). A key that went back under a store that saw it further
	// ahead (see Next) is sealed by that store above every value it
	// handed out, or refused (ErrCorrupt, ErrRecreated) sealing nothing,
	// so that a restore can still raise it (RangeAdvancer).
	Seal(ctx context.Context, key string) (next int64, err error)

	// Init creates key with the given next value (0 <= next <=
	// math.MaxInt64), for a migration; Next then continues from it. If the
	// key exists at the same next value (sealed or not), Init succeeds and
	// changes nothing; at a different value it fails with
	// ErrConfigMismatch and changes nothing.
	Init(ctx context.Context, key string, next int64) error

	// Keys lists every existing key, sealed ones included, sorted, as an
	// empty (non-nil) slice when there is none. A key exists once a Next,
	// Seal or Init created it; nothing else is listed (no parents, no
	// keys only asked about by Current).
	Keys(ctx context.Context) ([]string, error)
}

// Namespace holds the settings of a slot namespace. They are fixed when
// the namespace is first created, by an Acquire or a SeedSlot: a later
// call naming other settings gives ErrConfigMismatch and changes nothing.
// A namespace that SealNamespace created has Limit 0 and Tolerance 0.
type Namespace struct {
	Name      string
	Limit     int           // slots 0..Limit-1
	Tolerance time.Duration // clock tolerance added to expiry to form the ceiling
	// Sealed is set by Namespaces for a sealed namespace (SealNamespace);
	// in a request (Acquire, SeedSlot) it is false and means nothing.
	Sealed bool
}

// AcquireRequest asks for one slot of a namespace. The portable layer has
// filled in the defaults (ttl, incarnation) and checked every field.
type AcquireRequest struct {
	Namespace   Namespace
	Owner       string        // owner key: survives restarts
	Incarnation string        // one run of the owner
	TTL         time.Duration // whole milliseconds, > 0
	Preferred   int           // tried after the owner's last slots; -1: none; always < Limit
	Reclaim     bool          // may take over a live term of the same owner, other incarnation
}

// Lease is one term of one slot. Times are milliseconds since the Unix
// epoch in the store's clock.
type Lease struct {
	Namespace   string
	Slot        int
	Owner       string
	Incarnation string
	Fence       int64
	TTL         time.Duration
	Tolerance   time.Duration
	Floor       int64 // first timestamp the holder may issue
	ExpiresAt   int64 // the holder stops issuing when its clock reaches this
	Ceiling     int64 // timestamps stay below this

	// State is the driver's own (a version, say); the portable layer hands
	// it back unchanged on Renew and Release.
	State any
}

// SlotInfo describes one used slot, for tools: SlotRecord.Info of its
// record. A live or expired term shows its holder and times; a released
// or seeded slot has no Owner and shows its last term's fields.
type SlotInfo struct {
	Slot        int
	Owner       string // holder of the current term (live or expired, not ended); empty when none
	Incarnation string
	LastOwner   string // owner of the last term that ended: released, taken over, or ended by a seed
	Fence       int64
	TTL         time.Duration
	Tolerance   time.Duration
	Floor       int64
	ExpiresAt   int64
	Ceiling     int64
	NextFloor   int64 // the next term starts at least here; during a term, its Floor
}

// SlotLeaseStore leases worker slots. It keeps, per namespace, its settings;
// per slot, a SlotRecord; per owner key, the slots it held last (at most
// OwnerIndexLen, most recent first). The rules below are SlotRecord's
// methods: a driver supplies storage, the store's clock and an atomic
// read-modify-write, and calls them. All times are the store's clock
// (a server's write time, a database's clock), never the caller's.
type SlotLeaseStore interface {
	// Acquire creates the namespace if it is missing (ErrConfigMismatch,
	// creating nothing, if it exists with another Limit or Tolerance) and
	// leases a slot at now, the store's time. A sealed namespace gives
	// ErrSealed before anything else is compared: a seal is reported
	// before a mismatch of settings (a namespace SealNamespace created has
	// Limit 0, which no Acquire names). The namespace a missing one gets is kept whatever the
	// Acquire ends in: one that ends ErrExhausted (every slot passed over)
	// has still created it, with its settings, and Namespaces lists it.
	//
	//   - A live term of the same owner and incarnation among the owner's
	//     last slots and the preferred slot is returned as it is, whatever
	//     the order (a retried Acquire gets the term it already has), with
	//     or without Reclaim. (Package store gives each store it opens an
	//     incarnation of its own, so only that store's retries match.)
	//   - Otherwise the first free slot in this order (FirstSlots): the
	//     owner's last slots, most recently acquired first; the preferred
	//     slot, if any; a free slot of the rest, searched in SearchOrder
	//     from SearchStart of the owner and incarnation, a point spread over
	//     the namespace by a hash (so that a fleet acquiring at once spreads
	//     over it rather than all racing for one slot, not the lowest free
	//     slot; the kit checks this order). Free (SlotRecord.Judge):
	//     never used, released, or expired (now >= ExpiresAt, whoever held
	//     it); with Reclaim also a live term of the same owner under another
	//     incarnation. Never a live term of another owner, however close
	//     its expiry; an owner whose live term is held under another
	//     incarnation and who asks without Reclaim gets another slot.
	//   - No free slot: ErrExhausted, only after every slot was judged. A
	//     slot whose fence is math.MaxInt64, or whose data is corrupt, is
	//     passed over and named in that error.
	//
	// The new term (SlotRecord.NewTerm): fence = old fence + 1 (1 for a
	// slot never used, above the purged fences after a purge); floor = 0
	// for a slot never used, the old next floor after a release or a seed,
	// max(old next floor, old ceiling) when a term is taken over (expired
	// or reclaimed); ExpiresAt = now + TTL; Ceiling = max(Floor,
	// ExpiresAt + Tolerance), so a floor ahead of now (a long term before
	// a short one) still gets Ceiling >= Floor. LastOwner becomes the
	// taken-over term's owner on a takeover and is kept otherwise. The
	// slot goes first in the owner's index in the same atomic write.
	//
	// A slot record that went back under running stores (a backup
	// restored, a record written back or deleted by hand) starts no term
	// at a fence or timestamps a term it cannot see may have had: a store
	// that saw the slot further ahead refuses it (ErrCorrupt, or
	// ErrRecreated), and a record deleted under a live term is not started
	// again from zero by any store (refused, or a new term above the live
	// one's fence and ceiling); that live term's Renew gives ErrLeaseLost.
	Acquire(ctx context.Context, req AcquireRequest) (Lease, error)

	// Renew continues l's term (SlotRecord.Renewed): ExpiresAt = max(old
	// ExpiresAt, now + TTL) and Ceiling likewise, so neither decreases
	// within a term, even when the store's clock steps back; the fence,
	// floor and everything else stay. A renewal after ExpiresAt that finds
	// the term untouched (nobody took the slot, no seed ended it)
	// continues it. If the slot holds another term, or none (released,
	// taken over, seeded after expiry, purged): ErrLeaseLost.
	//
	// Only what identifies the term is taken from l: Namespace, Slot,
	// Owner, Incarnation, Fence and the driver's State. Times and bounds
	// come from the stored record, never from l. A lease of the slot's
	// term whose TTL, Tolerance or Floor differ from the term's, whose
	// ExpiresAt or Ceiling is above the term's current one (an older copy
	// of the lease has lower ones, and is fine), or whose Ceiling is below
	// its Floor or its ExpiresAt + Tolerance, gives ErrInvalidArgument
	// naming the field (SlotRecord.Agrees), and the slot is not changed.
	// This applies to Release too.
	Renew(ctx context.Context, l Lease) (Lease, error)

	// Release ends l's term (SlotRecord.Released). used is the highest
	// timestamp issued, or -1 when unknown; the next floor becomes
	// clamp(used+1, Floor, Ceiling), or Ceiling when unknown, Floor and
	// Ceiling being the stored term's (the highest any renewal reported,
	// also when l is an older copy of the lease); a lease whose times
	// disagree with the term gives ErrInvalidArgument as for Renew, and
	// changes nothing. The slot is then free; its fence and LastOwner (the
	// releasing owner) stay. Releasing an expired term nobody took
	// succeeds. A term that is no longer the slot's gives ErrLeaseLost,
	// so a second Release does too.
	Release(ctx context.Context, l Lease, used int64) error

	// Namespaces lists every namespace with its settings, sorted by name,
	// as an empty (non-nil) slice when there is none.
	Namespaces(ctx context.Context) ([]Namespace, error)

	// Slots lists every used slot of a namespace by slot number: every slot
	// ever acquired or seeded, live, expired or released (SlotRecord.Info);
	// a slot never used is not listed. A missing namespace gives
	// ErrNotFound.
	Slots(ctx context.Context, ns string) ([]SlotInfo, error)

	// SealNamespace seals namespace ns, for a migration: once it returns,
	// every store's Acquire in ns gives ErrSealed (checked before the
	// settings: no new term, not even of a slot the owner holds), and so
	// does every Renew of a term of ns, so no term's Ceiling grows past
	// what a reader of the slots saw after the seal. Release still works
	// (it records the used values), and so do the listings, which show
	// the namespace Sealed; SeedSlot gives ErrSealed (a sealed namespace's
	// history is final). Sealing twice is not an error. A missing
	// namespace is created sealed, with Limit 0 and Tolerance 0. The seal
	// is checked in the same atomic step as Acquire's and Renew's write:
	// a term is never started or renewed after SealNamespace returned.
	// Nothing removes a seal: Purge refuses a store that holds one, and a
	// namespace's record deleted by hand beside its slots' records (its
	// seal with it) is not created again: Acquire gives ErrCorrupt (or
	// ErrSealed), whichever store asks.
	SealNamespace(ctx context.Context, ns string) error
}

// Locker gives fair, exclusive, named locks. It keeps, per name, the
// queue of its holder and waiters, and a fence counter that only grows:
// never reset, not by an unlock, a restart or a purge.
type Locker interface {
	// Lock waits until name is held by the caller or ctx ends. At most one
	// holder at any instant, across stores. Waiters get the lock in
	// arrival order, whatever their owner names. A waiter whose context
	// ends returns the context's error promptly, leaves no trace, and does
	// not block the next; one cancelled at the instant it is granted the
	// lock passes it on. With wait false it never waits and returns
	// ErrLocked if another holds or waits for the lock (also right after
	// an unlock while a waiter is queued). A queue entry that a failed
	// try or an ended wait leaves may be removed in the background after
	// the call returns: until then Waiters lists it, and a try of the name
	// by any store may fail with ErrLocked on it. Not reentrant: a second Lock of
	// a held name by the same store waits like any other. owner is
	// recorded for tools. A store's Close ends its waits (ErrClosed) and
	// holds (their Lost closes, the next waiter gets the lock).
	Lock(ctx context.Context, name, owner string, wait bool) (Lock, error)

	// Locks lists, sorted, the names of every lock held or waited on, and
	// of locks taken before that the driver still keeps (a driver may
	// forget the names nobody holds or waits for), as an empty (non-nil)
	// slice when there is none.
	Locks(ctx context.Context) ([]string, error)

	// Waiters lists a lock's holder and waiters in lock order (the holder
	// first), empty when the lock is free. A name never used, or forgotten
	// since, gives ErrNotFound.
	Waiters(ctx context.Context, name string) ([]Waiter, error)
}

// Lock is a held lock.
type Lock interface {
	// Unlock releases the lock and the next waiter gets it; only the
	// caller's own hold is removed, never a later holder's. A second call
	// returns nil. After the hold was lost it reports ErrLeaseLost.
	Unlock(ctx context.Context) error
	// Fence is above every fence of every earlier holder of the name, in
	// any store, across restarts and purges, and never wraps; a store
	// running across a restore of its storage grants no fence again (or
	// refuses the lock: ErrCorrupt, ErrRecreated).
	Fence() int64
	// Lost is closed as soon as the holder can no longer be sure it holds
	// the lock, and when the store closes; it closes before any other
	// store can be granted the lock. Unlock does not close it.
	Lost() <-chan struct{}
}

// Waiter is one holder or waiter of a lock.
type Waiter struct {
	Owner string
	// Fence is the fence the entry holds, or, for a waiter, the one it will
	// hold if it is granted the lock: fixed when it queues, above every
	// fence of the name handed out before, and growing along the queue. A
	// RaiseLockFences while it waits may give it a higher one
	// (LockSealer); a holder granted before a raise may then be listed
	// with the raise's offset added, above its hold's fence (the drivers
	// whose fences are a counter plus an offset: ZooKeeper, etcd, SQL).
	Fence int64
}

// SlotSeeder is an optional capability of a SlotLeaseStore, for migrations
// between stores: it carries a slot's history so that the slot's next term
// stays above every timestamp and fence of the terms in the old store.
type SlotSeeder interface {
	// SeedSlot creates the namespace if it is missing (ErrConfigMismatch if
	// it exists with other settings, ErrSealed if it is sealed) and raises slot's history
	// (SlotRecord.Seeded): its fence becomes at least fence and its next
	// floor at least nextFloor; nothing is ever lowered, so seeding again
	// is harmless. A slot never used becomes a released slot, listed by
	// Slots, whose next term gets the fence plus 1 and the next floor. A
	// term that expired without a release is ended first, as a takeover
	// would end it (its next floor takes in its ceiling; its holder's
	// Renew gives ErrLeaseLost), so the next term starts at or above the
	// seeded next floor even when that is above the old ceiling. A slot
	// with a live term gives ErrLocked and is not changed.
	SeedSlot(ctx context.Context, ns Namespace, slot int, fence, nextFloor int64) error
}

// LayoutKeeper is an optional capability of a SlotLeaseStore: it keeps,
// per namespace, the layout its IDs were issued with (an opaque text of
// the generator's, such as idgen.Layout's String), so that a generator of
// another layout, whose IDs could equal earlier ones, is refused.
type LayoutKeeper interface {
	// KeepLayout creates the namespace if it is missing, as Acquire does
	// (ErrConfigMismatch if it exists with other settings, ErrSealed if
	// it is sealed), records layout as its layout if it has none yet, and
	// returns its layout: layout, or the one recorded before, which is
	// never replaced (compare-and-set: of two calls with different
	// layouts on a namespace without one, one records and the other gets
	// the first's). The layout goes with the namespace: a purge forgets
	// both. layout is 1 to 1024 bytes of printable text, no line breaks.
	KeepLayout(ctx context.Context, ns Namespace, layout string) (string, error)
	// Layout returns namespace ns's layout, "" when it has none (or the
	// namespace is missing), changing nothing; a sealed namespace's too.
	// A migration carries it to the target with KeepLayout.
	Layout(ctx context.Context, ns string) (string, error)
}

// Purger is an optional capability: it deletes everything the store keeps
// (for ZooKeeper, every node of its layout under the root; a node outside
// that layout, such as another store's root inside this one, makes it
// delete nothing and give ErrCorrupt naming the node), for an operator who stopped
// every instance. It returns what it deleted, one readable non-empty entry
// per thing, worded the driver's way but carrying its names: each range
// key ("range key k"), namespace ("namespace ns"), slot ("slot ns/3"),
// owner index ("owner ns/owner") and lock, a path where the backend has
// one. Afterwards a new store finds nothing (no keys, namespaces or
// locks; a key starts again at 0), but fences never repeat: every lock fence and every slot fence handed out later is
// above every one handed out before, so a driver keeps the highest purged
// fences (a counter that survives the purge; ZooKeeper's czxids and the
// root's slot_fence_floor). The slot fence floor is store-wide: every
// namespace created after the purge starts above it.
//
// While any lock is held or waited on (by a session the storage still
// counts as live: ZooKeeper's ephemeral lock nodes, PostgreSQL's lock rows
// until their session is taken over), Purge deletes nothing and gives
// ErrLocked naming the lock: a purge never ends a hold, since its holder
// may be paused and still count on it, so it never makes two holders. A
// lock taken while the purge runs either stops it or waits for it to end.
// Likewise, while any slot holds a term that is not released and whose
// Ceiling is ahead of the store's clock (SlotRecord.Issuing), Purge deletes
// nothing and gives ErrLocked naming the slot and the ceiling at which it
// frees: its holder may still issue timestamps up to the ceiling, and once
// the slot is forgotten nothing would keep the next term above them. The
// bound is the Ceiling, not ExpiresAt: a takeover after ExpiresAt starts
// the next term at the ceiling, a purge has nothing to start it from. The
// check is made together with the deletion: an Acquire that races the
// purge either makes it fail or comes after it.
// So too while a released slot's next floor is ahead of the store's clock
// (SlotRecord.FloorAhead: a term released without its last used
// timestamp starts the next at its ceiling): SlotRecord.PurgeRefusal
// gives both refusals.
//
// Nor does a purge forget that a key or namespace moved away: while the
// store holds a sealed range key or a sealed namespace, Purge deletes
// nothing and gives ErrSealed naming them (PurgeSealedRefusal), checked
// together with the deletion and after the ErrLocked checks. The seal is
// what makes an instance still pointed at this store get ErrSealed rather
// than values or slots the store the key moved to hands out too.
//
// A driver whose clock is not the storage's own (etcd: each writing host's)
// judges that check on a clock that may be ahead, and a host whose clock is
// behind may later issue timestamps a deleted term issued. Such a driver
// keeps a slot timestamp floor too, beside the fence floor: the highest
// floor the next term of a deleted slot would have had (its next floor, and
// an unreleased term's ceiling: SlotRecord.NewTerm). Every slot first used
// after the purge starts there (its first Floor, or a seed's NextFloor), so
// two terms' timestamps stay disjoint across a purge whatever the clocks.
// Its TCK suite says so (tck.Suite.PurgeKeepsSlotFloor).
//
// A store still open on the purged storage sees what a crash of the
// storage's other users would leave: its leases' Renew and Release give
// ErrLeaseLost. Its range calls may fail for a key it used before
// (ErrCorrupt, ErrRecreated, or an error of the driver's own), rather than
// hand its values out again. Its Acquire keeps working: a slot guard that
// remembers the purged slots must learn of the purge (a purge count kept
// in the storage, say) rather than refuse the fresh slots as behind.
type Purger interface {
	Purge(ctx context.Context) (deleted []string, err error)
}
