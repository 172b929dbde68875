// Package idgen issues unique int64 IDs on top of the stores of package
// store, and owns the hard part: a generator stops issuing the moment its
// reservation or lease can no longer be trusted, so no caller has to get
// heartbeats, clocks and slot takeovers right.
//
// # Generators
//
//   - Segment: IDs from ranges reserved on a RangeStore key (segment IDs).
//     The next range is fetched in the background before the current one
//     runs out, so NextID waits for the store only when demand outruns the
//     prefetch. Unique across every process using the key; gaps after a
//     restart, never duplicates.
//   - Snowflake: timestamp, worker ID and sequence in 63 bits (see Layout),
//     where the worker ID is a slot leased from a SlotLeaseStore and kept
//     alive by a Session. It issues only while the lease is valid and only
//     timestamps inside the lease's [Floor, Ceiling), so even a holder that
//     was paused past its ttl while another process took its slot cannot
//     collide with it: it refuses to issue when it wakes.
//
// Both are a Generator (NextID and Close), so a program switches between
// them in the line that opens one. Three lines each:
//
//	seg, err := idgen.NewSegment(ctx, st, "orders", idgen.SegmentOptions{})
//	defer seg.Close(ctx)
//	id, err := seg.NextID(ctx)
//
//	sf, err := idgen.NewSnowflake(ctx, st, store.Namespace{Name: "workers", Limit: 1024, Tolerance: time.Second}, "host-a", idgen.SnowflakeOptions{})
//	defer sf.Close(ctx)
//	id, err := sf.NextID(ctx)
//
// # Sessions
//
// A Session (in the spirit of etcd's concurrency.Session) holds one slot
// lease: it renews about every ttl/3 (more often with a margin above a
// third of the ttl) and closes Done as soon as the lease is
// lost or could not be renewed before it would expire. Validity is measured
// on the local monotonic clock from the moment the renewal that succeeded
// was sent, less a margin, and the holder's wall clock must also stay below
// the lease's ExpiresAt: whichever ends first ends the session, for good.
// Close releases the lease. A Snowflake builds on one; a Session is also the
// building block for a generator of another shape.
//
// # Time
//
// Lease times are milliseconds in the store's clock. A Snowflake timestamp
// is a count of layout units since the layout's epoch; it may be issued
// only if every millisecond of its unit lies in [Floor, Ceiling), and on
// Close the generator reports the last millisecond of its last unit as the
// highest timestamp used, so the slot's next holder starts above it.
//
// A Snowflake may run ahead of its clock, up to MaxAhead and never to the
// ceiling, when a unit's sequence is used up or the clock stepped back a
// little; beyond that it waits, up to MaxWait, and then fails with
// ErrClockBackwards. A lease whose floor is ahead of the clock (the
// ceiling of the slot's previous term, after a reclaim) is waited for the
// same way. Its clock can be replaced for tests.
//
// # Observing
//
// Generators report through their store (store.WithLogger,
// store.WithObserver): a Session its lease acquired, renewed, lost (with the
// reason) and released; a Snowflake its waits for a lease's floor; a Segment
// each growth of its prefetch distance. Segment.Stats and Snowflake.Stats
// return their counters.
//
// # Errors
//
// Errors wrap the sentinels of this package (ErrLeaseLost, ErrClockBackwards,
// ErrCeiling, ErrTimestampOverflow, ErrNoRange, ErrInUse, ErrClosed) and,
// where a store call failed, the store's error, for errors.Is.
package idgen
