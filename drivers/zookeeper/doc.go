// Package zookeeper is the ZooKeeper driver of package store: ranges, slot
// leases and locks on ZooKeeper 3.8 and 3.9, through
// github.com/go-zookeeper/zk.
//
// # Opening
//
//	import _ "github.com/cosid-go/store/drivers/zookeeper"
//
//	st, err := store.Open("zookeeper", map[string]string{"connectString": "zk1:2181,zk2:2181"})
//
// store.Open makes its own connection and closes it with the store. To use
// a connection the application already has, call OpenStore; closing that
// store leaves the connection open:
//
//	st, err := zookeeper.OpenStore(conn, &zookeeper.Options{Root: "/app", SessionTimeout: 10 * time.Second})
//
// # Options
//
//   - connectString (localhost:2181): comma-separated host:port list; a host
//     without a port gets 2181. A chroot suffix ("/app") is refused: use root.
//   - sessionTimeout (60s): the session timeout asked for; the server may cap it.
//   - connectionTimeout (15s): the limit for dialing one server, and again
//     for its answer to the session handshake (go-zookeeper alone would wait
//     up to 6.7 times the session timeout for a server that accepts the
//     connection but does not answer).
//   - blockUntilConnectedWait (10s): Open waits this long for a session, then
//     fails with an error naming the servers; 0 means Open does not wait.
//   - retry.baseSleepTime, retry.maxRetries, retry.maxSleep (100ms, 5, 500ms):
//     after a connection loss an operation sleeps base*2^n, at most maxSleep,
//     and retries at most maxRetries times, always within its context.
//   - root (/cosid): the absolute path under which every node lives.
//   - create (true): false makes Open fail with ErrNotFound ("no store at
//     root ...") when root does not exist, and the store then never
//     creates root nor writes its identity (read-only tools use it). New
//     refuses it.
//   - auth (none): comma-separated scheme:credentials entries added to the
//     session ("digest:user:password"). Open waits for the server to accept
//     each (blockUntilConnectedWait must be positive) and fails naming the
//     scheme of one it rejects; go-zookeeper sends them again after every
//     reconnect. Credentials never appear in errors or String output.
//   - acl (creator with auth, else open): the ACL of every node the store
//     creates: open (world:anyone, all permissions), creator (all
//     permissions to the session's authenticated ids), or comma-separated
//     scheme:id:perms entries with perms among the letters crwda. Existing
//     nodes keep their ACLs: the store never changes one. OpenStore takes
//     it as Options.ACL.
//   - tls (on when a tls.* option is set), tls.caFile (system roots),
//     tls.certFile and tls.keyFile (none), tls.serverName (each server's
//     host): TLS through crypto/tls, to the servers' secureClientPort; the
//     files are PEM and read by Open.
//   - Options.SessionTimeout, for OpenStore: the session timeout the
//     caller's connection negotiated (or less); Lock needs it. It must stay
//     at or below every timeout a reconnect of that connection can
//     negotiate: no more than the maxSessionTimeout of any ensemble member,
//     now and after a config change. The store does not see the caller's
//     handshakes, so a reconnect granted less is not followed, and a hold
//     can then outlive its session (two holders); Open follows every
//     handshake.
//
// Durations take Go syntax (500ms, 3s) or a bare number of milliseconds. An
// unknown option is an error that lists the known ones. OpenStore's Options
// has root, acl, the retry options and sessionTimeout (which then describes
// the caller's connection): the other options describe a connection
// OpenStore does not make.
//
// # Operations
//
// store.OpenContext bounds the wait for the first session by its context
// as well as by blockUntilConnectedWait. The store reports its session
// states (connected, with the server, session ID and negotiated timeout;
// disconnected; expired), each retry after a connection loss, and each
// write given up with an unknown outcome (the range skipped), to the
// store's logger and observers (driver.Notifier); a lost lock says why
// (driver.LostCause). An operation whose context ends while no server
// answers (none was heard since the call began, or there is no session)
// fails with driver.ErrUnavailable next to the context error, saying since
// when no server answered and which were tried; so does one that used up
// its retries on connection failures. Ping (driver.Pinger) reads the
// root's stat.
//
// go-zookeeper notices a server that stopped answering (frozen, or the
// network silently dropping packets) only after its read timeout, 2/3 of
// the session timeout (40s by default). A store made by Open does not
// wait for it: a call that has waited 1s while nothing was heard from any
// server for 1s makes it report disconnected (with "no ZooKeeper server
// answered for ..."), so disconnected comes within 1s of the first call
// that finds no server answering (a Ping, for a readiness check), whatever
// the session timeout; and connected again as soon as the server's next
// bytes arrive, or when go-zookeeper has a session again after a
// reconnect (TestFrozenServerReported). The session may well live on
// meanwhile: locks follow their own rule (Locks, below). A store on a
// caller's connection (OpenStore) reports go-zookeeper's states only. A
// Close reports no disconnection.
//
// # Nodes
//
// A range key is the node {root}/range/{key}; its data is the next value in
// decimal, with ":sealed" appended once sealed ("1200", "1200:sealed"). A key
// containing '/' gets parent nodes with empty data, which are not keys (until
// used as keys themselves, starting at 0). Keys lists the nodes holding a
// value and fails with ErrCorrupt on data that does not parse, so that a
// migration never silently misses a key. Nodes, and the missing ancestors of
// root, are created with the acl option's ACL.
//
// ZooKeeper checks paths as UTF-16 and refuses surrogates, so a key with a
// character above U+FFFF is refused with ErrInvalidArgument.
//
// Range nodes must never be deleted while any store uses their key: a store
// refuses a key whose node it used and that vanished or was recreated
// (ErrRecreated), but a write it already made cannot be taken back. Nor
// must nodes be written back from a copy under running stores: a store
// refuses a node behind what it saw of it (ErrCorrupt; see Guarantees), but
// a store that never saw it further ahead cannot tell. Raise a restored
// store before use (storectl restore --raise).
//
// # Guarantees
//
// A store remembers, per key, the node version and creation zxid it last
// wrote, and advances a key with one compare-and-set on that version: one
// round trip per Next while it is the only writer. Goroutines of one store
// take turns on a key rather than race each other. A write whose outcome is
// unknown (the connection was lost, or the context ended, while it was in
// flight) is never counted as this store's: its range is skipped, never
// handed out. A node at version -1 (a 3.8.0 server can wrap a version to
// it, ZOOKEEPER-4743) is refused rather than written, since ZooKeeper reads
// an expected version of -1 as "any version".
//
// A store also remembers the furthest state it saw of each range and slot
// node, and refuses a node read behind it with ErrCorrupt (written back from
// a copy, an ensemble restored from a snapshot): a range node below the
// highest next value seen, or unsealed once seen sealed; a slot node below
// the highest fence seen, or at that fence with a lower ceiling_min, live
// again once released, or released with a lower next_floor. A node read
// behind is read again after a sync first, since a new session may be
// served by a server behind the leader. Versions and zxids cannot tell: a
// node written back with a client gets a higher version and mzxid, and a
// restored ensemble goes back in both, then moves on from there.
//
// go-zookeeper's calls take no context. Each call runs on a goroutine of
// its own, so an operation returns as soon as its context ends; the call
// finishes in the background, and Close waits for it.
//
// # Identity
//
// The store's identity (driver.Identifier) is the line store_id=<random
// hex> of root's data, written when a store creates root. A root made
// without it (by hand, or by an older version) gets it at the first
// StoreID call of a store that may create, by a compare-and-set on the
// version read. Purge keeps root, and so the identity.
//
// # Slot leases
//
// A namespace is the node {root}/slot/{ns}, holding its settings as
// name=value lines ("limit=1024", "tolerance=1000", and after a purge
// "fence_floor=N"), with an empty child .clock (written by the acquires
// of earlier versions) and, once a generator recorded it (KeepLayout), a
// child .layout holding the layout of the namespace's IDs. Each session of
// a store has a clock node of its own, the ephemeral {root}/clock/{session
// id in hex}: an acquire or a seed writes it first, and the mtime of that
// write is its now. No node is written by every acquire, so a fleet
// acquiring at once does not queue on one.
// Slot n is the node {root}/slot/{ns}/{n}, holding the lines owner,
// incarnation, last_owner, fence, ttl, tolerance, floor, expires_min,
// ceiling_min and next_floor (durations and times in milliseconds); a free
// slot has an empty owner. Lines of other names are kept as they are when
// the store rewrites a node; blank lines and the order of the lines do not
// matter, so a slot can be restored by hand. {root}/owner/{ns}/{owner}
// lists the slots the owner key held last, most recent first, comma
// separated, at most 8; it is written in the same multi as each acquire,
// and it is only a hint: deleting it is always safe.
//
// Lease times come from the server's mtime, never from this process's
// clock: expiresAt = max(expires_min, mtime+ttl) and ceiling =
// max(ceiling_min, expiresAt+tolerance), mtime being the slot's last write.
// A slot node is a driver.SlotRecord whose Written is the node's mtime; the
// slot rules are that type's methods.
//
// When the owner's last slot or the preferred slot is free, an acquire
// takes 3 round trips: the clock write with reads of the namespace and the
// owner index; reads of the owner's last slots and the preferred slot; one
// multi that compare-and-sets (or creates) the slot and writes the index.
// Otherwise it searches a free slot in batches of 4, 16, 64, then 256
// slots, from a point of its own (driver.SearchStart), one round trip per
// batch (the reads of a batch are pipelined on the connection): a
// namespace of 1024 slots takes 7 at most. Renew
// and Release are one compare-and-set on the version the lease carries;
// after a conflict they read the slot, and the term is still the lease's
// only if owner, incarnation and fence match, on a node of the same czxid.
// An acquire whose answer was lost is settled the same way. Goroutines of
// one store take turns to acquire in a namespace.
//
// Slot data that does not parse is never overwritten: the calls that need
// it fail with ErrCorrupt naming the path, and an acquire passes over the
// slot (naming it if it then finds no free slot). Run-time code never
// deletes a slot node; a slot node deleted or recreated under a lease ends
// the lease (ErrLeaseLost, with ErrRecreated).
//
// Never delete a slot node by hand (put a bad one right instead). Each
// slot node is made with a marker, the empty node {root}/made/{ns}/{n},
// created in the same multi, so a slot whose node is gone is not taken as
// one never used (fence 1 and floor 0 again, under a term whose holder may
// still issue until its ExpiresAt): its create fails on the marker, and
// Acquire passes over the slot (ErrExhausted with ErrCorrupt, naming it,
// when none other is free), SeedSlot refuses it (ErrCorrupt), and the
// holder's Renew fails (ErrLeaseLost). Put the node back to use the slot
// again (TestSlotNodeDeletedUnderLiveTerm). A marker per slot, written
// once, keeps acquires from queuing on a shared node. A slot node made by
// a version before the markers has none (until a purge deletes it): only
// stores that saw it refuse it once deleted.
//
// Purge (driver.Purger) deletes every node below root but {root}/lock
// (the locks' seal and fence offset, below), children first,
// each on the version it saw, and stops if one changes meanwhile. First it
// writes the highest slot fence it found into root's data, the line
// slot_fence_floor=N; a namespace created later copies it into its node
// (fence_floor=N), and its slots' first terms get fences above it, so no
// slot fence repeats across a purge (lock fences are czxids, which never
// do).
//
// # Locks
//
// A lock name is the container node {root}/lock/{name}: the server deletes
// it once it has no waiters (fences, being czxids, still only grow), and
// Locks lists the names that have a node. Each Lock call adds an ephemeral
// sequential node _c_{guid}-lock-{seq} under it, holding the owner key. The
// node with the lowest sequence number holds the lock (sequence numbers are
// compared with wrap-around, as ZooKeeper's 32-bit counter wraps); each
// waiter watches only the node just before its own, so a release wakes one
// waiter, and waiters of one store share one watch per node. The fence is
// the holder node's czxid. The create is a multi with a setData of the
// name's node that writes its (empty) data again: the setData's mzxid is
// the new node's czxid, so the fence needs no request of its own (the
// name's node's data version counts creates; nothing reads it). A store
// whose ACL lets it create there but not write falls back to a plain
// create and a read of the node's czxid. A store made by Open sends its
// first listing right behind the create, as soon as its connection has
// written it, so an uncontended Lock is one round trip and Lock plus
// Unlock two (go-zookeeper's zk.Lock takes three). A Lock call that fails,
// or whose context ends, removes its node before it returns (or, after a
// second, in the background), on a context of its own that no timer ends:
// a session outlives an outage of any length while the ensemble has no
// leader. After a create whose answer was lost it finds its node by the
// GUID (a removal syncs the member it reads from with the leader first:
// that member may not have applied the create yet), and a create answered
// late, even in a later session, is deleted then. Unlock deletes only its own node. Lock waits are bounded by the
// caller's context only; a waiter whose node died with its session queues
// again. TryLock waits for nothing but its own requests, within its
// context: with no session now, or once the connection loses it, it fails
// with ErrUnavailable; it fails with ErrLocked as soon as another node is
// first, and leaves the removal of its node to the background.
//
// Sealed locks (driver.LockSealer, for migrations): SealLocks writes the
// line locks_sealed=true into the data of {root}/lock, the parent of the
// lock names' nodes, which a purge keeps. Each lock node's create is a
// multi that also checks that node's version as the store last read it (0
// until then): after a seal it fails as a whole, nothing created, and the
// store reads the seal and refuses with ErrSealed; a node that waited
// checks the version again (a multi of that check alone) when it comes
// first, so no waiter is granted after the seal, and an uncontended Lock
// sends no request more. czxids cannot be set, so RaiseLockFences writes
// lock_fence_offset=N there (and removes the seal, noting its mzxid as
// locks_unsealed=Z: a node created before Z is never granted): a fence is
// the node's czxid plus the offset its create checked, above N. SealLocks' floor is
// the seal write's mzxid plus the offset.
//
// Lost closes when the session expires or is replaced, when the store
// closes, or when requests through the leader no longer prove the session
// alive (docs/design.md, Lock liveness on ZooKeeper): while the store
// holds a lock, one loop sends a write the
// leader commits only with a quorum (a multi checking that the store's held
// lock nodes exist, which needs only read permission on them; a sync will
// not do, an isolated leader answers those alone) every 0.3 T (T the
// negotiated session timeout), and a hold is trusted until the
// send time of a confirmed request + T - T/20, for a request that a later
// confirmed one, sent at least 0.3 T after it, proves the leader counted;
// a lone confirmation counts for 5T/12 - T/20. Nothing heard from the
// connected server counts: a follower cut off from the leader keeps
// answering pings while the leader expires the session. A lock node found
// deleted by someone else is lost at once; a confirmation the server
// refuses (no read permission) is named in the cause of the loss. A store
// made by store.Open reads T off each handshake: a reconnect that negotiates
// another T (a server restarted with another maxSessionTimeout, or an
// ensemble member configured differently) computes every hold's deadline
// again with it, earlier as well as later, and a hold past it is lost at
// once. Deadlines count time the machine spent suspended on Linux
// (CLOCK_BOOTTIME); on other platforms they use Go's monotonic clock, which
// on some (macOS, the BSDs) stops while the machine sleeps, so there a hold
// can look valid for up to the time slept after a resume: do not let such
// a machine sleep while it holds a lock. A store made by OpenStore is told T
// (Options.SessionTimeout) and refuses to lock without it, and checks the caller's
// connection every 50ms for session changes while it has lock nodes. Its
// Close removes its lock nodes, since the caller's session outlives it. The
// node of a hold lost while its session may live on is removed in the
// background once the connection is back.
package zookeeper
