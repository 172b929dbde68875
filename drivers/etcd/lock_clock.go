package etcd

import (
	"time"

	"github.com/cosid-go/store/internal/bootclock"
)

// The clock of the lock's deadlines counts time suspended where the
// platform allows (package bootclock), as the leader's own clock does: a
// hold must not look valid after a resume although its lease expired at
// the leader meanwhile (lock_session.go).

// lockNow reads the lock clock: bootclock's, or the one a test set.
func (s *lockStore) lockNow() time.Duration {
	if s.clock != nil {
		return s.clock()
	}
	return bootclock.Now()
}
