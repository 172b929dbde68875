package postgres

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/pgtest"
)

// holderEnv makes the test binary a lock holder of TestLockHolderKilled:
// "connString|schema".
const holderEnv = "COSID_PG_LOCK_HOLDER"

// TestLockHolderKilled: a process holding a lock is SIGKILLed; another
// store gets the lock once the dead holder's session has expired (within
// the lock timeout of its last confirmation), with a higher fence.
func TestLockHolderKilled(t *testing.T) {
	if v := os.Getenv(holderEnv); v != "" {
		fmt.Println("FENCE", childLock(v, "child").Fence())
		select {} // until killed
	}
	srv := pgtest.Shared(t)
	schema := freshSchema("killed")
	cmd, out := startChild(t, holderEnv, srv, schema)
	line, err := out.ReadString('\n')
	fence, perr := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(line, "FENCE ")), 10, 64)
	if err != nil || perr != nil {
		t.Fatalf("the holder process said %q (%v)", line, err)
	}
	s := openAt(t, srv.ConnString(), schema, map[string]string{"lockTimeout": "2s"})
	if _, err := s.Lock(t.Context(), "x", "parent", false); err == nil {
		t.Fatal("TryLock got the lock while the holder process lives")
	}
	killed := time.Now()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	l, err := s.Lock(ctx, "x", "parent", true)
	if err != nil {
		t.Fatalf("Lock after the holder process was killed: %v", err)
	}
	t.Logf("granted %v after the holder process was killed (lock timeout 2s)", time.Since(killed))
	if l.Fence() <= fence {
		t.Errorf("fence %d after the killed holder's %d", l.Fence(), fence)
	}
	if err := l.Unlock(t.Context()); err != nil {
		t.Error(err)
	}
}
