// Package etcd is the etcd driver of package store: ranges, slot leases
// and locks on etcd 3.6 and 3.7, through go.etcd.io/etcd/client/v3. It is a
// module of its own, so that programs using the other drivers never
// download gRPC.
//
// # Opening
//
//	import _ "github.com/cosid-go/store/drivers/etcd"
//
//	st, err := store.Open("etcd", map[string]string{"endpoints": "etcd1:2379,etcd2:2379"})
//
// or, without the registry, etcd.OpenStore(ctx, &etcd.Options{...}).
//
// # Options
//
//   - endpoints (localhost:2379): comma-separated host:port or http(s)
//     URLs of the members; the scheme in any case (HTTPS:// is https://).
//     Credentials in an endpoint are refused (any '@': nothing of the
//     option is shown then), and so are http:// and https:// together:
//     the client speaks TLS to every member or to none. So is a URL
//     with a path, query or fragment, which the client ignores and which
//     may carry a token: give scheme://host:port (a trailing / is fine).
//   - prefix (/cosid): put before every key the store writes; nothing
//     outside it is touched. A prefix among another store's range, lock,
//     namespace, slot or owner keys (/cosid/range, /cosid/lock/x) is
//     refused at Open (ErrConfigMismatch, naming that store's metadata
//     key): the two stores would read and write the same keys (the inner
//     store's key k is the outer's range key range/k); so is the creation
//     of a store where such keys already lie (naming the store nested
//     there), and of two such stores at once one fails. A prefix beside
//     another store's layout (/cosid/x) shares no key with it.
//   - username, password (none): etcd authentication, both or neither; the
//     password never appears in errors. A password etcd refuses fails
//     Open with ErrInvalidArgument naming the option.
//   - tls.caFile, tls.certFile, tls.keyFile (none): TLS, with the CA to
//     trust (without it, the system's) and the client certificate for a
//     member started with --client-cert-auth; the files are PEM, read at
//     open. Any of them turns TLS on, also for host:port endpoints (https://
//     does without them); with an http:// endpoint they are refused, as
//     the connection would not be TLS. Key contents never appear in errors.
//   - dialTimeout (5s): how long Open may take, or its context if
//     shorter: the connection to a member and the reads of the store's
//     identity (a member that lost its quorum accepts a connection and
//     answers no read: ErrUnavailable after dialTimeout). A TLS failure fails Open at once,
//     saying what to fix: the member's certificate not signed by the CA of
//     tls.caFile, or the member requiring a client certificate (none given,
//     or one its CA did not issue, which the client does not send).
//   - sessionTTL (60s, at least 2s): the TTL asked for the etcd lease the
//     store's locks hang on; a crashed holder's locks are free after it.
//   - create (true): false makes Open fail with ErrNotFound ("no store
//     at ...") when the prefix holds no store, writing nothing.
//
// An unknown option is an error that lists the known ones.
//
// # Keys
//
// Under the prefix: meta (the store's identity), range/{key} (the next
// value in decimal, ":sealed" appended once sealed), ns/{ns} (limit and
// tolerance, a sealed=true line once sealed), slot/{ns}/{n} (the slot's record, driver.SlotRecord's
// binary encoding), slot/{ns} (the namespace's slot tally: its version
// counts the slot keys created), owner/{ns}/{owner} (the owner index),
// layout/{ns} (the layout of the namespace's IDs, driver.LayoutKeeper), and
// lock/{name}/{waiter} (one key per holder or waiter, on its store's
// session lease, holding the owner), purged (the highest slot fence a
// purge deleted, and the highest floor their next terms would have had).
// Run-time code never deletes a range or slot key; Purge
// (driver.Purger) deletes them all, refusing while any lock key exists, a
// slot term may still issue, a slot record does not decode (ErrCorrupt: its
// fence could not be kept), or another store's keys lie under the prefix.
// "May still issue" is judged on the purging host's clock, which may be
// ahead: what keeps terms apart is the floor the purge keeps, at which every
// slot first used after it starts (a live term the purge deleted loses its
// Renew, ErrLeaseLost, and the next term starts at or above its ceiling).
//
// # Guarantees
//
// Next is one transaction comparing the key's mod revision with the one
// the store wrote or read last: one round trip while the store is the only
// writer. A key whose create revision changed was deleted and created
// again, and is refused (ErrRecreated), as is a key the store used that is
// now missing; a value below one the store saw is ErrCorrupt. A write whose
// answer was lost is a gap, reported as an unknown_outcome event.
//
// Slot times come from the clock of the host that writes: etcd stamps no
// time on its writes (docs/design.md, etcd). Renewals write the current
// expiry and ceiling as lower bounds and the next term's floor comes from
// the stored record, so the timestamps of two terms stay apart whatever the
// hosts' clocks say; a host whose clock is ahead may take an expired slot
// early, a host behind late. A slot whose fence is below one the store saw
// (a record put back from a backup, a key deleted by hand) is ErrCorrupt.
// A slot key deleted by hand is caught by every store, also one that never
// saw it: the namespace's slot tally counts the keys created, and while
// fewer exist no missing slot of the namespace is taken or seeded (Acquire
// passes over them: ErrExhausted and ErrCorrupt when nothing else is free;
// SeedSlot: ErrCorrupt), since the deleted term may still issue and its
// fence and ceiling are gone. Restoring the key ends it; so does a purge.
// Slot keys created by a driver older than the tally are not counted.
//
// Locks are fair: waiters are served in the order of their keys' create
// revisions, each waiting only for its predecessor's delete. The fence is the waiter
// key's create revision, which only grows (across restarts, deletes and
// leader changes). A hold is Lost once the store cannot be sure its lease
// is alive: from the send time of the last keep-alive the leader answered
// (a follower forwards keep-alives to the leader, which confirms its
// leadership with a quorum before renewing) plus the TTL it returned, less
// a tenth of it, on a clock that counts time the machine spent suspended
// (CLOCK_BOOTTIME on Linux; elsewhere Go's monotonic clock, which may not):
// a hold is Lost within a second of a resume from a suspend longer than
// that. The lease cannot expire before that, so no other store is granted
// the lock before Lost closes.
//
// An operator who deletes a held lock key, or revokes a store's lease,
// frees the lock at once: the next waiter can be granted before the holder
// can know. Each session watches the deletes of the lock names it has keys
// under (a watch per name, from its first key's create revision, kept a
// while after its last key; all on one stream), so an Unlock reaches only
// the stores queued on that name; and a delete of one of its held
// keys not made by Unlock loses the session (and revokes it) as soon as it
// is seen: Lost closes promptly after, not before. The watch requires a
// leader and must answer a progress request every third of the TTL, so one
// on a member cut off from its peers, or answering nothing, is started
// again on another (keep-alives answered through the others would keep the
// session alive meanwhile). An Unlock that finds its key already deleted
// by someone else reports ErrLeaseLost and loses the session. Purge refuses a key on a lease, or another
// store's metadata, under its prefix (a store nested there), and a prefix
// inside another store's layout (left by a release that did not refuse it).
//
// A waiter key whose create got no answer may be created later, at any
// time (a proposal a member forwarded late): Lock then abandons the
// store's session, losing its other holds too, and revokes its lease, so
// that such a key fails for want of a lease or goes with it, at most one
// session TTL later if the revoke is lost as well; the Lock queues again
// under a new session while its context lasts. Every delete of a waiter
// key compares its create revision, so a delete applied late never
// removes a later key of the same name. An Unlock whose delete gets no
// answer within its context fails with ErrUnavailable and costs only
// itself: the key is removed in the background (the same compared delete),
// so the next waiter is granted once a member answers again, not when the
// session ends.
//
// With etcd authentication on, each new gRPC stream authenticates (a
// bcrypt check and a raft write on the members), so a store keeps its
// streams: one keep-alive stream per lock session and one watch stream,
// which its holds and waiters share, each opened again only after a failure.
//
// # Operations
//
// Every call ends within its own bound, whatever the network does: the
// store timeout (TryLock and the others), the context (Lock). A new lock
// session's lease grant runs on its own, shared by the calls that need it,
// each waiting for it only while its context lasts; Close revokes the
// session's lease waiting at most 2s for an answer, and ends every
// goroutine the store started.
//
// An operation whose context ends while no member answers fails with
// driver.ErrUnavailable next to the context error, saying when a member
// last answered and the last connection failure since (a closed
// connection, a refused TLS handshake). Retries and writes given up with
// an unknown outcome are reported to the store's logger and observers
// (driver.Notifier); a lost lock says why (driver.LostCause). Ping
// (driver.Pinger) reads the metadata key; ID (driver.Identifier) is the
// identity written there when the store was created.
//
// Failover: a call that retries (Next) gives each round trip a deadline
// of its own, ten times the median latency of the last answers, within
// 300ms and 2s (and the call's), and asks for a member with a leader. A
// round trip cut by that deadline doubles it for the next ones (up to 2s),
// until answers come fast again: a server that answers late (many stores
// acquiring at once) is then waited for, not sent each request again. A
// read on a client of one member is not cut (sent again, it would wait in
// the same queue): it is waited for, and its answer, if late, widens the
// deadline as a cut would. A write a follower forwarded to a leader that
// died is lost, and a hung member answers nothing; either costs that round
// trip, not the call's whole timeout: the retry goes to a member that
// answers, and resolves the cut write's unknown outcome by reading (a gap,
// never a value twice, reported as an unknown_outcome event). Writes resume about when the cluster has elected
// a new leader.
//
// Connection events, also logged (store.WithLogger): connected, at open
// and again when members answer after a disconnected; disconnected, when
// the client's connection stops being ready (every member's connection
// closed or failing: a killed member is seen at once, a hung one after
// gRPC's keepalive of 10s+5s while a call or watch is open), or when a call
// finds no member answering. Its Err is the last failure. One member of
// several going away is no event: the client uses the others. Expired:
// the server ended the store's lock session (its lease revoked or
// expired, found by a keep-alive or a Lock); the next Lock starts a new
// one.
package etcd
