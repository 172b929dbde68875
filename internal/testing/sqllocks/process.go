package sqllocks

// Lock holders in processes of their own: the test binary run again as a
// child, with childEnv set to "kind|addr|namespace".

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/childproc"
)

// childEnv makes the test binary the holder process of a scenario.
const childEnv = "COSID_SQLLOCKS_HOLDER"

// holderKilled: a process holding a lock is SIGKILLed; another store gets
// the lock once the dead holder's session has stood still for the lock
// timeout, with a higher fence; TryLock is refused before.
func holderKilled(t *testing.T, d Dialect) {
	srv := d.Shared(t)
	ns := d.Namespace(t, srv)
	cmd, out := startChild(t, "killed", srv, ns)
	line, err := out.ReadString('\n')
	fence, perr := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(line, "FENCE ")), 10, 64)
	if err != nil || perr != nil {
		t.Fatalf("the holder process said %q (%v)", line, err)
	}
	s := d.Open(t, srv.Addr(), ns, map[string]string{"lockTimeout": "2s"})
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

// holderPaused: a process holding a lock checks Lost in a tight loop,
// noting the time before each check that finds it open. It is stopped
// (SIGSTOP) past its lock timeout; another store takes the session over
// and is granted; then the process resumes. No check after the resume may
// find Lost still open: the timer that closes it runs in no set order
// with the holder's own code, so Lost must look at the deadline itself.
func holderPaused(t *testing.T, d Dialect) {
	srv := d.Shared(t)
	ns := d.Namespace(t, srv)
	cmd, r := startChild(t, "paused", srv, ns)
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HELD ") {
		t.Fatalf("the holder process said %q (%v)", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	s := d.Open(t, srv.Addr(), ns, map[string]string{"lockTimeout": "2s"})
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

// runChild is the holder process: v is childEnv's "kind|addr|namespace".
func runChild(t *testing.T, d Dialect, v string) {
	kind, rest := cut(v)
	addr, ns := cut(rest)
	switch kind {
	case "killed":
		fmt.Println("FENCE", childLock(t, d, addr, ns, "child").Fence())
		select {} // until killed
	case "paused":
		pausedHolder(childLock(t, d, addr, ns, "paused"))
	default:
		t.Fatalf("%s=%q: no such holder", childEnv, v)
	}
}

// pausedHolder checks l's Lost without pause until it closes, then prints
// the wall time (shared with the parent, same host) taken before the last
// check that found it open.
func pausedHolder(l driver.Lock) {
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

// startChild runs this test binary again as the holder process of kind
// for the running test, on namespace ns of srv.
func startChild(t *testing.T, kind string, srv Server, ns string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	return childproc.Start(t, childEnv, kind+"|"+srv.Addr()+"|"+ns)
}

// childLock is the holder process's Lock of "x" as owner, on namespace ns
// of the server at addr, with a 2s lock timeout. It prints the error and
// exits 2 when it cannot.
func childLock(t *testing.T, d Dialect, addr, ns, owner string) driver.Lock {
	s := d.Open(t, addr, ns, map[string]string{"lockTimeout": "2s"})
	l, err := s.Lock(context.Background(), "x", owner, true)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	return l
}
