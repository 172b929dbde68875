package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// No released version has MySQL tables of another schema version than
// the current one (the driver came with version 3), so the rollback of
// MySQL across a schema change goes back from a next version: this code
// with SchemaVersion one higher, built with a go build overlay of
// internal/sqlstore/sqlstore.go. Its upgrade of the tables sets the new
// version, which the current code then refuses, as a real next version's
// would be refused.
var nextVersion struct {
	once     sync.Once
	dir      string // removed by removeBinary
	instance string
	err      error
}

// nextSchema is the error the current version's instances get on tables
// the next version upgraded.
const nextSchema = "the tables have schema version 4, newer than this driver's 3: upgrade the driver"

// nextBuild builds nextVersion's instance program (previousInstance's
// source, MySQL added) on first use.
func nextBuild(t *testing.T) (instance string) {
	t.Helper()
	nextVersion.once.Do(func() { nextVersion.instance, nextVersion.err = buildNext() })
	if nextVersion.err != nil {
		t.Fatal(nextVersion.err)
	}
	return nextVersion.instance
}

func buildNext() (instance string, err error) {
	dir, err := os.MkdirTemp("", "storectl-next-")
	if err != nil {
		return "", err
	}
	nextVersion.dir = dir
	src, err := filepath.Abs("../../internal/sqlstore/sqlstore.go")
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	const current = "const SchemaVersion = 3\n"
	if strings.Count(string(b), current) != 1 {
		return "", &previousError{"the next version: internal/sqlstore/sqlstore.go has no " + strings.TrimSpace(current) + " (the schema changed: update nextSchema and this test)", os.ErrNotExist, nil}
	}
	patched := filepath.Join(dir, "sqlstore.go")
	if err := os.WriteFile(patched, []byte(strings.Replace(string(b), current, "const SchemaVersion = 4\n", 1)), 0o644); err != nil {
		return "", err
	}
	main, err := filepath.Abs("nextinstance/main.go") // exists only in the overlay
	if err != nil {
		return "", err
	}
	mainSrc := filepath.Join(dir, "main.go")
	prog := strings.Replace(previousInstance, `_ "github.com/cosid-go/store/drivers/postgres"`,
		`_ "github.com/cosid-go/store/drivers/mysql"
	_ "github.com/cosid-go/store/drivers/postgres"`, 1)
	if err := os.WriteFile(mainSrc, []byte(prog), 0o644); err != nil {
		return "", err
	}
	overlay, err := json.Marshal(map[string]map[string]string{"Replace": {src: patched, main: mainSrc}})
	if err != nil {
		return "", err
	}
	overlayFile := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayFile, overlay, 0o644); err != nil {
		return "", err
	}
	instance = filepath.Join(dir, "instance")
	build := exec.Command("go", "build", "-overlay", overlayFile, "-o", instance, "./nextinstance")
	if out, err := build.CombinedOutput(); err != nil {
		return "", &previousError{"go build of the next version's instance", err, out}
	}
	return instance, nil
}
