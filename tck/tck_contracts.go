// # Contracts and checks
//
// Every sentence of the contracts in package driver (its doc comments) and
// of the specification's sections 2 to 5 (shape, ranges, slots, locks) is
// listed below, in short, under an ID, with the checks that test it
// (group/check). The short form is an index, not the rule: each D row
// stands under a line "Declaration:" naming where package driver states the
// sentence in full (go doc github.com/cosid-go/store/driver.Declaration),
// and each S row (a sentence of the specification; its section names the
// overview in docs/design.md) ends "= home": the D row that states the
// same rule, or the declaration or page that does. A sentence the kit
// cannot test from outside a driver (it needs a network fault, or it binds
// the repository, the portable layer or the caller) names the tests that
// do. "ZK X" is the ZooKeeper driver's TestServer/<version>/X, "ZK Locks/X"
// and "ZK Slots/X" are TestLocks/<version>/X and TestSlots/<version>/X;
// "driver X" is package driver's test X (the shared slot rules).
//
// Run reads this map: a check that fails logs the rows that name it, with
// their IDs and homes. The kit's own tests fail when a check is named by
// no row, a row names no check (nor a test or a reason), a home names
// nothing, or a method of package driver's interfaces is the home of no
// row.
//
// package driver (161 sentences)
//
//	package driver:
//	D1    a capability it lacks: the user's call fails with ErrUnsupported         Capabilities/Declared
//	D2    drivers return sentinels; the portable layer adds operation and key      Errors/Wrapped
//	Factory:
//	D3    Factory: reject an unknown option key, wrapping ErrInvalidArgument,      Options/UnknownKey, Options/UnknownWithValid,
//	                                                                               Options/KeysExact (keys match exactly: no case or space folding)
//	D4    ... naming it, also when valid keys come with it                         Options/UnknownWithValid
//	D5    Factory: reject a malformed value, naming the key and the value          Options/MalformedValue
//	D5a   Factory: reject a required option left out, naming it                    Options/MissingRequired (needs Suite.RequiredOptions)
//	Store:
//	D6    Store: implements at least one of RangeStore, SlotLeaseStore, Locker     Capabilities/AtLeastOne
//	D7    stores on one storage act as processes: each sees the others' writes     Ranges/Current, Ranges/Seal, Ranges/Init, Ranges/NeverTwice,
//	                                                                               Slots/ConcurrentAcquire, Locks/Exclusion (several stores each)
//	D8    a persistent driver keeps ranges, slot records, owner indexes and        Restart/Survives (needs Restarter; Suite.NotPersistent skips it, saying why)
//	D9    ... lock fences across a restart of its storage                          Restart/Survives
//	Store.Close:
//	D10   Close ends every goroutine and connection the store started              not observable from outside: ZK NoGoroutineLeft,
//	                                                                               ZK Locks/NoGoroutineLeft (goleak)
//	D11   Close ends the store's lock holds and waits; waits return promptly       Close/Locks, Locks/LostOnClose, Locks/LostBeforeGrant
//	D12   Close leaves slot terms alone: they expire as after a crash              Close/Slots
//	D13   calls after Close get ErrClosed; a second Close never reaches a driver   Close/Ranges, Close/Slots, Close/Locks (each closes twice)
//	RangeStore:
//	D14   RangeStore keeps per key a next value and a sealed flag                  Ranges/Current, Ranges/Seal
//	D15   keys are independent, "a" and "a/b" included (no parents)                Ranges/Keys; ZK ParentsAreNotKeys
//	RangeStore.Next:
//	D16   Next reserves step values and returns start: [start, start+step)         Ranges/FirstRange, Ranges/NeverTwice
//	D17   a missing key starts at 0 and exists from then on                        Ranges/FirstRange, Ranges/Keys
//	D18   no value is returned twice, across goroutines, stores and faults         Ranges/NeverTwice, Restart/Survives; faults: ZK LostAnswerIsAGap,
//	                                                                               ZK ContextEndsInFlight, TestEnsembleFaults
//	D19   a write whose outcome is unknown is a gap, never retried as failed       needs a fault: ZK LostAnswerIsAGap, ZK ContextEndsInFlight
//	D20   a sealed key gives ErrSealed                                             Ranges/Seal, Errors/Wrapped
//	D21   past MaxInt64: ErrExhausted, changing nothing                            Ranges/Overflow
//	D22   a range ending exactly at MaxInt64 succeeds; MaxInt64 is never issued    Ranges/Overflow
//	D23   without faults the ranges of a key tile [0, next) with no gap            Ranges/NeverTwice
//	RangeStore.Current:
//	D24   Current returns next and sealed, reserving nothing                       Ranges/Current, Ranges/Seal
//	D25   Current creates nothing: (0, false), not listed, Init still works        Ranges/Current, Ranges/CurrentCreatesNothing
//	D26   Current sees every other store's writes                                  Ranges/Current; an ensemble follower: ZK TestEnsembleFaults
//	RangeStore.Seal:
//	D27   Seal marks the key sealed and returns its final next value               Ranges/Seal
//	D28   ... every store's Next of it then gives ErrSealed                        Ranges/Seal, Interleave/NextSeal
//	D29   sealing a sealed key is no error and returns the same value              Ranges/Seal
//	D30   a missing key is sealed at 0, and then exists                            Ranges/Seal, Ranges/KeysSealed
//	D30a  a key gone back: its Seal is above what the store handed out, or         Operator/RestoreRanges (needs Snapshotter)
//	      refused sealing nothing
//	RangeStore.Init:
//	D31   Init creates the key at the given next value; Next continues from it     Ranges/Init, Ranges/CurrentCreatesNothing
//	D32   Init's value is 0..MaxInt64                                              Ranges/InvalidArguments, Ranges/Overflow (Init at MaxInt64-10)
//	D33   Init at the key's value (sealed or not) succeeds, changes nothing        Ranges/Init, Ranges/Seal
//	D34   Init at a different value: ErrConfigMismatch, changing nothing           Ranges/Init, Ranges/Seal, Interleave/NextInit
//	RangeStore.Keys:
//	D35   Keys lists every existing key, sealed ones included, sorted              Ranges/Keys, Ranges/KeysSealed
//	D36   ... as an empty, non-nil slice when there is none                        Ranges/Keys, Ranges/CurrentCreatesNothing, Purge/Everything
//	D37   a key exists once Next, Seal or Init made it; nothing else is listed     Ranges/Keys, Ranges/CurrentCreatesNothing; ZK ParentsAreNotKeys
//	Namespace:
//	D38   namespace settings are fixed when an Acquire or a SeedSlot creates it    Slots/ConfigMismatch, Slots/Seed
//	D39   ... other settings later: ErrConfigMismatch, changing nothing            Slots/ConfigMismatch, Slots/Seed
//	AcquireRequest:
//	D40   AcquireRequest comes with defaults filled in and every field checked     the portable layer's: package store (Open, validation)
//	D41   Reclaim may take over a live term of the same owner, other incarnation   Slots/Reclaim
//	Lease:
//	D42   lease times are milliseconds since the epoch in the store's clock        every Acquire and Renew (lease checks), Slots/FirstTerm
//	D43   Lease.State is handed back unchanged on Renew and Release                portable layer; relied on by Slots/Renew, Slots/ReleaseFloor
//	SlotInfo:
//	D44   SlotInfo is SlotRecord.Info: a term (live or expired) shows its holder   Slots/Listing, History/Listed; driver TestSlotViews
//	D45   ... a released or seeded slot: no Owner, and its last term's fields      History/Listed, History/SeedNeverLowers
//	D46   LastOwner: the owner of the last term ended (release, takeover, seed)    History/Listed; the seed: driver TestSlotSeeded
//	D47   NextFloor: the next term starts there or above; during a term, Floor     History/Listed, Slots/ReleaseFloor
//	SlotLeaseStore:
//	D48   SlotLeaseStore keeps per slot a SlotRecord, per owner its last slots     Slots/MostRecentFirst, Restart/Survives; driver TestOwnerIndex
//	D49   ... at most OwnerIndexLen, most recent first                             Slots/MostRecentFirst, Slots/IndexLength; driver TestOwnerIndex
//	D50   the rules are SlotRecord's; times: the store's clock, not the caller's   driver TestSlotJudge ... TestSlotSeeded; Slots/RenewClockBack
//	SlotLeaseStore.Acquire:
//	D51   Acquire creates a missing namespace                                      Slots/FirstTerm, Slots/Listing
//	D52   ... ErrConfigMismatch, creating nothing, if other Limit or Tolerance     Slots/ConfigMismatch
//	D53   a live term of the same owner and incarnation is returned as it is,      Slots/SameIncarnation; an expired one is not: Slots/OwnExpired
//	D54   ... whatever the order, with or without Reclaim                          Slots/SameIncarnation
//	D55   order: the owner's last slots (most recent first), preferred, then       Slots/ChoiceOrder, Slots/MostRecentFirst, Slots/ExpiredFoundBySearch,
//	      the first free from SearchStart, wrapping (not the lowest)               Slots/FirstTerm, Slots/Exhaustion, Slots/ConcurrentAcquire
//	D56   free: never used, released, or expired (now >= ExpiresAt), any holder's  Slots/FirstTerm, Slots/Exhaustion, Slots/Takeover,
//	                                                                               Slots/ExpiredFoundBySearch, Slots/OwnExpired, Slots/ExpiryBoundary
//	                                                                               (needs ClockSetter); driver TestSlotJudge
//	D57   never a live term of another owner, however close its expiry             Slots/NoEarlyTakeover, Slots/Exhaustion, Interleave/AcquireAcquire, Slots/Churn
//	                                                                               Slots/ExpiryEdge (tries in the last milliseconds, in rounds)
//	D58   another incarnation without Reclaim gets another slot                    Slots/Reclaim
//	D59   no free slot: ErrExhausted, only after every slot was judged             Slots/Exhaustion, Slots/ConcurrentAcquire, Slots/Reclaim;
//	                                                                               Slots/LastFree (one slot free, last in the search order);
//	                                                                               reads: ZK Slots/FullNamespace
//	D60   a slot at fence MaxInt64, or corrupt, is passed over and named           History/FenceAtMax, Operator/CorruptSlot (needs SlotCorrupter);
//	                                                                               driver TestSlotJudge; ZK Slots/CorruptSlot
//	D61   fence: previous term's plus one, 1 for a slot never used                 Slots/Fence, Slots/FirstTerm, Slots/Takeover, Slots/Reclaim, Slots/Churn
//	D62   ... above the purged fences after a purge                                History/PurgeKeepsSlotFences; ZK TestPurgeFences
//	D63   floor: 0 never used; the next floor after a release or a seed;           Slots/FirstTerm, Slots/ReleaseFloor, Slots/Seed, History/SeedNeverLowers
//	D64   ... max(next floor, old ceiling) on taking an expired or reclaimed term  Slots/Takeover, Slots/Reclaim, Slots/ExpiredFoundBySearch,
//	                                                                               History/SeedAfterExpiry
//	D65   ExpiresAt = now + TTL; Ceiling = max(Floor, ExpiresAt + Tolerance)       Slots/FirstTerm, Slots/HighFloor, every lease (fresh times)
//	D66   LastOwner: the taken-over term's owner on a takeover, kept otherwise     History/Listed
//	D67   the slot goes first in the owner's index in the same atomic write        Slots/MostRecentFirst, Restart/Survives
//	SlotLeaseStore.Renew:
//	D68   Renew: ExpiresAt = max(old, now + TTL), Ceiling likewise                 Slots/Renew, Slots/RenewAfterExpiry
//	D69   ... neither decreases, even when the store's clock steps back            Slots/Renew, Slots/RenewClockBack (needs ClockStepper); driver TestSlotRenewed
//	D70   ... fence, floor and everything else stay                                every Renew (lease checks); driver TestSlotRenewed
//	D71   a renewal after ExpiresAt of an untouched term continues it              Slots/RenewAfterExpiry, Interleave/RenewTakeover
//	D72   another term or none (released, taken, seeded, purged): ErrLeaseLost     Slots/Takeover, Slots/Reclaim, Slots/ReleaseFloor, History/SeedAfterExpiry,
//	                                                                               Purge/Everything, Interleave/ReleaseRenew, Interleave/RenewTakeover
//	SlotLeaseStore.Release:
//	D73   Release ends the term                                                    Slots/ReleaseFloor, Slots/Exhaustion
//	D74   next floor: clamp(used+1, Floor, Ceiling), or Ceiling when unknown       Slots/ReleaseFloor, Slots/ReleaseExpired
//	D75   ... Ceiling the highest any renewal reported, even from an older copy    Slots/Renew
//	D76   the slot is then free; its fence and LastOwner (the releaser) stay       Slots/ReleaseFloor, Slots/Fence, History/Listed, Interleave/ReleaseAcquire
//	D77   releasing an expired term nobody took succeeds                           Slots/ReleaseExpired
//	D78   Release of a term no longer the slot's, or a second one: ErrLeaseLost    Slots/ReleaseFloor, Slots/Takeover, Slots/Reclaim, Slots/ReleaseExpired
//	                                                                               Interleave/ReleaseTakeover (a takeover racing a late Release)
//	SlotLeaseStore.Namespaces:
//	D79   Namespaces lists every namespace with its settings, sorted by name       Slots/Listing, Slots/ConfigMismatch
//	D80   ... as an empty, non-nil slice when there is none                        Slots/InvalidArguments, Purge/Everything
//	SlotLeaseStore.Slots:
//	D81   Slots lists every slot ever acquired or seeded, by slot number           Slots/Listing, Slots/ConcurrentAcquire, Slots/Seed, History/Listed
//	D82   ... live, expired or released; a slot never used is not listed           Slots/Listing, History/Listed
//	D83   Slots of a missing namespace: ErrNotFound                                Slots/Listing, Slots/InvalidArguments
//	Locker:
//	D84   Locker keeps per name a queue and a fence counter that only grows        Locks/Exclusion, Restart/Survives, Purge/Everything
//	Locker.Lock:
//	D85   Lock waits until held or ctx ends                                        Locks/Exclusion, Errors/Deadline, Locks/NotReentrant
//	D86   at most one holder at any instant, across stores                         Locks/Exclusion, Locks/TryLockAtHandover (rounds)
//	D87   waiters get the lock in arrival order, whatever their owner names        Locks/FIFO, Locks/FIFOArrival
//	D88   a waiter whose context ends returns promptly, leaves no trace,           Locks/Cancel, Locks/MiddleCancel, Errors/Deadline
//	D89   ... and does not block the next                                          Locks/Cancel, Locks/MiddleCancel
//	D90   a waiter cancelled at the instant of its grant passes the lock on        Locks/CancelAtGrant (rounds)
//	D91   wait false never waits; ErrLocked if another holds or waits              Locks/TryLock, Locks/NotReentrant
//	D92   ... also right after an unlock while a waiter is queued                  Locks/TryLockAtHandover (rounds)
//	D93   not reentrant: a second Lock by the same store waits                     Locks/NotReentrant
//	D94   owner is recorded for tools                                              Locks/FIFO, Locks/FIFOArrival (Waiters lists owners)
//	D95   Close ends the store's waits (ErrClosed) and holds (Lost, next waiter)   Close/Locks, Locks/LostOnClose, Locks/LostBeforeGrant (rounds)
//	Locker.Locks:
//	D96   Locks lists locks held or waited on (and kept ones), sorted; non-nil     Locks/Names
//	Locker.Waiters:
//	D97   Waiters lists holder and waiters in lock order, holder first             Locks/FIFO, Locks/FIFOArrival
//	Waiter:
//	D97a  ... each with its fence: the holder's, and the one each waiter will get  Locks/WaiterFences
//	Locker.Waiters:
//	D98   ... empty when the lock is free; a name never used: ErrNotFound          Locks/Names
//	Lock.Unlock:
//	D99   Unlock releases and the next waiter gets the lock                        Locks/Exclusion, Locks/FIFO
//	D100  ... only the caller's own hold is removed, never a later holder's        Locks/UnlockTwice, Locks/Exclusion
//	D101  a second Unlock returns nil                                              Locks/UnlockTwice, Locks/UnlockAfterLost
//	D102  Unlock after the hold was lost reports ErrLeaseLost                      Locks/UnlockAfterLost, Operator/RevokedSession; other losses: ZK Locks/SessionExpiry
//	Lock.Fence:
//	D103  Fence is above every earlier holder's, in any store                      Locks/Exclusion, Locks/TryLock, Locks/LostOnClose
//	D104  ... across restarts and purges, and never wraps                          Restart/Survives, Purge/Everything; a wrap is out of a test's reach:
//	                                                                               ZK Locks/FenceFirstNotAlone (czxid)
//	Lock.Lost:
//	D105  Lost closes as soon as the holder cannot be sure it holds                Operator/RevokedSession (needs SessionEnder); network faults: ZK Locks/SessionExpiry, ZK Locks/SilentServer
//	                                                                               Operator/DeletedLock (needs LockDeleter)
//	D106  ... and when the store closes                                            Locks/LostOnClose, Locks/LostBeforeGrant (rounds), Locks/UnlockAfterLost
//	D106a ... and before any other store can be granted the lock                   Locks/LostBeforeGrant (rounds); faults: ZK Locks/SessionExpiry, ZK Locks/SilentServer
//	D107  Unlock does not close Lost                                               Locks/UnlockTwice
//	SlotSeeder.SeedSlot:
//	D108  SeedSlot makes a missing namespace; other settings: ErrConfigMismatch    Slots/Seed
//	D109  ... raises fence to at least fence, next floor to at least nextFloor     Slots/Seed, Slots/HighFloor, History/SeedNeverLowers
//	D110  nothing is ever lowered: seeding again is harmless                       Slots/Seed, History/SeedNeverLowers
//	D111  a slot never used becomes a released slot, listed, whose next term       History/SeedNeverLowers (listed before a first term), Slots/Seed
//	D112  ... gets the fence plus 1 and the next floor                             Slots/Seed, History/SeedNeverLowers
//	D113  an expired term is ended first: its holder's Renew gives ErrLeaseLost    History/SeedAfterExpiry, Interleave/SeedRenew
//	D114  ... the next term starts at the seeded floor, even above the ceiling     History/SeedAfterExpiry
//	D115  a slot with a live term: ErrLocked, unchanged                            Slots/Seed, Interleave/SeedAcquire
//	Purger:
//	D116  Purge deletes everything the store keeps: a new store finds nothing      Purge/Everything
//	D117  ... and returns what it deleted, one readable entry per thing            Purge/Everything
//	D118  after a purge, lock and slot fences stay above every earlier one         Purge/Everything, History/PurgeKeepsSlotFences; ZK TestPurgeFences
//	D118a a lock held or waited on: Purge gives ErrLocked and deletes nothing      Purge/Locked, Explore/Histories (Purge); postgres TestPurgeWhileWaiting, Interleave/PurgeLock
//	D118b a slot term not released before its ceiling: ErrLocked, nothing deleted  Purge/LiveLease, Purge/LiveLeaseRace, Explore/Histories (Purge); TestPurgeLiveLease, Interleave/PurgeAcquire
//	D118c a released slot's next floor ahead of the clock: ErrLocked, likewise     Purge/FloorAhead, Explore/Histories (Purge)
//	D118d a driver whose slot clock is not the storage's keeps a slot              History/PurgeSlotFloor (by Suite.PurgeKeepsSlotFloor; 0 otherwise),
//	      timestamp floor across purges: a slot first used after starts there      Explore/Histories (Purge)
//	Connector:
//	D119  Connector: Notify, then Connect once, before any other method            binds the portable layer: package store TestOpenContextConnectsAndRoutesDriverEvents
//	D120  Connect returns when ctx ends, wrapping ctx.Err() (and ErrUnavailable)   needs a silent server: package store TestOpenContextEndsWithItsContext;
//	                                                                               ZK TestOpenContextEndsWithItsContext
//	D121  a failed Connect is followed by Close                                    binds the portable layer: package store TestOpenContextEndsWithItsContext
//	Pinger:
//	D122  Pinger: Ping makes one round trip to the backend                         Capabilities/Ping; ZK Events/ConnectedAndPing
//	Notifier:
//	D123  Notifier: Notify once, before Connect and any other method               binds the portable layer: package store TestOpenContextConnectsAndRoutesDriverEvents
//	D124  f is never called after Close returns, and does not block for long       needs faults to cause events: ZK TestEvents (every subtest closes its store)
//	LostCause:
//	D125  LostCause: once Lost is closed, LostErr says why                         needs a fault: ZK Events/LockLostLoggedWithCause
//	SlotLeaseStore.Renew:
//	D126  Renew, Release: only l's identity is taken; times from the record        Slots/ForgedLease; driver TestSlotForgedLease
//	D127  ... times disagreeing with the term: ErrInvalidArgument, slot unchanged  Slots/ForgedLease; driver TestSlotForgedLease
//	SlotLeaseStore.SealNamespace:
//	D128  SealNamespace: every store's Acquire gives ErrSealed, own slot included  Slots/Seal
//	D129  ... and Renew gives ErrSealed, the term's times unchanged                Slots/Seal; idgen TestSnowflakeStopsOnSeal
//	D130  ... Release still works; listings show it Sealed; SeedSlot: ErrSealed    Slots/Seal
//	D131  sealing twice is not an error; a missing namespace is created sealed     Slots/Seal
//	D132  the seal is checked in the atomic step of Acquire's and Renew's write    Interleave/SealNamespace (rounds counted); Interleave/SealRace, SealRaceUncreated
//	D133  Purge never forgets a seal: ErrSealed naming it, nothing deleted         Purge/Seals, Slots/Seal
//	D133a a sealed namespace's record deleted by hand beside its slots is not      Operator/DeletedNamespace (needs NamespaceDeleter)
//	      created again unsealed: Acquire gives ErrCorrupt or ErrSealed
//	LayoutKeeper.KeepLayout:
//	D134  LayoutKeeper: the first layout is recorded, creating the namespace       Slots/Layout
//	D135  ... never replaced: later calls, any store, get it; settings, seal       Slots/Layout
//	SlotLeaseStore.Acquire:
//	D136  Acquire: a sealed namespace gives ErrSealed before settings are          Slots/Seal (Acquire with other settings, and in a namespace
//	      compared                                                                 SealNamespace created with Limit 0, give ErrSealed)
//	D137  Acquire: a missing namespace it created stays, even when the Acquire     History/FenceAtMax (a purge of fences at MaxInt64; needs Purger),
//	      ends ErrExhausted                                                        the model of Explore/Histories (it creates before it searches)
//	Identifier:
//	D138  Identifier: every store of one storage has one non-empty identity;       Capabilities/Identity
//	      another storage another
//	RangeLister.ListRanges:
//	D139  RangeLister, Keys: every key once, sorted, whatever the page size,       Ranges/ListPages
//	      also while keys are created
//	LockLister.ListLocks:
//	D140  LockLister: every lock name once, sorted, whatever the page size         Locks/ListPages
//	RangeAdvancer.Advance:
//	D141  RangeAdvancer: raises, never lowers, creates a missing key at the        Ranges/Advance
//	      value, refuses a sealed key (ErrSealed), seen by every store
//	LockSealer.SealLocks:
//	D142  LockSealer SealLocks: every later Lock and TryLock gives ErrSealed;      Locks/Seal, Locks/SealRaiseQueued
//	      a waiter queued before is never granted; the holder may unlock
//	LockSealer.RaiseLockFences:
//	D143  LockSealer RaiseLockFences: every later fence is above the floor,        Locks/RaiseFences, Locks/Seal (it unseals),
//	      a waiter's queued before included; it lowers nothing, and unseals        Locks/RaiseQueued, Locks/RaiseTwiceQueued
//	OptionCreate:
//	D144  OptionCreate: create=false opens an existing store and creates and       Options/CreateFalse (or the option is refused as unknown;
//	      writes nothing; a driver should accept it                                a missing store's ErrNotFound needs Suite.MissingOptions)
//	Store:
//	D145  every answer of concurrent calls is one a single-copy store could give   Explore/Linearizable; random histories against the model:
//	      (linearizable), and histories agree with the model                       Explore/Histories
//	BackupMarker:
//	D146  a marked copy opens only with create=false, and every write that         sqlite TestBackup (no kit check: only SQLite makes marked copies)
//	      hands out or moves gives ErrSealed, until ClearBackupMark clears it
//	LayoutKeeper.Layout:
//	D147  Layout: the recorded layout, "" when none or the namespace is missing,   Slots/Layout
//	      changing nothing, a sealed namespace's too
//	LockSealer.LocksSealed:
//	D148  LocksSealed: true once SealLocks sealed, after a purge too; false        Locks/Seal, Locks/RaiseFences
//	      after RaiseLockFences
//	RangeStore.Next:
//	D149  a key gone back under a store (restored, deleted, written back) is       Operator/RestoreRanges (needs Snapshotter), Operator/DeletedKey
//	      refused (ErrCorrupt, ErrRecreated) or goes on above all handed out       (needs HandDeleter); ZK TestWrittenBack
//	SlotLeaseStore.Acquire:
//	D150  a slot record gone back under running stores starts no term at a         Operator/RestoreSlots (needs Snapshotter), Operator/DeletedSlot
//	      fence or timestamps a term may have had; its live term: ErrLeaseLost     (needs HandDeleter); ZK TestSlotNodeDeletedUnderLiveTerm
//	Lock.Fence:
//	D151  a store running across a restore grants no lock fence again              Operator/RestoreLocks (needs Snapshotter)
//	RangeStore.Next:
//	D152  a key whose record does not parse: ErrCorrupt to Next and Current,      Operator/CorruptKey (needs Corrupter)
//	      from every store, never a range or a guessed value
//
// Interleavings: each Interleave check starts a read-modify-write of one
// store and another store's write at one instant, in rounds, and checks
// every order they may take (no driver hook: each logs how many rounds
// overlapped in time, and fails if none did). The pairs: Next and Seal,
// Next and Init, Acquire and Acquire, Renew and a takeover at expiry,
// Release and Acquire, Release and Renew, Renew/Acquire and SealNamespace,
// SeedSlot and Acquire, SeedSlot and Renew, Purge and Acquire, Purge and
// Lock; each is named above at the sentence it holds.
//
// S2, shape (17 sentences; package store: Register, Open, Drivers, Error)
//
//	S2.1  module path and root package = go.mod                              not a driver's: go.mod
//	S2.2  top-level files and folders = the repository                       not a driver's: the repository
//	S2.3  required dependencies = go.mod                                     not a driver's: go.mod
//	S2.4  Register panics on a nil factory or a duplicate name               package store: TestRegisterPanics
//	      = store.Register
//	S2.5  drivers register in init(); applications blank-import them         memory TestOpen, ZK TestRegistered
//	      = store.Register
//	S2.6  Drivers() lists registered names, sorted = store.Drivers           package store: TestDriversSortedAndUnknownListed
//	S2.7  an unknown driver name is an error listing the registered ones     package store: TestDriversSortedAndUnknownListed
//	      = store.Open
//	S2.8  an unknown option key is rejected, naming it = D3                  Options/UnknownKey, Options/UnknownWithValid
//	S2.9  a malformed value is rejected, naming key and value = D5           Options/MalformedValue (needs Suite.MalformedOptions)
//	S2.10 every operation takes a context.Context = package store            the API's signatures (compile time)
//	S2.11 a store-wide timeout (default 3s) bounds each operation whole      package store: TestTimeoutIsADeadlineError; ZK RetryThenRecover
//	      = package store
//	S2.12 validation is portable: every driver accepts and refuses alike     Ranges/InvalidArguments, Slots/InvalidArguments, Locks/InvalidArguments,
//	      = package store                                                    Ranges/Keys (edge keys accepted); package store: TestInvalidKeysNeverReachTheDriver
//	S2.13 errors are sentinels for errors.Is, wrapped with what failed = D2  Errors/Wrapped, and every error a check expects
//	S2.14 deadline errors satisfy errors.Is(err, DeadlineExceeded)           Errors/Deadline
//	      = package store
//	S2.15 a missing capability gives ErrUnsupported = D1                     Capabilities/Declared; package store: TestMissingCapabilitiesAreUnsupported
//	S2.16 the TCK skips what a driver declares it lacks = tck.Suite          Run (Suite.Ranges, Slots, Locks), with the reason
//	S2.17 configuration (YAML, JSON) opens in one call; a failure            package config: TestParseYAML, TestParseJSONMatchesYAML, TestOpenAll,
//	      closes what opened, reports each error = config.Config.Open        TestOpenFailureClosesAndReportsEvery
//
// S3, RangeStore (13 sentences; docs/design.md, Ranges)
//
//	S3.1  Next reserves step values and returns [start, end) = D16            Ranges/FirstRange, Ranges/NeverTwice
//	S3.2  a key that does not exist starts at 0 = D17                         Ranges/FirstRange
//	S3.3  Current returns next and sealed, reserving nothing = D24            Ranges/Current, Ranges/CurrentCreatesNothing
//	S3.4  Seal returns the final next value; sealing twice is no error = D27  Ranges/Seal
//	S3.5  Next on a sealed key: ErrSealed = D20                               Ranges/Seal, Errors/Wrapped
//	S3.6  a key moves: Seal in the old store, start at that value             Ranges/Seal (Init at the sealed value), Ranges/Init; storectl TestMigrate
//	      = store.RangeStore.Seal
//	S3.7  Init creates a key at a value; another existing value fails = D31   Ranges/Init
//	S3.8  step must be >= 1 = RangeStore.Next                                 Ranges/InvalidArguments
//	S3.9  past the largest int64: ErrExhausted, nothing changed = D21         Ranges/Overflow
//	S3.10 never twice across goroutines, processes, stores, faults = D18      Ranges/NeverTwice; faults: ZK LostAnswerIsAGap, ZK ContextEndsInFlight,
//	                                                                          ZK SessionExpiry, TestEnsembleFaults
//	S3.11 a gap only when a write's outcome was unknown = D19                 Ranges/NeverTwice (no gap without faults); ZK LostAnswerIsAGap
//	S3.12 the key rules (segments, characters, 1024 bytes) = package store    Ranges/Keys, Ranges/InvalidArguments
//	S3.13 a key whose storage went back (restored, deleted, recreated)        Operator/RestoreRanges (needs Snapshotter), Operator/DeletedKey (needs
//	      is refused (ErrRecreated, ErrCorrupt) by a store that saw it        HandDeleter)
//	      further ahead, never handed out again = D149                        ZK TestWrittenBack
//
// S4, SlotLeaseStore (32 sentences; docs/design.md, Slot leases)
//
//	S4.1  a namespace: a single segment, limit slots, a tolerance = D38            Slots/InvalidArguments, Slots/ConcurrentAcquire, Slots/Exhaustion
//	S4.2  an owner key is a single segment = package store                         Slots/InvalidArguments
//	S4.3  an incarnation is one run; random per Open, after any label              Slots/Reclaim, Slots/SameIncarnation; the default: package store (Open)
//	      = store.WithIncarnation
//	S4.4  times are milliseconds in the store's clock = D42                        Slots/FirstTerm, Slots/Renew (the lease checks of every Acquire and Renew)
//	S4.5  a Lease carries namespace, slot, owner, incarnation, fence,              every Acquire (lease checks), Slots/Listing
//	      ttl, tolerance, floor, expiresAt, ceiling = Lease
//	S4.6  options: preferred, ttl (default 60s), reclaim (default off)             Slots/ChoiceOrder, Slots/FirstTerm (zero ttl), Slots/Reclaim
//	      = store.AcquireOptions
//	S4.7  order: owner's last slots, preferred, lowest free                        Slots/ChoiceOrder, Slots/MostRecentFirst, Slots/ExpiredFoundBySearch
//	      (changed by issue 40: the first free from the acquire's own point, D55)
//	      = D55
//	S4.8  free: never used, released, or expired (now >= expiresAt) = D56          Slots/FirstTerm, Slots/Exhaustion, Slots/Takeover, Slots/NoEarlyTakeover,
//	                                                                               Slots/ExpiredFoundBySearch
//	S4.9  a live term of the same owner and incarnation is returned = D53          Slots/SameIncarnation
//	S4.10 no free slot: ErrExhausted = D59                                         Slots/Exhaustion, Slots/ConcurrentAcquire
//	S4.11 ... and only then has every slot been read = D59                         reads are not observable: ZK Slots/FullNamespace, ZK Slots/RoundTrips
//	S4.12 Renew extends; expiresAt and ceiling never decrease = D68                Slots/Renew, Slots/RenewClockBack
//	S4.13 the slot holds another term: ErrLeaseLost = D72                          Slots/Takeover, Slots/Reclaim
//	S4.14 a renew after expiresAt of an untouched term continues it = D71          Slots/RenewAfterExpiry
//	S4.15 Release ends the term; used is optional = D73                            Slots/ReleaseFloor, Slots/ReleaseExpired
//	S4.16 Release comes after the holder stopped issuing                           the caller's rule (package idgen), not a driver's
//	      = store.SlotLeaseStore.Release
//	S4.17 Slots lists used slots with owner and lease times = D81                  Slots/Listing, History/Listed
//	S4.18 fence +1 with every new term, never decreasing = D61                     Slots/Fence, Slots/Takeover, Slots/Reclaim, History/SeedNeverLowers,
//	                                                                               History/PurgeKeepsSlotFences, Restart/Survives
//	S4.19 ... even if the slot node is recreated from a backup = D150              Slots/Seed, Operator/RestoreSlots (needs Snapshotter); ZK Slots/RecreatedSlot,
//	                                                                               ZK Slots/HandWrittenSlot
//	S4.20 the holder issues floor <= t < ceiling, stops at expiresAt               the holder's rule (package idgen); floor <= ceiling: every lease,
//	      = store.Lease                                                            Slots/HighFloor
//	S4.21 after a release: clamp(used+1, floor, ceiling), or ceiling = D74         Slots/ReleaseFloor, Slots/ReleaseExpired
//	S4.22 after an expiry or reclaim: max(next floor, old ceiling) = D64           Slots/Takeover, Slots/Reclaim, Slots/ExpiredFoundBySearch, Slots/RenewClockBack,
//	                                                                               History/SeedAfterExpiry
//	S4.23 a slot never used: floor 0 = D63                                         Slots/FirstTerm
//	S4.24 expiresAt = max(expiresMin, mtime+ttl),                                  Slots/FirstTerm, every lease (fresh times), Slots/HighFloor
//	      ceiling = max(ceilingMin, expiresAt+tolerance)
//	      = SlotRecord.ExpiresAt
//	S4.25 a renew writes its times as lower bounds: no going back                  Slots/RenewClockBack (needs ClockStepper); ZK Slots/NodeLayout
//	      = SlotRecord.Renewed
//	S4.26 a new term writes expiresMin 0, ceilingMin floor                         Slots/HighFloor, Slots/FirstTerm
//	      = SlotRecord.NewTerm
//	S4.27 settings fixed at creation; others: ErrConfigMismatch = D38              Slots/ConfigMismatch
//	S4.28 a sealed namespace: Acquire and Renew give ErrSealed = D128              Slots/Seal; Interleave/SealRace
//	S4.29 ... checked with the write; Release still works = D132                   Interleave/SealRace; Slots/Seal; idgen TestSnowflakeStopsOnSeal
//	S4.30 sealing a missing namespace creates it sealed, limit 0 = D131            Slots/Seal
//	S4.31 a store running across a restore repeats no fence and no                 Operator/RestoreSlots (needs Snapshotter)
//	      term's timestamps: ErrCorrupt, or above what it saw = D150               ZK TestWrittenBack
//	S4.32 a slot record deleted by hand under a live term is not                   Operator/DeletedSlot (needs HandDeleter);
//	      started again from zero by any store = D150                              ZK TestSlotNodeDeletedUnderLiveTerm
//
// S5, Locker (18 sentences; docs/design.md, Locks)
//
//	S5.1  Lock blocks until held or the context ends = D85                   Locks/Exclusion, Errors/Deadline, Locks/NotReentrant
//	S5.2  TryLock never waits = D91                                          Locks/TryLock, Locks/TryLockAtHandover
//	S5.3  Unlock; Fence: 64-bit, grows with each holder, never wraps = D103  Locks/Exclusion, Locks/TryLock, Locks/LostOnClose, Purge/Everything,
//	                                                                         Restart/Survives
//	S5.4  Lost closes when the holder cannot be sure (session expired,       store closed: Locks/LostOnClose, Locks/LostBeforeGrant;
//	      connection lost, store closed) = D105                              faults: ZK Locks/SessionExpiry, ZK Locks/SilentServer
//	S5.5  fair: arrival order = D87                                          Locks/FIFO, Locks/FIFOArrival
//	S5.6  a waiter whose context ends leaves no trace = D88                  Locks/Cancel, Locks/MiddleCancel, Locks/CancelAtGrant, Close/Locks
//	S5.7  not reentrant: a second Lock by the same store waits = D93         Locks/NotReentrant
//	S5.8  no waiter node left behind by a timeout = D88                      Locks/Cancel, Errors/Deadline
//	S5.9  no orphan node after a connection loss during the create = D88     needs a fault: ZK Locks/CutDuringCreate, ZK Locks/CutDuringCreateThenGiveUp
//	S5.10 the holder is told when its session expires = D105                 needs a fault: ZK Locks/SessionExpiry
//	S5.11 no endless wait on a predecessor already gone = D89                Locks/MiddleCancel, Locks/Cancel; ZK Locks/PredecessorGoneBeforeWatch
//	S5.12 no herd: waiters do not all re-read on each change                 not observable: ZK Locks/NoHerd
//	      = docs/design.md, Lock liveness on ZooKeeper
//	S5.13 Lost closes before any other store is granted the lock = D106a     on Close: Locks/LostBeforeGrant (rounds); on faults:
//	                                                                         ZK Locks/SessionExpiry, ZK Locks/SilentServer
//	S5.14 the holder confirms its session through the leader every T/3       the driver's means: ZK Locks/SilentServer
//	      = docs/design.md, Lock liveness on ZooKeeper
//	S5.15 the same rule bounds anything else trusting an ephemeral node      the driver's means: no other such use today
//	      = docs/design.md, Lock liveness on ZooKeeper
//	S5.16 lock parents may vanish; Locks lists names with a node now = D96   Locks/Names
//	S5.17 a lock fence never repeats across a restore under a store = D151   Operator/RestoreLocks (needs Snapshotter)
//	S5.18 a holder whose session the backend ended (revoked, killed)         Operator/RevokedSession (needs SessionEnder)
//	      learns Lost; its Unlock gives ErrLeaseLost = D102
package tck
