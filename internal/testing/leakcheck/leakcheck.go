// Package leakcheck checks that the goroutines a test started have ended,
// waiting for them as long as a loaded machine needs. goleak on its own
// gives up after about 0.4s of retries, and at load average 15-30 the
// send and receive loops of a just-closed connection can take longer than
// that to be scheduled and return: CI reported such goroutines as leaks. A
// goroutine that really leaked still fails the check, only later.
//
// It is a test helper: import it from _test.go files only.
package leakcheck

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Wait bounds how long the goroutines get to end.
const Wait = 20 * time.Second

// VerifyNone fails t if goroutines other than those opts ignore are still
// running Wait from now. Use it as goleak.VerifyNone:
//
//	defer leakcheck.VerifyNone(t, goleak.IgnoreCurrent())
func VerifyNone(t testing.TB, opts ...goleak.Option) {
	t.Helper()
	verifyNone(t, Wait, opts)
}

func verifyNone(t testing.TB, wait time.Duration, opts []goleak.Option) {
	t.Helper()
	if err := find(wait, opts); err != nil {
		t.Errorf("leakcheck: goroutines still running %v after the check began: %v", wait, err)
	}
}

// VerifyTestMain runs the tests of m and, when they pass, checks as
// VerifyNone does that no goroutine is left; it then exits with the
// result. It is goleak.VerifyTestMain with the wait of VerifyNone.
func VerifyTestMain(m interface{ Run() int }, opts ...goleak.Option) {
	code := m.Run()
	if code == 0 {
		if err := find(Wait, opts); err != nil {
			fmt.Fprintf(os.Stderr, "leakcheck: goroutines still running %v after the tests ended: %v\n", Wait, err)
			code = 1
		}
	}
	os.Exit(code)
}

// find calls goleak.Find, which itself retries for a short while, until
// it finds nothing or wait has passed, and returns its last error.
func find(wait time.Duration, opts []goleak.Option) error {
	deadline := time.Now().Add(wait)
	for {
		err := goleak.Find(opts...)
		if err == nil || time.Now().After(deadline) {
			return err
		}
	}
}
