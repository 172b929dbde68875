package store_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/poll"
)

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 10*time.Second, what, cond)
}

// memoryName names a memory store after the test and this run of it:
// memory stores live as long as the process, so with go test -count=2 a
// second run on the test's bare name found the first run's keys and seals.
func memoryName(t testing.TB) string {
	return fmt.Sprintf("%s-%d", t.Name(), rand.Int64())
}
