// Command release tags every module of the repository at one version, and
// builds a module proxy from those tags for testing the release as a user
// meets it.
//
//	go run ./release tag VERSION          (from tools/; make release VERSION=v0.1.0)
//	go run ./release proxy VERSION DIR    a file-based GOPROXY of the tagged modules
//	go run ./release api-check            the API against the last release's (make check)
//
// In the repository, a nested module (drivers/etcd, cmd/storectl, ...)
// requires the store's modules at their last version and replaces them by
// their directories, so that development always builds what is checked out.
// A user never sees those replace lines (Go reads them only in the main
// module), but `go install MODULE@VERSION` refuses a module that has them.
// So tag makes one release commit in which every nested module requires the
// new version of the others, without replace lines, with the go.sum lines
// of the new versions computed from the module zips; it checks each module
// builds and is tidy against a proxy of exactly those zips; it tags every
// module at that commit (v0.1.0, drivers/etcd/v0.1.0, ...) and then adds a
// second commit that puts the replace lines back.
package main

import (
	"fmt"
	"os"
)

const usage = `usage:
  release tag VERSION          tag every module at VERSION (vMAJOR.MINOR.PATCH, major 0 or 1)
  release proxy VERSION DIR    write a file-based module proxy of the modules tagged VERSION
  release api-check            fail when the API breaks the last release's (api/VERSION.txt)
`

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "release: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	switch {
	case len(args) == 2 && args[0] == "tag":
		root, err := repoRoot()
		if err != nil {
			return err
		}
		return tagRelease(root, args[1])
	case len(args) == 1 && args[0] == "api-check":
		root, err := repoRoot()
		if err != nil {
			return err
		}
		return checkAPI(root)
	case len(args) == 3 && args[0] == "proxy":
		root, err := repoRoot()
		if err != nil {
			return err
		}
		return writeProxy(root, args[1], args[2])
	}
	fmt.Fprint(os.Stderr, usage)
	return fmt.Errorf("bad arguments %q", args)
}
