package etcdtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/cosid-go/store/internal/testing/srvproc"
)

// The one-member cluster a test binary's tests share, started on first
// use: a test package gives each test its own key prefix instead of its own
// server. Wrap stops it when the tests end.
var shared struct {
	sync.Mutex
	c   *Cluster
	dir string
	err error
}

// Shared returns the binary's shared one-member cluster, starting it on the
// first call; a test calling it fails, with the reason, when none starts
// (and every later one, without trying again). Its TestMain must run the
// tests through Wrap.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if shared.c == nil && shared.err == nil {
		shared.c, shared.err = startShared(t)
	}
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.c
}

// startShared starts the member; t, the first caller, is only what
// start's peer proxies would need, and one member has none.
func startShared(t testing.TB) (*Cluster, error) {
	bin, err := Binary()
	if err != nil {
		return nil, fmt.Errorf("etcdtest: %v", err)
	}
	shared.dir, err = os.MkdirTemp("", "etcdtest-shared-")
	if err != nil {
		return nil, fmt.Errorf("etcdtest: %v", err)
	}
	var last error
	for i := range 3 { // fresh ports each time, as Start
		dir := filepath.Join(shared.dir, strconv.Itoa(i))
		if err := os.Mkdir(dir, 0o700); err != nil {
			return nil, fmt.Errorf("etcdtest: %v", err)
		}
		c := &Cluster{bin: bin, cut: map[*Member]bool{}}
		if last = c.start(t, dir, 1); last == nil {
			return c, nil
		}
		c.Close()
	}
	return nil, fmt.Errorf("etcdtest: no shared etcd member started: %v", last)
}

// Wrap returns m with the shared cluster stopped, and its files removed,
// after its Run; then any member still running is killed and listed, and
// the binary fails: no member may outlive the tests.
//
//	func TestMain(m *testing.M) { os.Exit(etcdtest.Wrap(m).Run()) }
//
// It composes with the other helpers' (pgtest.Wrap(etcdtest.Wrap(m))).
func Wrap(m interface{ Run() int }) interface{ Run() int } { return wrapped{m} }

type wrapped struct{ m interface{ Run() int } }

func (w wrapped) Run() int {
	code := w.m.Run()
	shared.Lock()
	defer shared.Unlock()
	if shared.c != nil {
		shared.c.Close()
		shared.c = nil
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
		shared.dir = ""
	}
	return srvproc.Report("etcdtest", "etcd", code, srvproc.Reap("etcdtest"))
}
