package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

func init() {
	register(&command{name: "version", run: runVersion, usage: `Usage: storectl version

Prints the version of storectl and of every module of the store it was built
with (the store, each driver module), and the Go release that built it. A
version is "(devel)" in a build from a checkout, and a module replaced by a
local directory says so: quote all of it in a bug report.
`})
}

func runVersion(_ context.Context, e *env, args []string) error {
	fs := newFlagSet("version")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("version takes no arguments, got %q", strings.Join(rest, " "))
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return fmt.Errorf("this binary carries no build information (built without module support)")
	}
	writeVersion(e.stdout, bi)
	return nil
}

// projectPath is the module path every module of the project starts with.
const projectPath = "github.com/cosid-go/store"

// writeVersion prints the tool's own module, then every module of the
// project it was built with, from the binary's build information.
func writeVersion(w io.Writer, bi *debug.BuildInfo) {
	fmt.Fprintf(w, "storectl %s\n", moduleVersion(&bi.Main))
	for _, m := range bi.Deps {
		if m.Path == projectPath || strings.HasPrefix(m.Path, projectPath+"/") {
			fmt.Fprintf(w, "  %s %s\n", m.Path, moduleVersion(m))
		}
	}
	fmt.Fprintf(w, "built with %s\n", bi.GoVersion)
}

func moduleVersion(m *debug.Module) string {
	v := m.Version
	if v == "" {
		v = "(devel)"
	}
	if r := m.Replace; r != nil {
		if r.Version != "" {
			return fmt.Sprintf("%s => %s %s", v, r.Path, r.Version)
		}
		return fmt.Sprintf("%s => %s", v, r.Path)
	}
	return v
}
