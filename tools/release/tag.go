package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// tagRelease makes the release commit and the back-to-development commit
// in a scratch clone, tags every module at the release commit, and
// fast-forwards the current branch. Nothing in the checkout changes unless
// every module of the release commit builds and is tidy.
func tagRelease(root, version string) error {
	if err := checkVersion(version); err != nil {
		return err
	}
	if out, err := git(root, "status", "--porcelain", "--untracked-files=no"); err != nil {
		return err
	} else if out != "" {
		return fmt.Errorf("the checkout has uncommitted changes: commit or stash them first:\n%s", out)
	}
	mods, err := modules(root, "HEAD")
	if err != nil {
		return err
	}
	for _, m := range mods {
		if _, err := git(root, "rev-parse", "--verify", "--quiet", "refs/tags/"+m.tagName(version)); err == nil {
			return fmt.Errorf("tag %s exists: version %s was released already", m.tagName(version), version)
		}
	}
	if err := checkChangelog(root, version); err != nil {
		return err
	}

	scratch, err := os.MkdirTemp("", "release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	// A clone, not a worktree: zip.CreateFromVCS wants a .git directory.
	head, err := git(root, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	wt := filepath.Join(scratch, "tree")
	if _, err := git(root, "clone", "-q", "--shared", "--no-checkout", root, wt); err != nil {
		return err
	}
	if _, err := git(wt, "checkout", "-q", "--detach", strings.TrimSpace(head)); err != nil {
		return err
	}
	// The commits are the releaser's: the checkout's identity, wherever it is set.
	for _, key := range []string{"user.name", "user.email"} {
		if v, err := git(root, "config", key); err == nil {
			if _, err := git(wt, "config", key, strings.TrimSpace(v)); err != nil {
				return err
			}
		}
	}

	// The release commit: in-repo requirements at version, no replace lines,
	// go.sum lines of the new versions from zips made from the commit as the
	// go command makes them (a nested module without a LICENSE gets the
	// root's), each module zipped after its requirements. Each module's
	// changes are amended into the commit before it is zipped; later
	// amendments touch only other modules' directories.
	if _, err := git(wt, "commit", "-q", "--allow-empty", "-m", releaseMessage(version, mods)); err != nil {
		return err
	}
	// The release's API, for make check to compare later versions with.
	if err := writeAPI(wt, version, mods); err != nil {
		return err
	}
	if _, err := git(wt, "add", "api"); err != nil {
		return err
	}
	proxy := filepath.Join(scratch, "proxy")
	sums := map[string][]string{}
	saved := map[string][2][]byte{} // go.mod, go.sum before the release
	for _, m := range mods {
		dir := filepath.Join(wt, filepath.FromSlash(m.dir))
		gomod, gosum, err := readModFiles(dir)
		if err != nil {
			return err
		}
		saved[m.dir] = [2][]byte{gomod, gosum}
		f, err := modfile.Parse(inDir(m.dir, "go.mod"), gomod, nil)
		if err != nil {
			return err
		}
		var lines []string
		for _, r := range f.Require {
			if inRepo(r.Mod.Path) {
				if err := f.AddRequire(r.Mod.Path, version); err != nil {
					return err
				}
				lines = append(lines, sums[r.Mod.Path]...)
			}
		}
		for _, r := range f.Replace {
			if inRepo(r.Old.Path) {
				if err := f.DropReplace(r.Old.Path, r.Old.Version); err != nil {
					return err
				}
			}
		}
		f.Cleanup()
		newMod, err := f.Format()
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), newMod, 0o644); err != nil {
			return err
		}
		if len(lines) > 0 {
			if err := os.WriteFile(filepath.Join(dir, "go.sum"), mergeSums(gosum, lines), 0o644); err != nil {
				return err
			}
		}
		if _, err := git(wt, "commit", "-q", "-a", "--amend", "--no-edit", "--allow-empty"); err != nil {
			return err
		}
		mv := module.Version{Path: m.path, Version: version}
		sums[m.path], err = proxyModule(proxy, m.path, version, newMod, time.Now(), func(w io.Writer) error {
			return zip.CreateFromVCS(w, mv, wt, "HEAD", m.dir)
		})
		if err != nil {
			return err
		}
	}
	if err := verifyRelease(wt, proxy, mods); err != nil {
		return err
	}
	release, err := git(wt, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	release = strings.TrimSpace(release)

	// Back to development: the replace lines and go.sum as they were, the
	// requirements at the version just released.
	for _, m := range mods[1:] {
		dir := filepath.Join(wt, filepath.FromSlash(m.dir))
		f, err := modfile.Parse(inDir(m.dir, "go.mod"), saved[m.dir][0], nil)
		if err != nil {
			return err
		}
		for _, r := range f.Require {
			if inRepo(r.Mod.Path) {
				if err := f.AddRequire(r.Mod.Path, version); err != nil {
					return err
				}
			}
		}
		devMod, err := f.Format()
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), devMod, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "go.sum"), saved[m.dir][1], 0o644); err != nil {
			return err
		}
	}
	if _, err := git(wt, "commit", "-q", "-a", "--allow-empty", "-m", "Back to development after "+version+"\n\n"+
		"The nested modules replace the store's modules by their directories\n"+
		"again, so the repository builds what is checked out; they require\n"+
		version+", which users get."); err != nil {
		return err
	}
	dev, err := git(wt, "rev-parse", "HEAD")
	if err != nil {
		return err
	}

	// Bring both commits into the checkout's repository.
	if _, err := git(root, "fetch", "-q", wt, "HEAD"); err != nil {
		return err
	}
	for _, m := range mods {
		if _, err := git(root, "tag", "-a", "-m", m.path+" "+version, m.tagName(version), release); err != nil {
			return err
		}
	}
	if _, err := git(root, "merge", "-q", "--ff-only", strings.TrimSpace(dev)); err != nil {
		return err
	}
	fmt.Printf("released %s at %s:\n", version, release[:12])
	var tags []string
	for _, m := range mods {
		tags = append(tags, m.tagName(version))
		fmt.Printf("  %s %s\n", m.path, m.tagName(version))
	}
	fmt.Printf("publish with: git push origin HEAD %s\n", strings.Join(tags, " "))
	return nil
}

// verifyRelease loads every package of each nested module of the release
// tree, tests included (which needs every go.sum line a build needs, without
// compiling), as a user's go command sees it: no workspace, go.mod and
// go.sum read-only, the store's modules from the release's own zips and
// everything else from the local module cache first, in a module cache of
// its own.
func verifyRelease(wt, proxy string, mods []mod) error {
	cache, err := command(wt, nil, "go", "env", "GOMODCACHE")
	if err != nil {
		return err
	}
	goproxy, err := command(wt, nil, "go", "env", "GOPROXY")
	if err != nil {
		return err
	}
	modcache := filepath.Join(filepath.Dir(proxy), "modcache")
	defer command(wt, []string{"GOMODCACHE=" + modcache}, "go", "clean", "-modcache")
	env := []string{
		"GOWORK=off",
		"GOFLAGS=-mod=readonly -modcacherw",
		"GOPROXY=file://" + proxy + ",file://" + filepath.Join(strings.TrimSpace(cache), "cache", "download") + "," + strings.TrimSpace(goproxy),
		"GONOSUMDB=" + rootPath,
		"GOSUMDB=off",
		"GOMODCACHE=" + modcache,
	}
	for _, m := range mods[1:] {
		dir := filepath.Join(wt, filepath.FromSlash(m.dir))
		for _, args := range [][]string{{"list", "-deps", "-test", "./..."}} {
			if _, err := command(dir, env, "go", args...); err != nil {
				return fmt.Errorf("module %s at the release commit: %w", m.path, err)
			}
		}
	}
	return nil
}

func readModFiles(dir string) (gomod, gosum []byte, err error) {
	if gomod, err = os.ReadFile(filepath.Join(dir, "go.mod")); err != nil {
		return nil, nil, err
	}
	gosum, err = os.ReadFile(filepath.Join(dir, "go.sum"))
	if os.IsNotExist(err) {
		err = nil
	}
	return gomod, gosum, err
}

// mergeSums adds lines to a go.sum, keeping it sorted as the go command does.
func mergeSums(old []byte, add []string) []byte {
	seen := map[string]bool{}
	var all []string
	for _, l := range append(strings.Split(string(old), "\n"), add...) {
		if l != "" && !seen[l] {
			seen[l] = true
			all = append(all, l)
		}
	}
	sortSums(all)
	return []byte(strings.Join(all, "\n") + "\n")
}

func releaseMessage(version string, mods []mod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Release %s\n\nEvery module at %s, each requiring the others at it, without\nthe replace lines of development (go install refuses those):\n\n", version, version)
	for _, m := range mods {
		fmt.Fprintf(&b, "  %s\n", m.tagName(version))
	}
	return b.String()
}

// checkChangelog wants a CHANGELOG.md entry for the version, with its date
// (Keep a Changelog: "## [0.1.0] - 2026-12-03").
func checkChangelog(root, version string) error {
	data, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		return fmt.Errorf("CHANGELOG.md: %w", err)
	}
	re := regexp.MustCompile(`(?m)^## \[` + regexp.QuoteMeta(strings.TrimPrefix(version, "v")) + `\] - \d{4}-\d{2}-\d{2}$`)
	if !re.Match(data) {
		return fmt.Errorf("CHANGELOG.md has no entry \"## [%s] - YYYY-MM-DD\": rename the Unreleased section to it first", strings.TrimPrefix(version, "v"))
	}
	return nil
}

// sortSums orders go.sum lines as the go command writes them.
func sortSums(lines []string) {
	byMod := map[module.Version]string{}
	var ms []module.Version
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		m := module.Version{Path: f[0], Version: f[1]}
		byMod[m] = l
		ms = append(ms, m)
	}
	module.Sort(ms)
	for i, m := range ms {
		lines[i] = byMod[m]
	}
}
