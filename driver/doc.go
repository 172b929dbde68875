// Package driver defines the interfaces a store driver implements, and the
// rules every driver shares as code.
//
// Users never see these types: they use package store, which wraps a driver,
// validates every argument, applies the store-wide timeout and wraps errors
// once. A driver may therefore assume that every key, namespace, owner, step,
// ttl and slot it is given is valid (see package store for the rules), and it
// returns raw errors: the sentinel errors below, context errors, or its own.
//
// A driver implements Store and, for each capability it has, RangeStore,
// SlotLeaseStore or Locker. A capability it lacks makes the user's call fail with
// ErrUnsupported. The comment on each method states everything the
// conformance kit (package tck) checks of it; an author needs to read
// neither tck's nor store's source.
//
// # Writing a driver
//
// A driver is a package with a Factory, registered in init, and a typed
// constructor for programs that skip the registry. Both keep the driver
// type unexported, and the constructor returns the checked *store.Store,
// taking one options struct named Options and the portable settings:
// nothing exported by the package reaches the storage without the portable
// layer's checks.
//
//	func init() { store.Register("mydb", fromOptions) }
//
//	func fromOptions(options map[string]string) (driver.Store, error) {
//		o := driver.NewOptions(options)
//		path := o.String("path", "ids.db")
//		if err := o.Err(); err != nil { // an unknown or malformed option
//			return nil, err
//		}
//		return open(path)
//	}
//
//	// Options configure a store opened with OpenStore.
//	type Options struct{ Path string }
//
//	func OpenStore(opts *Options, storeOpts ...store.Option) (*store.Store, error) {
//		d, err := open(opts.Path) // *mydbStore, unexported
//		if err != nil {
//			return nil, err
//		}
//		st, err := store.OpenDriver(d, storeOpts...)
//		if err != nil {
//			d.Close()
//		}
//		return st, err
//	}
//
// Which rule lives where:
//
//   - Package store: argument validation, the timeout, ErrClosed after
//     Close, error wrapping, the default ttl and the incarnation.
//   - Package driver: the lease arithmetic (TermExpiresAt, TermCeiling,
//     ReleasedFloor), the slot rules (SlotRecord, FirstSlots,
//     RememberSlot) and option parsing (Options).
//   - Your driver: storage, an atomic read-modify-write, the store's clock,
//     what a write with an unknown outcome means, and lock liveness.
//
// # The data each capability keeps
//
// RangeStore: per key, an int64 next value and a sealed flag. Next is one
// atomic "add step unless sealed or past math.MaxInt64" (a compare-and-set
// loop, or one UPDATE ... RETURNING); a write whose answer was lost is
// handled as RangeStore.Next says.
//
// SlotLeaseStore: store-wide, after a purge, a fence floor (the highest slot
// fence the purges deleted: it outlives the namespaces they deleted); per
// namespace, its Limit and Tolerance (fixed at creation); per slot, the
// fields of a SlotRecord (a
// ZooKeeper node, a table row of eleven columns); per (namespace, owner),
// the owner index: its last slots, most recent first, at most
// OwnerIndexLen. Time is the store's clock: ZooKeeper's mtime of the write,
// the database's clock_timestamp(), one host's clock for an embedded
// database. An Acquire is, in one transaction (or one compare-and-set per
// slot), with each slot loaded and judged once:
//
//	now := db.Now()
//	judge := func(n int) driver.SlotVerdict {
//		r, err := load(n) // nothing stored: SlotRecord{Fence: fenceFloor}
//		if err != nil { // a record that does not parse: ErrCorrupt
//			skipped[n] = err // passed over, never rewritten
//			return driver.SlotBusy
//		}
//		v, err := r.Judge(req, now)
//		if err != nil {
//			skipped[n] = err // SlotBusy, and why the slot is unusable
//		}
//		records[n] = r
//		return v
//	}
//	first := driver.FirstSlots(index, req.Preferred, limit)
//	take := -1
//	for _, n := range first {
//		switch judge(n) {
//		case driver.SlotOwn: // a retried acquire: wins over the order
//			return records[n].Lease(ns, n), nil
//		case driver.SlotFree:
//			if take < 0 {
//				take = n // taken only once no own term is among first
//			}
//		}
//	}
//	if take < 0 { // the rest, from the owner's own point, skipping
//		// first's slots, judged already
//		start := driver.SearchStart(req.Owner, req.Incarnation, limit)
//		for n := range driver.SearchOrder(start, limit) {
//			if slices.Contains(first, n) {
//				continue
//			}
//			if v := judge(n); v == driver.SlotOwn {
//				return records[n].Lease(ns, n), nil
//			} else if v == driver.SlotFree {
//				take = n
//				break
//			}
//		}
//	}
//	if take < 0 {
//		return ErrExhausted, naming the skipped slots and why
//	}
//	r := records[take].NewTerm(req, now)
//	store(take, r); storeIndex(driver.RememberSlot(index, take))
//	return r.Lease(ns, take), nil
//
// Renew, Release and SeedSlot load the slot's record, call Renewed,
// Released or Seeded, and store the result in the same atomic step,
// returning the error those give (their rules: SlotLeaseStore.Renew,
// Release, SlotSeeder.SeedSlot). The driver's own state (a version for a
// compare-and-set) travels in Lease.State; it may save a read only if the
// lease agrees with the stored term too. A SQL driver loads the row FOR UPDATE, applies the method
// and writes the row back before COMMIT; ZooKeeper compare-and-sets the
// node on the version it read and, on a conflict, reads and decides again.
//
// # Storing a slot record
//
// A driver keeps a SlotRecord's fields in a layout of its own (ZooKeeper:
// name=value lines; SQL: one column per field) or as one value, the output
// of SlotRecord.MarshalBinary: a versioned encoding that every later release
// reads back (UnmarshalBinary; data that does not decode is ErrCorrupt).
// Within a version nothing changes: fields keep their names, units
// (milliseconds) and meaning; a change of meaning is a new field. When a
// release adds a field, it adds an encoding version and says here which
// value records of older versions take. A driver that stores MarshalBinary's
// output has nothing to migrate. A driver with its own layout must: add the
// column or line through its schema version (the SQL drivers' cosid_meta
// row), give existing records that value, and refuse to open storage of a
// schema version it does not know rather than read it by guessing.
//
// Locker: per name, the queue of its holder and waiters and a fence
// counter that only grows (ZooKeeper: the czxid of the waiter's node; SQL:
// a sequence). A holder's hold ends with its session (a ZooKeeper session,
// a database connection), so a crashed process frees its locks, and Lost
// closes as Lock.Lost says. The memory driver
// keeps its queue in process (drivers/memory/locks.go); the ZooKeeper and
// PostgreSQL drivers order waiters on the server, so no queue type is
// shared here.
//
// Optional: SlotSeeder (migrations), LockSealer (a migration's seal of
// every lock name, and a fence floor carried over), Purger (everything deleted; fences
// kept above the purged ones) and Identifier (the store's random identity,
// kept in its metadata), RangeLister and LockLister (keys and lock names
// in pages, so that a store of any size is listed a page per call; a
// driver without them is listed in one Keys or Locks call). Every driver
// should accept the option create (OptionCreate says what it means).
// Messages that show an option use Redact.
//
// # Operating
//
// The portable layer reports every call to the store's observers, for
// every driver. A driver with more to tell implements the optional
// interfaces of events.go: Connector (connect in Connect(ctx), bounded by
// store.OpenContext, rather than in the factory), Notifier (connection
// states, retries, writes with an unknown outcome), Pinger (one round trip)
// and, on a Lock, LostCause (why it was lost). An operation that ran out of
// time with no server answering returns an error wrapping ErrUnavailable
// next to the context error, saying what the driver saw.
//
// # Sharing storage among a harness's stores
//
// The TCK opens several stores on one storage at once, as separate
// processes sharing a server would. A driver whose storage only one handle
// may open (an SQLite or bbolt file) shares it the way the memory driver
// shares a named state: a package-level registry maps the storage's name
// (the file path) to one open handle with a count of the stores using it;
// New takes a reference, Close drops it, and the last Close closes the
// file. State that lives only in memory is different: it must outlive
// its stores (the harness drops it), because a store opened with
// create=false after every other store closed must find what they wrote
// (tck's Options/CreateFalse). Each store still behaves as a process of
// its own: it caches nothing another store may change.
//
// # Proving it
//
// Call tck.Run from the driver's tests with a tck.Harness that opens stores
// on a fresh storage per check (a new file, a new ZooKeeper root). A
// persistent driver's harness also implements tck.Restarter: Restart is
// called once every store is closed, and closes and reopens the storage (a
// server stopped and started on its data, the file closed and opened);
// ranges, slot histories and lock fences must survive. A driver that keeps
// nothing across a restart says why in Suite.NotPersistent, and the check
// skips with that reason. A file shared through a registry (above) is
// already closed once its last store closes, so Restart must check that
// (the registry no longer holds the path) rather than return nil: the next
// NewStore then truly reopens the file, and the check proves what it says.
//
// A driver that reads its clock through a function of its own (an embedded
// database, an in-process state) should also give its harness the clock
// hooks, a few lines each: tck.ClockStepper (the clock stepped back) and
// tck.ClockSetter (the clock stopped at an instant, so the random histories
// check every lease time and expiry boundary exactly). They are not only
// for server clocks: they find real bugs in any driver.
//
// # The reference
//
// The memory driver (drivers/memory) is the commented reference, one
// concern per file: memory.go (the shared state, Close), ranges.go,
// slots.go (SlotRecord on a map, under one mutex; its Acquire is the one
// above), locks.go (the in-process FIFO queue), purge.go; tck_test.go is
// its whole TCK test (with the clock hooks). The variants with one bug
// each that prove the TCK catches it are the kit's own tests (go test
// ./tck: TestBroken, tck/broken_*_test.go), wrappers over the memory
// driver; those whose bug needs its state reach it through fault.go's
// view (internal/memfault), not a copy of the driver.
// examples/prefixdriver wraps a driver in a few lines, reaching the inner
// store's driver per call with (*store.Store).Raw, and exports only
// OpenStore and Options: the shape every driver package has.
package driver
