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
}
