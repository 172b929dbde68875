package mysql

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
	"github.com/cosid-go/store/internal/testing/mysqltest"
)

// Lock holders in processes of their own: this test binary run again as
// a child, with an environment variable set to "addr|database".

// holderEnv makes the test binary the holder of TestLockHolderKilled.
const holderEnv = "COSID_MYSQL_LOCK_HOLDER"

// pausedEnv makes the test binary the holder of TestLockHolderPaused.
const pausedEnv = "COSID_MYSQL_PAUSED_HOLDER"

// TestLockHolderKilled: a process holding a lock is SIGKILLed; another
// store gets the lock once the dead holder's session has stood still for
// the lock timeout, with a higher fence; TryLock is refused before.
func TestLockHolderKilled(t *testing.T) {
	if v := os.Getenv(holderEnv); v != "" {
		fmt.Println("FENCE", childLock(v, "child").Fence())
		select {} // until killed
	}
	srv := mysqltest.Shared(t)
	database := srv.NewDatabase(t)
	cmd, out := startChild(t, holderEnv, srv, database)
	line, err := out.ReadString('\n')
	fence, perr := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(line, "FENCE ")), 10, 64)
	if err != nil || perr != nil {
		t.Fatalf("the holder process said %q (%v)", line, err)
	}
	s := openAt(t, srv.Addr(), database, map[string]string{"lockTimeout": "2s"})
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
	took := time.Since(killed)
	t.Logf("granted %v after the holder process was killed (lock timeout 2s)", took)
	if l.Fence() <= fence {
		t.Errorf("fence %d after the killed holder's %d", l.Fence(), fence)
	}
	if err := l.Unlock(t.Context()); err != nil {
		t.Error(err)
	}
}

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
	srv := mysqltest.Shared(t)
	database := srv.NewDatabase(t)
	cmd, r := startChild(t, pausedEnv, srv, database)
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "HELD ") {
		t.Fatalf("the holder process said %q (%v)", line, err)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	s := openAt(t, srv.Addr(), database, map[string]string{"lockTimeout": "2s"})
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

// startChild runs this test binary again as a child process for the
// running test, with env set to "addr|database" (childLock reads it), and
// returns it with its output; it is killed when the test ends.
func startChild(t *testing.T, env string, srv *mysqltest.Server, database string) (*exec.Cmd, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$")
	cmd.Env = append(os.Environ(), env+"="+srv.Addr()+"|"+database)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, bufio.NewReader(out)
}

// childLock is a child process's Lock of "x" as owner, on the store that
// v ("addr|database", from startChild) names, with a 2s lock timeout. It
// prints the error and exits 2 when it cannot.
func childLock(v, owner string) driver.Lock {
	addr, database, _ := strings.Cut(v, "|")
	d, err := fromOptions(map[string]string{"dsn": mysqltest.DSN(addr, ""), "database": database, "lockTimeout": "2s"})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	l, err := d.(*driverStore).Lock(context.Background(), "x", owner, true)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(2)
	}
	return l
}
