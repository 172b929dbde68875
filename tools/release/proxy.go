package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/zip"
)

// writeProxy writes a file-based module proxy (the layout GOPROXY=file://
// reads) of every module tagged version, from the tags themselves.
func writeProxy(root, version, dir string) error {
	if err := checkVersion(version); err != nil {
		return err
	}
	mods, err := modules(root, version)
	if err != nil {
		return fmt.Errorf("modules at tag %s: %w", version, err)
	}
	for _, m := range mods {
		tag := m.tagName(version)
		gomod, err := git(root, "show", tag+":"+inDir(m.dir, "go.mod"))
		if err != nil {
			return fmt.Errorf("module %s has no tag %s: %w", m.path, tag, err)
		}
		unix, err := git(root, "log", "-1", "--format=%ct", tag)
		if err != nil {
			return err
		}
		var sec int64
		fmt.Sscan(strings.TrimSpace(unix), &sec)
		zipWith := func(w io.Writer) error {
			return zip.CreateFromVCS(w, module.Version{Path: m.path, Version: version}, root, tag, m.dir)
		}
		if _, err := proxyModule(dir, m.path, version, []byte(gomod), time.Unix(sec, 0), zipWith); err != nil {
			return err
		}
		fmt.Printf("%s %s\n", m.path, version)
	}
	return nil
}

// proxyModule writes one module version into the proxy at dir and returns
// its go.sum lines.
func proxyModule(dir, modPath, version string, gomod []byte, at time.Time, zipWith func(io.Writer) error) ([]string, error) {
	esc, err := module.EscapePath(modPath)
	if err != nil {
		return nil, err
	}
	vdir := filepath.Join(dir, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return nil, err
	}
	base := filepath.Join(vdir, version)
	zf, err := os.Create(base + ".zip")
	if err != nil {
		return nil, err
	}
	err = zipWith(zf)
	if cerr := zf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("zip of %s %s: %w", modPath, version, err)
	}
	info, _ := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, at.UTC()})
	if err := os.WriteFile(base+".info", info, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(base+".mod", gomod, 0o644); err != nil {
		return nil, err
	}
	if err := appendList(filepath.Join(vdir, "list"), version); err != nil {
		return nil, err
	}
	zipHash, err := dirhash.HashZip(base+".zip", dirhash.Hash1)
	if err != nil {
		return nil, err
	}
	modHash, err := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(gomod)), nil
	})
	if err != nil {
		return nil, err
	}
	return []string{
		fmt.Sprintf("%s %s %s", modPath, version, zipHash),
		fmt.Sprintf("%s %s/go.mod %s", modPath, version, modHash),
	}, nil
}

func appendList(name, version string) error {
	old, err := os.ReadFile(name)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	for _, v := range strings.Fields(string(old)) {
		if v == version {
			return nil
		}
	}
	return os.WriteFile(name, append(old, []byte(version+"\n")...), 0o644)
}

// inDir joins a module directory ("" for the root) and a name, slash-separated.
func inDir(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}
