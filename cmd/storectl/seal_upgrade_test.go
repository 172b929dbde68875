package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/poll"
)

// beforeLocksUnsealed is the last commit whose PostgreSQL (and ZooKeeper)
// driver grants a waiter queued before SealLocks once RaiseLockFences
// undid the seal: the version CHANGELOG.md's advice is about ("upgrade
// every instance before a storectl restore or migrate that seals and
// raises locks").
const beforeLocksUnsealed = "871f0f4^"

// TestMigrateLocksBackNeedsUpgrade: an instance holds lock job on store a
// and another waits for it; the locks move to b (migrate --force: the
// holder is live) and a holder on b gets a fence above a's; then they move
// back into a. The migrate back refuses while a's queue holds what was
// queued before a's locks moved out; given --force, the waiter of the
// version before locks_unsealed is granted the lock with a fence below
// the one b handed out before it (the fence went back), while an upgraded
// waiter is refused (ErrSealed). So the advice holds, and the unsafe order
// is refused unless forced.
func TestMigrateLocksBackNeedsUpgrade(t *testing.T) {
	_, oldInstance := versionAt(t, beforeLocksUnsealed)
	srv := pgtest.Shared(t)
	pg := func(db string) storeSpec {
		return storeSpec{driver: "postgres", options: map[string]string{"connString": pgDatabase(t, srv, db), "schema": "cosid", "poolSize": "4"}}
	}
	for _, c := range []struct {
		name, program string
		upgraded      bool
	}{{"OldWaiter", oldInstance, false}, {"UpgradedWaiter", "", true}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a, b := pg("sealold_a"), pg("sealold_b")
			ctx := t.Context()
			stA, stB := a.open(t), b.open(t)
			held, err := stA.Locks().Lock(ctx, "job")
			if err != nil {
				t.Fatal(err)
			}
			wait := startInstance(t, c.program, a, "lock:job")
			poll.Until(t, time.Minute, "the instance queued on lock job", func() bool {
				ws, err := stA.Locks().Waiters(ctx, "job")
				return err == nil && len(ws) == 2
			})
			exe(t, "migrate", "--from", a.spec(), "--to", b.spec()).want(t, exitRefused, "lock job held by")
			exe(t, "migrate", "--force", "--from", a.spec(), "--to", b.spec()).want(t, exitOK, "sealed in source")
			onB, err := stB.Locks().Lock(ctx, "job")
			if err != nil {
				t.Fatal(err)
			}
			fenceB := onB.Fence()
			if err := onB.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			// The unsafe order: the locks move back while a's queue holds
			// what was queued before they moved out.
			exe(t, "migrate", "--from", b.spec(), "--to", a.spec()).want(t, exitRefused,
				"holders and waiters queued before that", "lock job: ", "give --force once every instance is upgraded")
			exe(t, "migrate", "--force", "--from", b.spec(), "--to", a.spec()).want(t, exitOK, "are open again")
			if err := held.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			out := wait()
			var fence int64
			granted, _ := fmt.Sscanf(out, "fence job %d", &fence)
			t.Logf("lock job: fence %d on b, then the waiter queued on a before the seal: %q", fenceB, strings.TrimSpace(out))
			if c.upgraded {
				if granted == 1 || !strings.Contains(out, "sealed") {
					t.Fatalf("the upgraded waiter queued before the seal: %q, want ErrSealed", out)
				}
			} else if granted != 1 || fence >= fenceB {
				// What the advice is about: if this version is fixed after
				// all, the advice (and this case) can go.
				t.Fatalf("the old waiter queued before the seal: %q; want it granted below b's fence %d", out, fenceB)
			}
			// The locks of a work again, above every fence b handed out.
			l, err := stA.Locks().TryLock(ctx, "job")
			if err != nil {
				t.Fatal(err)
			}
			if l.Fence() <= fenceB {
				t.Fatalf("a Lock on a after the locks moved back: fence %d, not above b's %d", l.Fence(), fenceB)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// startInstance starts an instance process (program, or this test binary
// when "") on spec's store and returns a function that waits for it to
// exit and returns what it printed.
func startInstance(t *testing.T, program string, spec storeSpec, ops string) (wait func() string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	run, err := json.Marshal(instanceRun{Driver: spec.driver, Options: spec.options, Ops: ops})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestRestoreInstance$", "-test.count=1")
	if program != "" {
		cmd = exec.CommandContext(ctx, program)
	}
	cmd.Env = append(os.Environ(), instanceEnv+"="+string(run))
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		cmd.Wait()
	}()
	t.Cleanup(func() { cancel(); <-done })
	return func() string {
		<-done
		return out.String()
	}
}
