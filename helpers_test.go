package store_test

import (
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/poll"
)

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 10*time.Second, what, cond)
}
