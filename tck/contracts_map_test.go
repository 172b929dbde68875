package tck

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestContractMapNamesEveryCheck fails when a check of the kit is named
// nowhere in the contract map (tck_contracts.go), or the map names a
// check of a kit group that does not exist: the map is where a driver
// author learns which rule a failing check holds.
func TestContractMapNamesEveryCheck(t *testing.T) {
	src, err := os.ReadFile("tck_contracts.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	named, direct := map[string]bool{}, map[string]bool{}
	// Names as the map writes them: "Slots/Renew", also inside "Locks/X
	// (rounds)" or "Interleave/SealRace, SealRaceUncreated" (a list
	// continuing one group).
	for _, m := range regexp.MustCompile(`\b([A-Z][A-Za-z]+)/([A-Z][A-Za-z0-9]+)((?:, [A-Z][A-Za-z0-9]+\b(?:[^/]|$))*)`).FindAllStringSubmatch(text, -1) {
		named[m[1]+"/"+m[2]], direct[m[1]+"/"+m[2]] = true, true
		for _, more := range regexp.MustCompile(`[A-Z][A-Za-z0-9]+`).FindAllString(m[3], -1) {
			named[m[1]+"/"+more] = true
		}
	}
	all := map[string]bool{}
	var missing []string
	for _, g := range groups() {
		for _, c := range g.checks {
			name := g.name + "/" + c.name
			all[name] = true
			if !named[name] && !strings.Contains(text, name) {
				missing = append(missing, name)
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("checks the contract map (tck_contracts.go) does not name: %s", strings.Join(missing, ", "))
	}
	groupNames := map[string]bool{}
	for _, g := range groups() {
		groupNames[g.name] = true
	}
	var unknown []string
	for name := range direct {
		group := name[:strings.Index(name, "/")]
		// "ZK Slots/X" and the like name a driver's own tests, which
		// the kit does not run; only names of a kit group count.
		if groupNames[group] && !all[name] && !regexp.MustCompile(`(ZK|postgres|etcd|driver|idgen|storectl|memory) `+regexp.QuoteMeta(name)).MatchString(text) {
			unknown = append(unknown, name)
		}
	}
	slices.Sort(unknown)
	if len(unknown) > 0 {
		t.Errorf("the contract map names checks the kit does not have: %s", strings.Join(unknown, ", "))
	}
}
