package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"sort"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// rootPath is the store's module path; every released module is under it.
const rootPath = "github.com/cosid-go/store"

// notReleased are module directories that are part of the repository's
// tooling, not of the release: the tools, and the status page's browser
// test (tests only, a module so that chromedp stays out of the store's).
var notReleased = map[string]bool{"tools": true, "storehttp/browser": true}

// mod is one released module: its directory relative to the repository
// root ("" for the store itself) and its path.
type mod struct {
	dir, path string
}

// tagName is the module's tag for version v: a nested module's tag is
// prefixed by its directory, as the go command expects.
func (m mod) tagName(v string) string {
	if m.dir == "" {
		return v
	}
	return m.dir + "/" + v
}

func inRepo(p string) bool { return p == rootPath || strings.HasPrefix(p, rootPath+"/") }

// modules lists the released modules of the tree at rev, each after every
// module it requires.
func modules(root, rev string) ([]mod, error) {
	out, err := git(root, "ls-tree", "-r", "--name-only", rev)
	if err != nil {
		return nil, err
	}
	byPath := map[string]mod{}
	requires := map[string][]string{}
	for _, name := range strings.Split(strings.TrimSpace(out), "\n") {
		if name != "go.mod" && !strings.HasSuffix(name, "/go.mod") {
			continue
		}
		dir := path.Dir(name)
		if dir == "." {
			dir = ""
		}
		if notReleased[dir] || strings.Contains("/"+dir+"/", "/testdata/") {
			continue
		}
		data, err := git(root, "show", rev+":"+name)
		if err != nil {
			return nil, err
		}
		f, err := modfile.ParseLax(name, []byte(data), nil)
		if err != nil {
			return nil, err
		}
		want := rootPath
		if dir != "" {
			want += "/" + dir
		}
		if f.Module == nil || f.Module.Mod.Path != want {
			return nil, fmt.Errorf("%s: module path must be %s (a module's path follows its directory)", name, want)
		}
		byPath[want] = mod{dir: dir, path: want}
		for _, r := range f.Require {
			if inRepo(r.Mod.Path) {
				requires[want] = append(requires[want], r.Mod.Path)
			}
		}
	}
	// Order: each module after what it requires (depth-first).
	var order []mod
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(p string) error
	visit = func(p string) error {
		switch state[p] {
		case 1:
			return fmt.Errorf("modules require each other in a cycle through %s", p)
		case 2:
			return nil
		}
		m, ok := byPath[p]
		if !ok {
			return fmt.Errorf("a module requires %s, which is not in the repository", p)
		}
		state[p] = 1
		for _, r := range requires[p] {
			if err := visit(r); err != nil {
				return err
			}
		}
		state[p] = 2
		order = append(order, m)
		return nil
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := visit(p); err != nil {
			return nil, err
		}
	}
	if len(order) == 0 || order[0].path != rootPath {
		return nil, fmt.Errorf("no module %s at the repository root", rootPath)
	}
	return order, nil
}

// checkVersion accepts a release version the go command can serve for
// modules whose paths carry no major-version suffix.
func checkVersion(v string) error {
	if !semver.IsValid(v) || semver.Canonical(v) != v || semver.Build(v) != "" {
		return fmt.Errorf("version %q is not of the form vMAJOR.MINOR.PATCH[-PRERELEASE]", v)
	}
	if m := semver.Major(v); m != "v0" && m != "v1" {
		return fmt.Errorf("version %s: major version %s needs module paths ending in /%s; only v0 and v1 are released from these paths", v, m, m)
	}
	return nil
}

func repoRoot() (string, error) {
	out, err := git(".", "rev-parse", "--show-toplevel")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(out), nil
}

func git(dir string, args ...string) (string, error) {
	return command(dir, nil, "git", args...)
}

// command runs name in dir with env added to the process's environment.
func command(dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s (in %s): %v\n%s%s", name, strings.Join(args, " "), dir, err, out.String(), errb.String())
	}
	return out.String(), nil
}
