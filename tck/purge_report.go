package tck

import (
	"strconv"
	"strings"

	"github.com/cosid-go/store"
)

// wantPurged checks that a purge's report has an entry per thing checkPurge
// made (see driver.Purger: one readable entry per thing deleted): the range
// key, and the namespace, the slot and the owner index of released. Drivers
// word entries their own way ("owner purge/owner", a node's path), so an
// entry is known by the names it carries.
func (e *env) wantPurged(deleted []string, released store.Lease) {
	e.t.Helper()
	has := func(what string, match func(string) bool) {
		e.t.Helper()
		for _, d := range deleted {
			if match(d) {
				return
			}
		}
		e.t.Errorf("Purge reports %q: no entry for %s (see driver.Purger: one entry per thing deleted)", deleted, what)
	}
	contains := func(s string) func(string) bool { return func(d string) bool { return strings.Contains(d, s) } }
	if e.suite.Ranges {
		has(`the range key "purge/key"`, contains("purge/key"))
	}
	if e.suite.Slots {
		ns := released.Namespace
		slot := ns + "/" + strconv.Itoa(released.Slot)
		has("slot "+slot, func(d string) bool { return strings.HasSuffix(d, slot) || strings.Contains(d, slot+" ") })
		has("the owner index of "+ns+"/"+released.Owner, contains(ns+"/"+released.Owner))
		has("the namespace "+ns, func(d string) bool { return strings.HasSuffix(d, " "+ns) || strings.HasSuffix(d, "/"+ns) })
	}
}
