package zktest

import (
	"fmt"
	"os"
	"sort"
	"sync"
	"testing"
)

// ownerProp is a JVM system property carrying the pid of the test binary
// that started the server.
const ownerProp = "cosid.zktest.owner"

// live holds every JVM this test binary started and has not reaped yet.
var live struct {
	sync.Mutex
	procs map[*process]struct{}
}

func track(p *process) {
	live.Lock()
	defer live.Unlock()
	if live.procs == nil {
		live.procs = map[*process]struct{}{}
	}
	live.procs[p] = struct{}{}
}

func untrack(p *process) {
	live.Lock()
	defer live.Unlock()
	delete(live.procs, p)
}

// Main runs the tests of a package that starts ZooKeeper servers, then kills
// any server still running, lists it and exits 1: a test cleanup was skipped
// or broken, and no JVM may outlive the test binary. Call it from TestMain:
//
//	func TestMain(m *testing.M) { zktest.Main(m) }
func Main(m *testing.M) { os.Exit(Wrap(m).Run()) }

// Wrap returns m with the check of Main added to its Run, for a TestMain that
// wraps the run further, e.g. goleak.VerifyTestMain(zktest.Wrap(m)).
func Wrap(m *testing.M) interface{ Run() int } { return wrapped{m} }

type wrapped struct{ m *testing.M }

func (w wrapped) Run() int {
	code := w.m.Run()
	if left := reap(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "zktest: FAIL: %d ZooKeeper server(s) were still running after the tests (killed now):\n", len(left))
		for _, d := range left {
			fmt.Fprintf(os.Stderr, "\t%s\n", d)
		}
		if code == 0 {
			code = 1
		}
	}
	return code
}

// reap kills every server this binary still runs and describes each. Beyond
// the tracked JVMs it kills any process carrying this binary's owner mark, so
// a bookkeeping bug here cannot hide one.
func reap() []string {
	live.Lock()
	procs := make([]*process, 0, len(live.procs))
	for p := range live.procs {
		procs = append(procs, p)
	}
	live.Unlock()
	var left []string
	for _, p := range procs {
		_ = p.cmd.Process.Kill()
		<-p.done
		left = append(left, p.desc)
	}
	for _, pid := range markedProcesses(os.Getpid()) {
		killPid(pid)
		left = append(left, fmt.Sprintf("untracked JVM, pid %d", pid))
	}
	sort.Strings(left)
	return left
}
