package postgres

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/pgtest"
)

// pausedEnv makes the test binary the holder of TestLockHolderPaused:
// "connString|schema".
const pausedEnv = "COSID_PG_PAUSED_HOLDER"

// TestLockHolderPaused: a process holding a lock checks Lost in a tight
// loop, noting the time before each check that finds it open. It is
// stopped (SIGSTOP) past its lock timeout; another store takes the session
// over and is granted; then the process resumes. No check after the
// resume may find Lost still open: the timer that closes it runs in no set
// order with the holder's own code, so Lost must look at the deadline
// itself.
func TestLockHolderPaused(t *testing.T) {
	if v := os.Getenv(pausedEnv); v != "" {
		pausedHolder(v)
		return
	}
	srv := pgtest.Shared(t)
	schema := freshSchema("paused")
	cmd, r := startChild(t, pausedEnv, srv, schema)
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HELD ") {
		t.Fatalf("the holder process said %q (%v)", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	s := openAt(t, srv.ConnString(), schema, map[string]string{"lockTimeout": "2s"})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	l, err := s.Lock(ctx, "x", "other", true)
	if err != nil {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		t.Fatalf("Lock while the holder is stopped: %v", err)
	}
	granted := time.Now().UnixNano()
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	line, err = r.ReadString('\n')
	alive, perr := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(line, "ALIVE ")), 10, 64)
	if err != nil || perr != nil {
		t.Fatalf("the resumed holder process said %q (%v)", line, err)
	}
	if alive > granted {
		t.Errorf("the resumed holder found Lost open %v after another store was granted the lock", time.Duration(alive-granted))
	}
	if err := l.Unlock(t.Context()); err != nil {
		t.Error(err)
	}
}

// pausedHolder locks "x" and checks Lost without pause until it closes,
// then prints the wall time (shared with the parent, same host) taken
// before the last check that found it open.
func pausedHolder(v string) {
	l := childLock(v, "paused")
	// Every P busy checking, as a loaded program would be: the timer then
	// runs only once the runtime preempts one of them.
	const checkers = 8
	runtime.GOMAXPROCS(checkers)
	var alive, running atomic.Int64
	var done sync.WaitGroup
	for range checkers {
		done.Add(1)
		go func() {
			defer done.Done()
			running.Add(1)
			for {
				now := time.Now().UnixNano()
				select {
				case <-l.Lost():
					return
				default:
					for a := alive.Load(); now > a && !alive.CompareAndSwap(a, now); a = alive.Load() {
					}
				}
			}
		}()
	}
	for running.Load() < checkers {
		runtime.Gosched()
	}
	fmt.Println("HELD", l.Fence()) // the parent stops this process now
	done.Wait()                    // each has seen Lost closed
	fmt.Println("ALIVE", alive.Load())
	os.Exit(0)
}
