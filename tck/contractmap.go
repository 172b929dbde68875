package tck

import (
	_ "embed" // the contract map, read at run time
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// The contract map is the package documentation in tck_contracts.go: the
// kit reads it at run time, so that a failing check names the rules it
// holds from the one place that lists them.
//
//go:embed tck_contracts.go
var contractMapSource string

// A contractRule is one row of the contract map: a sentence's ID, where the
// sentence lives (for the D rows, the declaration of package driver that
// states it in full), the row's short form of it, and the checks and tests
// that hold it.
type contractRule struct {
	id       string // "D68", "S4.12"
	home     string // D rows: "SlotLeaseStore.Renew", "package driver"; S rows: "D68", "store.Register", ...
	sentence string
	checks   string // the right column, its lines joined by spaces
	section  int    // index into contractMap.sections
}

// A contractSection is one block of rows and the count its heading gives.
type contractSection struct {
	heading string // "package driver", "S3, RangeStore"
	count   int
	where   string // where the section's sentences live: "docs/design.md, Ranges"
}

type contractMap struct {
	rules    []contractRule
	sections []contractSection
}

var (
	ruleStart    = regexp.MustCompile(`^(D\d+[a-z]?|S\d+\.\d+) +`)
	homeLine     = regexp.MustCompile(`^(package driver|[A-Z][A-Za-z0-9]*(?:\.[A-Z][A-Za-z0-9]*)?):$`)
	sectionLine  = regexp.MustCompile(`^// (\S.*?),? \((\d+) sentences(?:; ([^)]*))?\)`)
	columnBreak  = regexp.MustCompile(`  +`)
	checkNames   = regexp.MustCompile(`\b([A-Z][A-Za-z]+)/([A-Z][A-Za-z0-9]+)((?:, [A-Z][A-Za-z0-9]+\b(?:[^/]|$))*)`)
	moreNames    = regexp.MustCompile(`[A-Z][A-Za-z0-9]+`)
	driverTestOf = regexp.MustCompile(`\b(?:ZK|postgres|etcd|driver|idgen|storectl|memory) $`)
)

// parseContractMap reads the rows of the contract map. A row is
// "ID  sentence  checks", sentence and checks two or more spaces apart;
// a line indented a little continues the sentence (and maybe the checks),
// one indented far continues the checks. In the package driver section a
// line "Home:" names the declaration the rows below it live on.
func parseContractMap(src string) (contractMap, error) {
	var m contractMap
	home := ""
	for n, line := range strings.Split(src, "\n") {
		if sm := sectionLine.FindStringSubmatch(line); sm != nil {
			count, _ := strconv.Atoi(sm[2])
			m.sections = append(m.sections, contractSection{heading: sm[1], count: count, where: sm[3]})
			home = ""
			continue
		}
		body, ok := strings.CutPrefix(line, "//\t")
		if !ok || len(m.sections) == 0 {
			continue
		}
		if hm := homeLine.FindStringSubmatch(body); hm != nil {
			home = hm[1]
			continue
		}
		if rm := ruleStart.FindStringSubmatch(body); rm != nil {
			parts := columnBreak.Split(body[len(rm[0]):], 2)
			if len(parts) < 2 {
				return m, fmt.Errorf("tck_contracts.go:%d: row %s has no checks column (two spaces or more after the sentence)", n+1, rm[1])
			}
			m.rules = append(m.rules, contractRule{id: rm[1], home: home, sentence: parts[0], checks: parts[1], section: len(m.sections) - 1})
			continue
		}
		text := strings.TrimLeft(body, " ")
		indent := len(body) - len(text)
		if indent == 0 || text == "" {
			continue // prose inside a section, not a row
		}
		if len(m.rules) == 0 {
			return m, fmt.Errorf("tck_contracts.go:%d: a continuation line before any row", n+1)
		}
		r := &m.rules[len(m.rules)-1]
		if indent > 8 {
			r.checks += " " + text
			continue
		}
		parts := columnBreak.Split(text, 2)
		r.sentence += " " + parts[0]
		if len(parts) == 2 {
			r.checks += " " + parts[1]
		}
	}
	// An S row ends its sentence with "= home": a D row stating the same
	// rule, or the declaration or page that states it.
	for i, r := range m.rules {
		if strings.HasPrefix(r.id, "S") {
			if at := strings.LastIndex(r.sentence, " = "); at >= 0 {
				m.rules[i].sentence, m.rules[i].home = r.sentence[:at], r.sentence[at+3:]
			}
		}
	}
	return m, nil
}

// rule returns the row with ID id.
func (m contractMap) rule(id string) (contractRule, bool) {
	for _, r := range m.rules {
		if r.id == id {
			return r, true
		}
	}
	return contractRule{}, false
}

// where says where r is stated in full.
func (m contractMap) where(r contractRule) string {
	if d, ok := m.rule(r.home); ok && r.id != d.id && strings.HasPrefix(d.id, "D") {
		return m.where(d) + ", as " + d.id
	}
	switch {
	case r.home == "package driver":
		return "the driver package doc"
	case strings.HasPrefix(r.id, "D") || driverDecl.MatchString(r.home):
		return "driver." + r.home
	}
	return r.home
}

// driverDecl matches a home that names a declaration of package driver
// (an S row's home may also name package store's, config's, a page).
var driverDecl = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*(?:\.[A-Z][A-Za-z0-9]*)?$`)

var theContractMap = sync.OnceValues(func() (contractMap, error) { return parseContractMap(contractMapSource) })

// kitChecks returns the kit's checks a checks column names, as
// "group/check": "Slots/Renew", also each of "Interleave/SealRace,
// SealRaceUncreated". A name after "ZK ", "postgres " and the like is a
// driver's own test, not a kit check.
func kitChecks(checks string) []string {
	var out []string
	for _, loc := range checkNames.FindAllStringSubmatchIndex(checks, -1) {
		if driverTestOf.MatchString(checks[:loc[0]]) {
			continue
		}
		group := checks[loc[2]:loc[3]]
		out = append(out, group+"/"+checks[loc[4]:loc[5]])
		for _, more := range moreNames.FindAllString(checks[loc[6]:loc[7]], -1) {
			out = append(out, group+"/"+more)
		}
	}
	return out
}

// rulesCited says which rules of the contract map the check named
// group/check holds, one line each with where the rule lives: what a
// driver author needs beside a failure of that check.
func rulesCited(name string) string {
	m, err := theContractMap()
	if err != nil {
		return "the contract map does not parse: " + err.Error()
	}
	var b strings.Builder
	for _, r := range m.rules {
		for _, c := range kitChecks(r.checks) {
			if c != name {
				continue
			}
			fmt.Fprintf(&b, "\n    %s  %s  (stated in full: %s)", r.id, r.sentence, m.where(r))
			break
		}
	}
	if b.Len() == 0 {
		return name + " holds no rule of the contract map (a gap in the map: TestContractMap* fails on it)"
	}
	return name + " holds these rules of the contract map (go doc github.com/cosid-go/store/tck):" + b.String()
}
