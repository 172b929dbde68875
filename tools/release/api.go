package main

import (
	"bufio"
	"fmt"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/mod/semver"
	"golang.org/x/tools/go/packages"
)

// The API of a release is kept in the repository as api/VERSION.txt, one
// line per exported declaration (tags need not travel with a branch): a
// line of the last release missing from the current API is a breaking
// change, and so is a method added to an interface, which breaks whoever
// implements it (the driver interfaces are implemented outside the
// repository). A break made on purpose is listed in api/except.txt, with
// its entry in CHANGELOG.md. Packages under internal/ and examples/, and
// commands, promise nothing.

// apiLines lists the exported API of every released module's packages.
func apiLines(root string, mods []mod) ([]string, error) {
	var lines []string
	for _, m := range mods {
		cfg := &packages.Config{
			Mode: packages.NeedName | packages.NeedTypes | packages.NeedModule,
			Dir:  filepath.Join(root, filepath.FromSlash(m.dir)),
			Env:  append(os.Environ(), "GOWORK=off"),
		}
		pkgs, err := packages.Load(cfg, "./...")
		if err != nil {
			return nil, fmt.Errorf("loading %s: %w", m.path, err)
		}
		for _, p := range pkgs {
			if len(p.Errors) > 0 {
				return nil, fmt.Errorf("loading %s: %v", p.PkgPath, p.Errors[0])
			}
			if p.Module == nil || p.Module.Path != m.path || p.Name == "main" || !promised(p.PkgPath) {
				continue
			}
			lines = append(lines, pkgAPI(p.Types)...)
		}
	}
	sort.Strings(lines)
	return lines, nil
}

func promised(pkgPath string) bool {
	rel := strings.TrimPrefix(pkgPath, rootPath)
	return !strings.Contains(rel+"/", "/internal/") && !strings.HasPrefix(rel, "/examples/")
}

func pkgAPI(p *types.Package) []string {
	qual := func(o *types.Package) string {
		if o == p {
			return ""
		}
		return o.Path()
	}
	prefix := "pkg " + p.Path() + ", "
	var out []string
	scope := p.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.Const:
			out = append(out, prefix+"const "+name+" "+types.TypeString(o.Type(), qual))
		case *types.Var:
			out = append(out, prefix+"var "+name+" "+types.TypeString(o.Type(), qual))
		case *types.Func:
			out = append(out, prefix+"func "+name+sigString(o.Type(), qual))
		case *types.TypeName:
			out = append(out, typeAPI(prefix, o, qual)...)
		}
	}
	return out
}

func typeAPI(prefix string, o *types.TypeName, qual types.Qualifier) []string {
	name := o.Name()
	if o.IsAlias() {
		return []string{prefix + "type " + name + " = " + types.TypeString(o.Type(), qual)}
	}
	var out []string
	switch u := o.Type().Underlying().(type) {
	case *types.Struct:
		out = append(out, prefix+"type "+name+" struct")
		for i := range u.NumFields() {
			if f := u.Field(i); f.Exported() {
				out = append(out, prefix+"type "+name+" struct, "+f.Name()+" "+types.TypeString(f.Type(), qual))
			}
		}
	case *types.Interface:
		out = append(out, prefix+"type "+name+" interface")
		for i := range u.NumMethods() {
			m := u.Method(i)
			out = append(out, prefix+"type "+name+" interface, "+m.Name()+sigString(m.Type(), qual))
		}
		return out
	default:
		out = append(out, prefix+"type "+name+" "+types.TypeString(u, qual))
	}
	ms := types.NewMethodSet(types.NewPointer(o.Type()))
	for i := range ms.Len() {
		m := ms.At(i).Obj()
		if !m.Exported() || len(ms.At(i).Index()) > 1 {
			continue // promoted from an embedded field: listed there
		}
		recv := name
		if sig := m.Type().(*types.Signature); sig.Recv() != nil {
			if _, ptr := sig.Recv().Type().(*types.Pointer); ptr {
				recv = "*" + name
			}
		}
		out = append(out, prefix+"method ("+recv+") "+m.Name()+sigString(m.Type(), qual))
	}
	return out
}

// sigString is a function type without its parameter and result names,
// which a caller never depends on.
func sigString(t types.Type, qual types.Qualifier) string {
	sig := t.(*types.Signature)
	unnamed := func(tu *types.Tuple) *types.Tuple {
		vars := make([]*types.Var, tu.Len())
		for i := range vars {
			vars[i] = types.NewParam(0, nil, "", tu.At(i).Type())
		}
		return types.NewTuple(vars...)
	}
	bare := types.NewSignatureType(nil, nil, nil, unnamed(sig.Params()), unnamed(sig.Results()), sig.Variadic())
	return strings.TrimPrefix(types.TypeString(bare, qual), "func")
}

// apiBreaks compares the current API with a release's: its lines now
// missing, and methods added to its interfaces, less the accepted ones.
func apiBreaks(released, current, accepted []string) []string {
	now := map[string]bool{}
	for _, l := range current {
		now[l] = true
	}
	was := map[string]bool{}
	for _, l := range released {
		was[l] = true
	}
	ok := map[string]bool{}
	for _, l := range accepted {
		ok[l] = true
	}
	var breaks []string
	for _, l := range released {
		if !now[l] && !ok[l] {
			breaks = append(breaks, "removed or changed: "+l)
		}
	}
	for _, l := range current {
		head, _, isMethod := strings.Cut(l, " interface, ")
		if isMethod && was[head+" interface"] && !was[l] && !ok[l] {
			breaks = append(breaks, "added to an interface: "+l)
		}
	}
	return breaks
}

// lastAPI is the newest api/VERSION.txt, or "" before the first release.
func lastAPI(root string) (string, error) {
	names, err := filepath.Glob(filepath.Join(root, "api", "v*.txt"))
	if err != nil || len(names) == 0 {
		return "", err
	}
	sort.Slice(names, func(i, j int) bool {
		return semver.Compare(versionOf(names[i]), versionOf(names[j])) < 0
	})
	return names[len(names)-1], nil
}

func versionOf(name string) string { return strings.TrimSuffix(filepath.Base(name), ".txt") }

func readLines(name string) ([]string, error) {
	f, err := os.Open(name)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

// checkAPI fails when the current API breaks the last release's.
func checkAPI(root string) error {
	last, err := lastAPI(root)
	if err != nil {
		return err
	}
	if last == "" {
		fmt.Println("api: no release yet (api/VERSION.txt): nothing to compare")
		return nil
	}
	mods, err := modules(root, "HEAD")
	if err != nil {
		return err
	}
	current, err := apiLines(root, mods)
	if err != nil {
		return err
	}
	released, err := readLines(last)
	if err != nil {
		return err
	}
	accepted, err := readLines(filepath.Join(root, "api", "except.txt"))
	if err != nil {
		return err
	}
	breaks := apiBreaks(released, current, accepted)
	if len(breaks) == 0 {
		fmt.Printf("api: compatible with %s\n", versionOf(last))
		return nil
	}
	return fmt.Errorf("the API breaks %s's:\n  %s\nA break made on purpose: add its lines to api/except.txt and say it in CHANGELOG.md",
		versionOf(last), strings.Join(breaks, "\n  "))
}

// writeAPI writes the release's API file.
func writeAPI(root, version string, mods []mod) error {
	lines, err := apiLines(root, mods)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(root, "api"), 0o755); err != nil {
		return err
	}
	head := fmt.Sprintf("# The exported API of %s, every module (written by make release; make check compares with it).\n", version)
	return os.WriteFile(filepath.Join(root, "api", version+".txt"), []byte(head+strings.Join(lines, "\n")+"\n"), 0o644)
}
