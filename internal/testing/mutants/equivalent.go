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
	`driver/slot.go: line 53:23: && -> ||`: `Holds: owner != "" || owner == l.Owner: l.Owner is never empty`,
	`driver/slot.go: line 53:45: && -> ||`: `Holds: (owner and owner match) || incarnation matches, then fence matches: equal fences are one term`,

	// Message text only: the error kind and the decision are unchanged.
	`driver/slot.go: line 199:94: 0 -> 1`:   "Agrees: the value shown in the message",
	`driver/slot.go: line 234:13: != -> ==`: "lost: which description of the slot the ErrLeaseLost message gives",

	// FirstSlots drops slots outside [0, limit) and repeats. A namespace's
	// limit never changes (ConfigMismatch), an owner index holds only
	// slots an acquire of that namespace took (and goes with it in a
	// purge), and the preferred slot is checked below the limit: nothing
	// is ever out of range. A repeat is tried twice: busy twice, or taken
	// the first time.
	`driver/slot.go: line 300:13: && -> ||`: "FirstSlots: n >= 0 || n < limit: no slot is ever out of range",
	`driver/slot.go: line 300:18: < -> <=`:  "FirstSlots: n <= limit: no slot is ever at the limit",
	`driver/slot.go: line 300:26: && -> ||`: "FirstSlots: in range || not yet listed: repeats are harmless, nothing is out of range",
}
