package main

import (
	"slices"
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
