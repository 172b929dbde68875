package etcd

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cosid-go/store/internal/testing/etcdtest"
)

// The single-member server the tests share, started on first use and
// stopped when the binary ends.
var shared struct {
	once sync.Once
	c    *etcdtest.Cluster
	tb   *sharedTB
}

// prefixes counts the key prefixes handed out in this binary: one per check.
var prefixes atomic.Int64

func freshPrefix(what string) string {
	return fmt.Sprintf("/test/%s-%d-%d", what, os.Getpid(), prefixes.Add(1))
}

// sharedServer returns the shared member, starting it if needed; a test
// that needs it fails when it cannot start.
func sharedServer(t testing.TB) *etcdtest.Cluster {
	t.Helper()
	shared.once.Do(func() {
		shared.tb = &sharedTB{}
		func() {
			defer func() { recover() }() // a Fatalf of the fake TB
			shared.c = etcdtest.Start(shared.tb, 1)
		}()
	})
	if shared.c == nil {
		t.Fatalf("no etcd server: %s", shared.tb.msg)
	}
	return shared.c
}

// sharedTB lets the shared server outlive the test that started it: its
// cleanups run in TestMain.
type sharedTB struct {
	testing.TB
	msg      string
	cleanups []func()
	dirs     []string
}

func (s *sharedTB) Helper() {}
func (s *sharedTB) Fatalf(format string, args ...any) {
	s.msg = fmt.Sprintf(format, args...)
	panic(s.msg)
}
func (s *sharedTB) Cleanup(f func()) { s.cleanups = append(s.cleanups, f) }
func (s *sharedTB) TempDir() string {
	d, err := os.MkdirTemp("", "etcdtest")
	if err != nil {
		s.Fatalf("%v", err)
	}
	s.dirs = append(s.dirs, d)
	return d
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.tb != nil {
		for i := len(shared.tb.cleanups) - 1; i >= 0; i-- {
			shared.tb.cleanups[i]()
		}
		for _, d := range shared.tb.dirs {
			os.RemoveAll(d)
		}
	}
	os.Exit(code)
}
