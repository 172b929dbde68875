package main

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
)

func TestWriteVersion(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: projectPath + "/cmd/storectl", Version: "v0.1.0"},
		Deps: []*debug.Module{
			{Path: projectPath, Version: "v0.1.0"},
			{Path: "go.etcd.io/etcd/client/v3", Version: "v3.7.3"},
			{Path: projectPath + "/drivers/etcd", Version: "v0.0.0", Replace: &debug.Module{Path: "../../drivers/etcd"}},
			{Path: projectPath + "x/other", Version: "v9.9.9"},
		},
	}
	var b bytes.Buffer
	writeVersion(&b, bi)
	want := "storectl v0.1.0\n" +
		"  github.com/cosid-go/store v0.1.0\n" +
		"  github.com/cosid-go/store/drivers/etcd v0.0.0 => ../../drivers/etcd\n" +
		"built with go1.26.0\n"
	if b.String() != want {
		t.Errorf("version printed\n%s\nwant\n%s", b.String(), want)
	}
}

// TestBinaryVersion: the built tool names itself, the store module and the
// etcd driver's module (each a module of its own).
func TestBinaryVersion(t *testing.T) {
	r := exe(t, "version")
	if r.code != exitOK {
		t.Fatalf("storectl version: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"storectl ", "\n  github.com/cosid-go/store ", "\n  github.com/cosid-go/store/drivers/etcd ", "\nbuilt with go"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("storectl version printed no %q:\n%s", want, r.stdout)
		}
	}
	exe(t, "version", "extra").want(t, exitUsage, "version takes no arguments")
}
