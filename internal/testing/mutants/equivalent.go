package main

// equivalent lists the mutants that change no behaviour, by the name the
// run prints (file, line:column of the operator, the change), with the
// reason. A listed mutant that the tests kill is reported as killed, so a
// stale entry (its line moved) shows as a new survivor, never hides one.
var equivalent = map[string]string{
	// SlotRecord.Holds: owner != "" && owner == l.Owner && inc == l.Inc && fence == l.Fence.
	// A slot's fence grows with every term, so equal fences already mean
	// one term, with one owner and incarnation; and a lease always names
	// an owner (the portable layer refuses one without).
	`driver/slot.go: line 58:23: && -> ||`: `Holds: owner != "" || owner == l.Owner: l.Owner is never empty`,
	`driver/slot.go: line 58:45: && -> ||`: `Holds: (owner and owner match) || incarnation matches, then fence matches: equal fences are one term`,

	// Message text only: the error kind and the decision are unchanged.
	`driver/slot.go: line 199:94: 0 -> 1`:   "Agrees: the value shown in the message",
	`driver/slot.go: line 234:13: != -> ==`: "lost: which description of the slot the ErrLeaseLost message gives",

	// FirstSlots drops slots outside [0, limit) and repeats. A namespace's
	// limit never changes (ConfigMismatch), an owner index holds only
	// slots an acquire of that namespace took (and goes with it in a
	// purge), and the preferred slot is checked below the limit: nothing
	// is ever out of range. A repeat is tried twice: busy twice, or taken
	// the first time.
	`driver/slot.go: line 286:13: && -> ||`: "FirstSlots: n >= 0 || n < limit: no slot is ever out of range",
	`driver/slot.go: line 286:18: < -> <=`:  "FirstSlots: n <= limit: no slot is ever at the limit",
	`driver/slot.go: line 286:26: && -> ||`: "FirstSlots: in range || not yet listed: repeats are harmless, nothing is out of range",

	// The value returned beside an error: the contract gives it no
	// meaning (Go's convention), and no caller in the repository reads it.
	`internal/sqlstore/ranges.go: line 47:10: 0 -> 1`:      "Next: the start returned with the ErrCorrupt of a key that went back",
	`internal/sqlstore/ranges.go: line 83:10: 0 -> 1`:      "Current: the next value returned with a read's error",
	`internal/sqlstore/ranges.go: line 102:12: 0 -> 1`:     "Seal: the value returned with the error of Current after a refused seal",
	`drivers/etcd/slot_renew.go: line 45:33: 0 -> 1`:       "rewrite: the revision returned with a slot key's parse error",
	`drivers/etcd/range_advance.go: line 28:12: 0 -> 1`:    "Advance: the value returned with a read's error",
	`internal/sqlstore/slots.go: line 185:16: 1 -> 0`:      "lockFirst: the slot returned (-1 or -0) with lockRows's error",
	`drivers/zookeeper/range_store.go: line 95:10: 0 -> 1`: "Next: the start returned with CheckStep's error",

	// The shared SQL layer (make mutants-sqlstore).
	`internal/sqlstore/dialect.go: line 119:16: || -> &&`: "Kind: every dialect sets Classify, and each classifies nil as Other",
	`internal/sqlstore/dialect.go: line 174:27: >= -> >`:  "Rewrite: no statement has a placeholder $0 (they count from $1), and a later digit 0 is read by the loop below",
	`internal/sqlstore/dialect.go: line 245:45: 0 -> 1`:   "override: no statement's name is one letter, so its '[' is never at index 1",
	`internal/sqlstore/purge.go: line 163:23: 0 -> 1`:     "parseFenceFloor: slot_fence_floor is only written above the floor read (raiseFenceFloor), so never 0",

	`internal/sqlstore/slots.go: line 455:59: < -> <=`:    "Namespaces: sorted by names, which are unique, so <= orders them alike",
	`internal/sqlstore/dialect.go: line 245:47: && -> ||`: "override: a name with only one of '[' and ']' is refused either way, with another message",

	// The etcd driver (make mutants-etcd).
	`drivers/etcd/slot_acquire.go: line 205:31: >= -> >`: "read: no slot key at the limit is ever written (a namespace's limit never changes), as FirstSlots above",
	`drivers/etcd/slot_store.go: line 89:8: > -> >=`:     "formatIndex: a leading comma, which parseIndex skips as an empty field",
	`drivers/etcd/slot_tally.go: line 72:99: + -> -`:     "hole: the count shown in the ErrCorrupt message",

	// The ZooKeeper driver (make mutants-zookeeper).
	`drivers/zookeeper/slot_store.go: line 80:37: 0 -> 1`:  "the clock node's maker: 1 is no session id either, so the node is made again as with 0",
	`drivers/zookeeper/slot_store.go: line 206:8: <= -> <`: "seeSlotZxid: at z == old the swap stores the same value",
	`drivers/zookeeper/slot_term.go: line 92:47: 1 -> 0`:   "guardVersions: which node's data the ErrCorrupt message shows",
}
