package etcd

import (
	"fmt"
	"sync"
	"time"
)

// This file is what the store tells an operator about its connection to
// the cluster: the last connection failure (connect.go records it), named
// in the errors of calls that found no member answering.

// health follows whether the store has a working connection.
type health struct {
	mu   sync.Mutex
	last error // the last connection failure, and when
	at   time.Time
}

// failed records a connection failure.
func (s *etcdStore) failed(err error) {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	s.health.last, s.health.at = err, time.Now()
}

// lastFailure returns the last connection failure since since, or nil.
func (s *etcdStore) lastFailure(since time.Time) error {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	if s.health.last == nil || s.health.at.Before(since) {
		return nil
	}
	return fmt.Errorf("%w (%v ago)", s.health.last, time.Since(s.health.at).Round(time.Millisecond))
}
