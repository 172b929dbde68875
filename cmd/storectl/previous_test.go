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

// previousVersion is the storectl binary and an instance program of
// previousSchema, built once per test binary from the repository's history
// (git archive), as an operator keeps the binaries of the version they
// upgrade from.
var previousVersion struct {
	once               sync.Once
	dir                string // removed by removeBinary
	storectl, instance string
	err                error
}

// previous builds previousVersion's binaries on first use.
func previous(t *testing.T) (storectl, instance string) {
	t.Helper()
	previousVersion.once.Do(func() {
		dir, err := os.MkdirTemp("", "storectl-previous-")
		if err != nil {
			previousVersion.err = err
			return
		}
		previousVersion.dir = dir
		src := filepath.Join(dir, "src")
		if err := os.Mkdir(src, 0o755); err != nil {
			previousVersion.err = err
			return
		}
		archive := exec.Command("bash", "-c", `cd "$(git rev-parse --show-toplevel)" && git archive --format=tar `+previousSchema+" | tar -x -C "+src)
		if out, err := archive.CombinedOutput(); err != nil {
			previousVersion.err = &previousError{"git archive " + previousSchema + " (the test needs the repository's history)", err, out}
			return
		}
		ctl := filepath.Join(src, "cmd", "storectl")
		if err := os.Mkdir(filepath.Join(ctl, "previnstance"), 0o755); err != nil {
			previousVersion.err = err
			return
		}
		if err := os.WriteFile(filepath.Join(ctl, "previnstance", "main.go"), []byte(previousInstance), 0o644); err != nil {
			previousVersion.err = err
			return
		}
		previousVersion.storectl = filepath.Join(dir, "storectl")
		previousVersion.instance = filepath.Join(dir, "instance")
		for _, b := range [][2]string{{previousVersion.storectl, "."}, {previousVersion.instance, "./previnstance"}} {
			build := exec.Command("go", "build", "-o", b[0], b[1])
			build.Dir = ctl
			build.Env = append(os.Environ(), "GOWORK=off")
			if out, err := build.CombinedOutput(); err != nil {
				previousVersion.err = &previousError{"go build of " + previousSchema + "'s " + b[1], err, out}
				return
			}
		}
	})
	if previousVersion.err != nil {
		t.Fatal(previousVersion.err)
	}
	return previousVersion.storectl, previousVersion.instance
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
