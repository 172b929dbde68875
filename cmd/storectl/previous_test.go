package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// previousSchema is the last commit whose SQL tables are schema version 2,
// the version before the current one: the upgrade and rollback
// procedures go from it and back to it.
const previousSchema = "c89911b^"

// previous is the storectl binary and an instance program of
// previousSchema (built by versionAt).
func previous(t *testing.T) (storectl, instance string) {
	t.Helper()
	return versionAt(t, previousSchema)
}

// versions are the storectl binaries and instance programs of commits of
// the repository's history, built once per test binary (git archive), as
// an operator keeps the binaries of the version they upgrade from.
var versions struct {
	sync.Mutex
	built map[string]*version
	dirs  []string // removed by removeBinary
}

type version struct {
	once               sync.Once
	storectl, instance string
	err                error
}

// versionAt builds commit's storectl and instance program (previousInstance)
// on first use.
func versionAt(t *testing.T, commit string) (storectl, instance string) {
	t.Helper()
	versions.Lock()
	if versions.built == nil {
		versions.built = map[string]*version{}
	}
	v := versions.built[commit]
	if v == nil {
		v = &version{}
		versions.built[commit] = v
	}
	versions.Unlock()
	v.once.Do(func() { v.storectl, v.instance, v.err = buildVersion(commit) })
	if v.err != nil {
		t.Fatal(v.err)
	}
	return v.storectl, v.instance
}

func buildVersion(commit string) (storectl, instance string, err error) {
	dir, err := os.MkdirTemp("", "storectl-version-")
	if err != nil {
		return "", "", err
	}
	versions.Lock()
	versions.dirs = append(versions.dirs, dir)
	versions.Unlock()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		return "", "", err
	}
	archive := exec.Command("bash", "-c", `cd "$(git rev-parse --show-toplevel)" && git archive --format=tar `+commit+" | tar -x -C "+src)
	if out, err := archive.CombinedOutput(); err != nil {
		return "", "", &previousError{"git archive " + commit + " (the test needs the repository's history)", err, out}
	}
	ctl := filepath.Join(src, "cmd", "storectl")
	if err := os.Mkdir(filepath.Join(ctl, "previnstance"), 0o755); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(ctl, "previnstance", "main.go"), []byte(previousInstance), 0o644); err != nil {
		return "", "", err
	}
	storectl, instance = filepath.Join(dir, "storectl"), filepath.Join(dir, "instance")
	for _, b := range [][2]string{{storectl, "."}, {instance, "./previnstance"}} {
		build := exec.Command("go", "build", "-o", b[0], b[1])
		build.Dir = ctl
		build.Env = append(os.Environ(), "GOWORK=off")
		if out, err := build.CombinedOutput(); err != nil {
			return "", "", &previousError{"go build of " + commit + "'s " + b[1], err, out}
		}
	}
	return storectl, instance, nil
}

type previousError struct {
	what string
	err  error
	out  []byte
}

func (e *previousError) Error() string {
	return e.what + ": " + e.err.Error() + "\n" + strings.TrimSpace(string(e.out))
}

// previousInstance is the instance program (TestRestoreInstance's) built
// against the previous version: the same ops, the same output.
const previousInstance = `package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cosid-go/store"
	_ "github.com/cosid-go/store/drivers/postgres"
	_ "github.com/cosid-go/store/drivers/sqlite"
)

func main() {
	var r struct {
		Driver  string
		Options map[string]string
		Ops     string
	}
	err := json.Unmarshal([]byte(os.Getenv("` + instanceEnv + `")), &r)
	if err == nil {
		err = run(r.Driver, r.Options, r.Ops)
	}
	if err != nil {
		fmt.Printf("error: %v\n", err)
		os.Exit(1)
	}
}

func run(drv string, options map[string]string, ops string) error {
	st, err := store.Open(drv, options)
	if err != nil {
		return err
	}
	defer st.Close()
	ctx := context.Background()
	ns := store.Namespace{Name: "workers", Limit: 2, Tolerance: 20 * time.Millisecond}
	for _, op := range strings.Split(ops, ",") {
		switch f := strings.Split(op, ":"); f[0] {
		case "next":
			var step, n int64
			fmt.Sscan(f[2], &step)
			fmt.Sscan(f[3], &n)
			for range n {
				r, err := st.Ranges().Next(ctx, f[1], step)
				if err != nil {
					return err
				}
				fmt.Printf("range %s %d %d\n", f[1], r.Start, r.End)
			}
		case "term":
			l, err := st.Slots().Acquire(ctx, ns, "host-"+f[1], store.AcquireOptions{TTL: time.Second})
			if err != nil {
				return err
			}
			fmt.Printf("term %s %d %d %d %d\n", l.Namespace, l.Slot, l.Fence, l.Floor, l.Ceiling)
			if err := st.Slots().Release(ctx, l); err != nil {
				return err
			}
		case "lock":
			k, err := st.Locks().Lock(ctx, f[1])
			if err != nil {
				return err
			}
			fmt.Printf("fence %s %d\n", f[1], k.Fence())
			if err := k.Unlock(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}
`
