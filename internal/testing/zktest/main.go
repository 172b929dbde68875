package zktest

import (
	"fmt"
	"os"
	"sort"
	"testing"

	"github.com/cosid-go/store/internal/testing/srvproc"
)

// ownerProp is a JVM system property carrying the pid of the test binary
// that started the server.
const ownerProp = "cosid.zktest.owner"

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
	return srvproc.Report("zktest", "ZooKeeper", w.m.Run(), reap())
}

// reap kills every server this binary still runs and describes each. Beyond
// the tracked JVMs it kills any process carrying this binary's owner mark, so
// a bookkeeping bug here cannot hide one.
func reap() []string {
	left := srvproc.Reap("zktest")
	for _, pid := range markedProcesses(os.Getpid()) {
		killPid(pid)
		left = append(left, fmt.Sprintf("untracked JVM, pid %d", pid))
	}
	sort.Strings(left)
	return left
}
