package main

import (
	"slices"
	"strings"
	"testing"
)

func TestCheckVersion(t *testing.T) {
	for _, v := range []string{"v0.1.0", "v1.2.3", "v0.2.0-rc.1"} {
		if err := checkVersion(v); err != nil {
			t.Errorf("checkVersion(%q): %v", v, err)
		}
	}
	for _, v := range []string{"0.1.0", "v0.1", "v2.0.0", "v0.1.0+meta", "v01.0.0", ""} {
		if err := checkVersion(v); err == nil {
			t.Errorf("checkVersion(%q) accepted it", v)
		}
	}
}

// The go command orders go.sum by module path, then semantic version, the
// module's hash before its go.mod's: "go mod tidy -diff" would report
// anything else.
func TestMergeSumsOrder(t *testing.T) {
	old := "a.example/m v1.10.0 h1:c=\na.example/m v1.10.0/go.mod h1:d=\n"
	got := string(mergeSums([]byte(old), []string{
		"a.example/m v1.9.0/go.mod h1:b=",
		"a.example/m v1.9.0 h1:a=",
		"a.example/m v1.10.0 h1:c=",
	}))
	want := "a.example/m v1.9.0 h1:a=\na.example/m v1.9.0/go.mod h1:b=\na.example/m v1.10.0 h1:c=\na.example/m v1.10.0/go.mod h1:d=\n"
	if got != want {
		t.Errorf("merged go.sum\n%s\nwant\n%s", got, want)
	}
}

func TestTagName(t *testing.T) {
	got := []string{mod{dir: ""}.tagName("v0.1.0"), mod{dir: "drivers/etcd"}.tagName("v0.1.0")}
	if !slices.Equal(got, []string{"v0.1.0", "drivers/etcd/v0.1.0"}) {
		t.Errorf("tags %q", got)
	}
}

func TestAPIBreaks(t *testing.T) {
	released := []string{
		"pkg p, func F(int) error",
		"pkg p, type I interface",
		"pkg p, type I interface, M()",
		"pkg p, type S struct",
		"pkg p, type S struct, A int",
	}
	current := []string{
		"pkg p, func F(int, ...string) error", // changed
		"pkg p, func G()",                     // added: fine
		"pkg p, type I interface",
		"pkg p, type I interface, M()",
		"pkg p, type I interface, N()", // added to an interface
		"pkg p, type S struct",
		"pkg p, type S struct, A int",
		"pkg p, type S struct, B int", // added field: fine
	}
	got := apiBreaks(released, current, nil)
	want := []string{"removed or changed: pkg p, func F(int) error", "added to an interface: pkg p, type I interface, N()"}
	if !slices.Equal(got, want) {
		t.Errorf("breaks %q, want %q", got, want)
	}
	if got := apiBreaks(released, current, []string{"pkg p, func F(int) error", "pkg p, type I interface, N()"}); len(got) != 0 {
		t.Errorf("accepted breaks still reported: %q", got)
	}
}

// TestAPILines lists this repository's API: functions with their
// signatures, struct fields, interface methods one line each, methods,
// and nothing from internal packages, examples or commands.
func TestAPILines(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	mods, err := modules(root, "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	lines, err := apiLines(root, mods)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, l := range lines {
		have[l] = true
		for _, bad := range []string{"/internal/", "/examples/", "/cmd/"} {
			if strings.Contains(l, "pkg "+rootPath+bad) || strings.HasPrefix(l, "pkg "+rootPath+bad) {
				t.Errorf("API lists a package that promises nothing: %s", l)
			}
		}
	}
	for _, want := range []string{
		"pkg github.com/cosid-go/store, func Open(string, map[string]string, ...Option) (*Store, error)",
		"pkg github.com/cosid-go/store, method (*Store) Close() error",
		"pkg github.com/cosid-go/store/driver, type RangeStore interface",
		"pkg github.com/cosid-go/store/driver, type RangeStore interface, Next(context.Context, string, int64) (int64, error)",
	} {
		if !have[want] {
			t.Errorf("API lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("API lines (%d):\n%s", len(lines), strings.Join(lines[:min(len(lines), 40)], "\n"))
	}
}
