package tck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func mustContractMap(t *testing.T) contractMap {
	t.Helper()
	m, err := theContractMap()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.rules) == 0 {
		t.Fatal("the contract map (tck_contracts.go) has no rows")
	}
	return m
}

// TestContractMapNamesEveryCheck fails when a check of the kit is named in
// no row's checks column of the contract map (tck_contracts.go), or a row
// names a check of a kit group that does not exist: the map is where a
// driver author learns which rule a failing check holds, and Run cites it
// on every failure.
func TestContractMapNamesEveryCheck(t *testing.T) {
	m := mustContractMap(t)
	named := map[string]bool{}
	for _, r := range m.rules {
		for _, c := range kitChecks(r.checks) {
			named[c] = true
		}
	}
	all, groupNames := map[string]bool{}, map[string]bool{}
	var missing []string
	for _, g := range groups() {
		groupNames[g.name] = true
		for _, c := range g.checks {
			name := g.name + "/" + c.name
			all[name] = true
			if !named[name] {
				missing = append(missing, name)
			}
		}
	}
	if len(missing) > 0 {
		t.Errorf("checks no row of the contract map (tck_contracts.go) names: %s", strings.Join(missing, ", "))
	}
	var unknown []string
	for name := range named {
		if groupNames[name[:strings.Index(name, "/")]] && !all[name] {
			unknown = append(unknown, name)
		}
	}
	slices.Sort(unknown)
	if len(unknown) > 0 {
		t.Errorf("the contract map names checks the kit does not have: %s", strings.Join(unknown, ", "))
	}
}

// A row with no kit check still names what holds its sentence: a test of
// a driver or package (TestX, "ZK X"), or why no test can (the sentence
// binds the caller, the portable layer, the repository).
var (
	namedTest  = regexp.MustCompile(`\bTest[A-Z]\w*|\b(?:ZK|postgres|etcd|driver|idgen|storectl|memory) [A-Z]\w*`)
	notTheKits = regexp.MustCompile(`^(not a driver's|the caller's rule|the holder's rule|the API's signatures|the portable layer's|portable layer|binds the portable layer|the driver's means|Run \()`)
)

// TestContractMapRulesHaveChecks fails when a sentence of the contract map
// has no check: a row whose checks column names no kit check, no test and
// no reason why none can hold it. It also fails on a row cut short, an ID
// used twice, and a section whose heading counts other than its rows.
func TestContractMapRulesHaveChecks(t *testing.T) {
	m := mustContractMap(t)
	seen := map[string]bool{}
	counts := make([]int, len(m.sections))
	for i, r := range m.rules {
		counts[r.section]++
		if seen[r.id] {
			t.Errorf("%s: the ID is used twice", r.id)
		}
		seen[r.id] = true
		if strings.HasSuffix(r.sentence, ",") && (i+1 == len(m.rules) || !strings.HasPrefix(m.rules[i+1].sentence, "...")) {
			t.Errorf("%s %q: the sentence is cut short (it ends with a comma)", r.id, r.sentence)
		}
		checks := strings.TrimSpace(r.checks)
		if len(kitChecks(checks)) == 0 && !namedTest.MatchString(checks) && !notTheKits.MatchString(checks) {
			t.Errorf("%s %q: no check holds it (checks column %q names no kit check, no test, no reason)", r.id, r.sentence, checks)
		}
		if strings.HasPrefix(r.id, "D") && r.home == "" {
			t.Errorf("%s: no home line (\"Declaration:\") above it says where package driver states it", r.id)
		}
	}
	for i, s := range m.sections {
		if counts[i] != s.count {
			t.Errorf("section %q says %d sentences and has %d rows", s.heading, s.count, counts[i])
		}
	}
}

// TestContractMapHomesExist fails when a home of the contract map names
// nothing: a D row's home line a declaration package driver lacks, an S
// row's "= home" a D row, a declaration (of package driver, store, config
// or tck) or a page section that does not exist, or an S row has none.
// It also fails when a method of one of package driver's interfaces (the
// SPI: every rule a driver keeps lives on one), or its interface, is the
// home of no row: a sentence written on the SPI that the map, and so the
// kit's failure messages, do not know.
func TestContractMapHomesExist(t *testing.T) {
	m := mustContractMap(t)
	driverDecls, methods := declarations(t, filepath.Join("..", "driver"))
	driverDecls["package driver"] = true
	other := map[string]map[string]bool{}
	for pkg, dir := range map[string]string{"store": "..", "config": filepath.Join("..", "config"), "tck": "."} {
		other[pkg], _ = declarations(t, dir)
	}
	homes := map[string]bool{}
	for _, r := range m.rules {
		if strings.HasPrefix(r.id, "D") {
			homes[r.home] = true
			if !driverDecls[r.home] {
				t.Errorf("%s: its home %s is not declared in package driver", r.id, r.home)
			}
			continue
		}
		if !homeExists(m, r.home, driverDecls, other) {
			t.Errorf("%s: its home %q (after \" = \") is no D row, no declaration, no page section", r.id, r.home)
		}
	}
	for _, name := range methods {
		// The rules of a one-method interface may be its type's.
		if !homes[name] && !homes[name[:strings.Index(name, ".")]] {
			t.Errorf("driver.%s is the home of no row of the contract map: its rules have no ID and no check", name)
		}
	}
}

// homeExists reports whether an S row's home names something that is.
func homeExists(m contractMap, home string, driverDecls map[string]bool, other map[string]map[string]bool) bool {
	if d, ok := m.rule(home); ok {
		return strings.HasPrefix(d.id, "D")
	}
	switch home {
	case "":
		return false
	case "go.mod", "the repository", "package store":
		return true
	}
	if page, section, ok := strings.Cut(home, ", "); ok && strings.HasPrefix(page, "docs/") {
		text, err := os.ReadFile(filepath.Join("..", page))
		return err == nil && regexp.MustCompile(`(?m)^#+ `+regexp.QuoteMeta(section)+`$`).Match(text)
	}
	if pkg, name, ok := strings.Cut(home, "."); ok && other[pkg] != nil {
		return other[pkg][name]
	}
	return driverDecls[home]
}

// declarations returns what the Go files of dir declare (types, funcs,
// values, "Type.Method" of methods and of interface methods) and the
// methods of its exported interfaces.
func declarations(t *testing.T, dir string) (map[string]bool, []string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	declared := map[string]bool{}
	var methods []string
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					declared[d.Name.Name] = true
					continue
				}
				recv := d.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				if id, ok := recv.(*ast.Ident); ok {
					declared[id.Name+"."+d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						for _, n := range s.Names {
							declared[n.Name] = true
						}
					case *ast.TypeSpec:
						declared[s.Name.Name] = true
						iface, ok := s.Type.(*ast.InterfaceType)
						if !ok || !s.Name.IsExported() {
							continue
						}
						for _, f := range iface.Methods.List {
							for _, n := range f.Names {
								declared[s.Name.Name+"."+n.Name] = true
								methods = append(methods, s.Name.Name+"."+n.Name)
							}
						}
					}
				}
			}
		}
	}
	return declared, methods
}

// TestRulesCited checks what Run logs beside a failing check: each rule
// the map gives the check, with its ID and its home.
func TestRulesCited(t *testing.T) {
	got := rulesCited("Slots/RenewClockBack")
	for _, want := range []string{"D69", "driver.SlotLeaseStore.Renew", "S4.12", "driver.SlotLeaseStore.Renew, as D68"} {
		if !strings.Contains(got, want) {
			t.Errorf("rulesCited(Slots/RenewClockBack) = %q, want it to name %s", got, want)
		}
	}
	if got := rulesCited("Slots/NoSuchCheck"); !strings.Contains(got, "no rule") {
		t.Errorf("rulesCited of an unknown check = %q, want it to say it holds no rule", got)
	}
}
