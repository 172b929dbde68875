// # Contracts and checks
//
// Every sentence of the contracts in package driver (its doc comments) and
// in sections 2 to 5 of the specification (SPEC.md) is listed below, in
// short, with the checks that test it (group/check). A sentence the kit
// cannot test from outside a driver (it needs a network fault, or it binds
// the repository, the portable layer or the caller) names the tests that
// do. "ZK X" is the ZooKeeper driver's TestServer/<version>/X, "ZK Locks/X"
// and "ZK Slots/X" are TestLocks/<version>/X and TestSlots/<version>/X.
//
// package driver (63 sentences)
//
//	D1  a capability it lacks: the user's call fails with ErrUnsupported         Capabilities/Declared
//	D2  drivers return sentinels; the portable layer adds operation and key      Errors/Wrapped
//	D3  Factory: reject an unknown option key, naming it                         Options/UnknownKey, Options/UnknownWithValid
//	D4  Factory: reject a malformed value, naming the key and the value          Options/MalformedValue
//	D5  Store: implements at least one of RangeStore, SlotStore, Locker          Capabilities/AtLeastOne
//	D6  Close ends every goroutine and connection the store started              not observable from outside: ZK NoGoroutineLeft,
//	                                                                             ZK Locks/NoGoroutineLeft (goleak)
//	D7  calls made after Close are refused by the portable layer                 Close/Ranges, Close/Slots, Close/Locks
//	D8  a driver makes calls in flight return promptly on Close                  Close/Locks
//	D9  Next reserves step values and returns start: [start, start+step)         Ranges/FirstRange, Ranges/NeverTwice
//	D10 a missing key starts at 0                                                Ranges/FirstRange
//	D11 no value is returned twice, across stores and across faults              Ranges/NeverTwice; faults: ZK LostAnswerIsAGap,
//	                                                                             ZK ContextEndsInFlight, TestEnsembleFaults
//	D12 a sealed key gives ErrSealed                                             Ranges/Seal, Errors/Wrapped
//	D13 past MaxInt64: ErrExhausted, changing nothing                            Ranges/Overflow
//	D14 Current returns next and sealed, reserving nothing                       Ranges/Current, Ranges/Seal
//	D15 Current of a missing key is (0, false)                                   Ranges/Current, Ranges/CurrentCreatesNothing
//	D16 Seal marks the key sealed and returns its final next value               Ranges/Seal
//	D17 sealing a sealed key is no error and returns the same value              Ranges/Seal
//	D18 a missing key is sealed at 0                                             Ranges/Seal, Ranges/KeysSealed
//	D19 Init creates the key at the given next value                             Ranges/Init, Ranges/CurrentCreatesNothing
//	D20 Init at the key's value (sealed or not) succeeds, changes nothing        Ranges/Init, Ranges/Seal
//	D21 Init at a different value fails with ErrConfigMismatch                   Ranges/Init, Ranges/Seal
//	D22 Keys lists every existing key, sorted                                    Ranges/Keys, Ranges/KeysSealed, Ranges/CurrentCreatesNothing
//	D23 namespace settings are fixed when it is first created                    Slots/ConfigMismatch
//	D24 Reclaim may take over a live term of the same owner, other incarnation   Slots/Reclaim
//	D25 lease times are milliseconds since the epoch in the store's clock        every Acquire and Renew (lease checks), Slots/FirstTerm
//	D26 Lease.State is handed back unchanged on Renew and Release                portable layer; relied on by Slots/Renew, Slots/ReleaseFloor
//	D27 Acquire creates a missing namespace                                      Slots/FirstTerm, Slots/Listing
//	D28 ... ErrConfigMismatch if it exists with another Limit or Tolerance       Slots/ConfigMismatch
//	D29 slot order: owner's last slots, preferred, lowest free                   Slots/ChoiceOrder, Slots/MostRecentFirst, Slots/ExpiredFoundBySearch
//	D30 a live term of the same owner and incarnation is returned as it is       Slots/SameIncarnation
//	D31 no free slot: ErrExhausted                                               Slots/Exhaustion, Slots/ConcurrentAcquire, Slots/Reclaim
//	D32 fence: previous term's plus one, 1 for a slot never used                 Slots/Fence, Slots/FirstTerm, Slots/Takeover, Slots/Reclaim
//	D33 floor: 0 never used; the next floor after a release;                     Slots/FirstTerm, Slots/ReleaseFloor, Slots/Takeover, Slots/Reclaim,
//	                                                                             Slots/ExpiredFoundBySearch, Slots/HighFloor
//	D34 Renew extends the term                                                   Slots/Renew, Slots/RenewAfterExpiry
//	D35 ExpiresAt and Ceiling never decrease                                     Slots/Renew, Slots/RenewClockBack (needs ClockStepper)
//	D36 the slot holds another term (or none): ErrLeaseLost                      Slots/Takeover, Slots/Reclaim, Slots/ReleaseFloor
//	D37 Release ends the term                                                    Slots/ReleaseFloor, Slots/Exhaustion
//	D38 next floor: clamp(used+1, Floor, Ceiling), or Ceiling when unknown       Slots/ReleaseFloor, Slots/ReleaseExpired
//	D39 Release of a term no longer the slot's: ErrLeaseLost                     Slots/ReleaseFloor, Slots/Takeover, Slots/Reclaim, Slots/ReleaseExpired
//	D40 Namespaces lists every namespace, sorted by name                         Slots/Listing, Slots/ConfigMismatch
//	D41 Slots lists every used slot, by slot number                              Slots/Listing, Slots/ConcurrentAcquire
//	D42 Slots of a missing namespace: ErrNotFound                                Slots/Listing, Slots/InvalidArguments
//	D43 Lock waits until held or ctx ends                                        Locks/Exclusion, Errors/Deadline, Locks/NotReentrant
//	D44 waiters get the lock in arrival order                                    Locks/FIFO, Locks/FIFOArrival
//	D45 a waiter whose context ends leaves no trace, does not block the next     Locks/Cancel, Locks/MiddleCancel, Locks/CancelAtGrant (rounds)
//	D46 wait false never waits; ErrLocked if another holds or waits              Locks/TryLock, Locks/TryLockAtHandover (rounds), Locks/NotReentrant
//	D47 owner is recorded for tools                                              Locks/FIFO, Locks/FIFOArrival (Waiters lists owners)
//	D48 Locks lists every lock ever taken, sorted                                Locks/Names
//	D49 Waiters lists holder and waiters in lock order, holder first             Locks/FIFO, Locks/FIFOArrival
//	D50 Waiters of a name never used: ErrNotFound                                Locks/Names
//	D51 Unlock releases; only the caller's own hold is removed                   Locks/UnlockTwice, Locks/Exclusion
//	D52 a second Unlock returns nil                                              Locks/UnlockTwice, Locks/UnlockAfterLost
//	D53 Unlock after the hold was lost reports ErrLeaseLost                      Locks/UnlockAfterLost; other losses: ZK Locks/SessionExpiry
//	D54 Fence grows with each holder and never wraps                             Locks/Exclusion, Locks/TryLock, Locks/LostOnClose, Purge/Everything;
//	                                                                             a wrap is out of a test's reach: ZK Locks/FenceFirstNotAlone (czxid)
//	D55 Lost closes as soon as the holder cannot be sure it holds                needs a network fault: ZK Locks/SessionExpiry, ZK Locks/SilentServer
//	D56 ... and when the store closes                                            Locks/LostOnClose, Locks/LostBeforeGrant (rounds), Locks/UnlockAfterLost
//	D57 Unlock does not close Lost                                               Locks/UnlockTwice
//	D58 SeedSlot creates a missing namespace; other settings: ErrConfigMismatch  Slots/Seed
//	D59 ... raises fence to at least fence, next floor to at least nextFloor     Slots/Seed, Slots/HighFloor
//	D60 nothing is lowered: seeding again is harmless                            Slots/Seed
//	D61 a slot with a live term: ErrLocked, unchanged                            Slots/Seed
//	D62 Purge deletes everything the store keeps                                 Purge/Everything
//	D63 ... and returns what it deleted, readable                                Purge/Everything
//
// SPEC 2, shape (17 sentences)
//
//	S2.1  module path and root package                                    not a driver's: go.mod
//	S2.2  top-level files and folders                                     not a driver's: the repository
//	S2.3  required dependencies                                           not a driver's: go.mod
//	S2.4  Register panics on a nil factory or a duplicate name            package store: TestRegisterPanics
//	S2.5  drivers register in init(); applications blank-import them      memory TestOpen, ZK TestRegistered
//	S2.6  Drivers() lists registered names, sorted                        package store: TestDriversSortedAndUnknownListed
//	S2.7  an unknown driver name is an error listing the registered ones  package store: TestDriversSortedAndUnknownListed
//	S2.8  an unknown option key is rejected, naming it                    Options/UnknownKey, Options/UnknownWithValid
//	S2.9  a malformed value is rejected, naming key and value             Options/MalformedValue (needs Suite.MalformedOptions)
//	S2.10 every operation takes a context.Context                         the API's signatures (compile time)
//	S2.11 a store-wide timeout (default 3s) bounds each operation whole   package store: TestTimeoutIsADeadlineError; ZK RetryThenRecover
//	S2.12 validation is portable: every driver accepts and refuses alike  Ranges/InvalidArguments, Slots/InvalidArguments, Locks/InvalidArguments,
//	                                                                      Ranges/Keys (edge keys accepted); package store: TestInvalidKeysNeverReachTheDriver
//	S2.13 errors are sentinels for errors.Is, wrapped with what failed    Errors/Wrapped, and every error a check expects
//	S2.14 deadline errors satisfy errors.Is(err, DeadlineExceeded)        Errors/Deadline
//	S2.15 a missing capability gives ErrUnsupported                       Capabilities/Declared; package store: TestMissingCapabilitiesAreUnsupported
//	S2.16 the TCK skips what a driver declares it lacks                   Run (Suite.Ranges, Slots, Locks), with the reason
//	S2.17 configuration (YAML, JSON) opens in one call; a failure         package config: TestParseYAML, TestParseJSONMatchesYAML, TestOpenAll,
//	                                                                      TestOpenFailureClosesAndReportsEvery
//
// SPEC 3, RangeStore (12 sentences)
//
//	S3.1  Next reserves step values and returns [start, end)            Ranges/FirstRange, Ranges/NeverTwice
//	S3.2  a key that does not exist starts at 0                         Ranges/FirstRange
//	S3.3  Current returns next and sealed, reserving nothing            Ranges/Current, Ranges/CurrentCreatesNothing
//	S3.4  Seal returns the final next value; sealing twice is no error  Ranges/Seal
//	S3.5  Next on a sealed key: ErrSealed                               Ranges/Seal, Errors/Wrapped
//	S3.6  a key moves: Seal in the old store, start at that value       Ranges/Seal (Init at the sealed value), Ranges/Init; storectl TestMigrate
//	S3.7  Init creates a key at a value; another existing value fails   Ranges/Init
//	S3.8  step must be >= 1                                             Ranges/InvalidArguments
//	S3.9  past the largest int64: ErrExhausted, nothing changed         Ranges/Overflow
//	S3.10 never twice across goroutines, processes, stores, faults      Ranges/NeverTwice; faults: ZK LostAnswerIsAGap, ZK ContextEndsInFlight,
//	                                                                    ZK SessionExpiry, TestEnsembleFaults
//	S3.11 a gap only when a write's outcome was unknown                 Ranges/NeverTwice (no gap without faults); ZK LostAnswerIsAGap
//	S3.12 the key rules (segments, characters, 1024 bytes)              Ranges/Keys, Ranges/InvalidArguments
//
// SPEC 4, SlotLeaseStore (27 sentences)
//
//	S4.1  a namespace: a single segment, limit slots, a tolerance       Slots/InvalidArguments, Slots/ConcurrentAcquire, Slots/Exhaustion
//	S4.2  an owner key is a single segment                              Slots/InvalidArguments
//	S4.3  an incarnation is one run; default random per Open            Slots/Reclaim, Slots/SameIncarnation; the default: package store (Open)
//	S4.4  times are milliseconds in the store's clock                   every Acquire and Renew (lease checks)
//	S4.5  a Lease carries namespace, slot, owner, incarnation, fence,   every Acquire (lease checks), Slots/Listing
//
//	S4.6  options: preferred, ttl (default 60s), reclaim (default off)  Slots/ChoiceOrder, Slots/FirstTerm (zero ttl), Slots/Reclaim
//	S4.7  order: owner's last slots, preferred, lowest free             Slots/ChoiceOrder, Slots/MostRecentFirst, Slots/ExpiredFoundBySearch
//	S4.8  free: never used, released, or expired (now >= expiresAt)     Slots/FirstTerm, Slots/Exhaustion, Slots/Takeover, Slots/NoEarlyTakeover,
//	                                                                    Slots/ExpiredFoundBySearch
//	S4.9  a live term of the same owner and incarnation is returned     Slots/SameIncarnation
//	S4.10 no free slot: ErrExhausted                                    Slots/Exhaustion, Slots/ConcurrentAcquire
//	S4.11 ... and only then has every slot been read                    reads are not observable: ZK Slots/FullNamespace, ZK Slots/RoundTrips
//	S4.12 Renew extends; expiresAt and ceiling never decrease           Slots/Renew, Slots/RenewClockBack
//	S4.13 the slot holds another term: ErrLeaseLost                     Slots/Takeover, Slots/Reclaim
//	S4.14 a renew after expiresAt of an untouched term continues it     Slots/RenewAfterExpiry
//	S4.15 Release ends the term; used is optional                       Slots/ReleaseFloor, Slots/ReleaseExpired
//	S4.16 Release comes after the holder stopped issuing                the caller's rule (package idgen), not a driver's
//	S4.17 Slots lists used slots with owner and lease times             Slots/Listing
//	S4.18 fence +1 with every new term, never decreasing                Slots/Fence, Slots/Takeover, Slots/Reclaim
//	S4.19 ... even if the slot node is recreated from a backup          Slots/Seed; ZK Slots/RecreatedSlot, ZK Slots/HandWrittenSlot
//	S4.20 the holder issues floor <= t < ceiling, stops at expiresAt    the holder's rule (package idgen); floor <= ceiling: every lease,
//	                                                                    Slots/HighFloor
//	S4.21 after a release: clamp(used+1, floor, ceiling), or ceiling    Slots/ReleaseFloor, Slots/ReleaseExpired
//	S4.22 after an expiry or reclaim: max(next floor, old ceiling)      Slots/Takeover, Slots/Reclaim, Slots/ExpiredFoundBySearch, Slots/RenewClockBack
//	S4.23 a slot never used: floor 0                                    Slots/FirstTerm
//	S4.24 expiresAt = max(expiresMin, mtime+ttl),                       Slots/FirstTerm, every lease (fresh times), Slots/HighFloor
//
//	S4.25 a renew writes its times as lower bounds: no going back       Slots/RenewClockBack (needs ClockStepper); ZK Slots/NodeLayout
//	S4.26 a new term writes expiresMin 0, ceilingMin floor              Slots/HighFloor, Slots/FirstTerm
//	S4.27 settings fixed at creation; others: ErrConfigMismatch         Slots/ConfigMismatch
//
// SPEC 5, Locker (16 sentences)
//
//	S5.1  Lock blocks until held or the context ends                     Locks/Exclusion, Errors/Deadline, Locks/NotReentrant
//	S5.2  TryLock never waits                                            Locks/TryLock, Locks/TryLockAtHandover
//	S5.3  Unlock; Fence: 64-bit, grows with each holder, never wraps     Locks/Exclusion, Locks/TryLock, Locks/LostOnClose, Purge/Everything
//	S5.4  Lost closes when the holder cannot be sure (session expired,   store closed: Locks/LostOnClose, Locks/LostBeforeGrant;
//	                                                                     faults: ZK Locks/SessionExpiry, ZK Locks/SilentServer
//	S5.5  fair: arrival order                                            Locks/FIFO, Locks/FIFOArrival
//	S5.6  a waiter whose context ends leaves no trace                    Locks/Cancel, Locks/MiddleCancel, Locks/CancelAtGrant, Close/Locks
//	S5.7  not reentrant: a second Lock by the same store waits           Locks/NotReentrant
//	S5.8  no waiter node left behind by a timeout                        Locks/Cancel, Errors/Deadline
//	S5.9  no orphan node after a connection loss during the create       needs a fault: ZK Locks/CutDuringCreate, ZK Locks/CutDuringCreateThenGiveUp
//	S5.10 the holder is told when its session expires                    needs a fault: ZK Locks/SessionExpiry
//	S5.11 no endless wait on a predecessor already gone                  Locks/MiddleCancel, Locks/Cancel; ZK Locks/PredecessorGoneBeforeWatch
//	S5.12 no herd: waiters do not all re-read on each change             not observable: ZK Locks/NoHerd
//	S5.13 Lost closes before any other store is granted the lock         on Close: Locks/LostBeforeGrant (rounds); on faults:
//	                                                                     ZK Locks/SessionExpiry, ZK Locks/SilentServer
//	S5.14 the holder confirms its session through the leader every T/3   the driver's means: ZK Locks/SilentServer
//	S5.15 the same rule bounds anything else trusting an ephemeral node  the driver's means: no other such use today
//	S5.16 lock parents may vanish; Locks lists names with a node now     Locks/Names
package tck
