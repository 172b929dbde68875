package etcd

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"

	"github.com/cosid-go/store/driver"
)

// This file is what the store tells an operator about its connection to
// the cluster, as the other drivers do: Disconnected when the client's
// connection stops being ready or a call finds no member answering,
// Connected when members answer again, Expired when the server ended the
// store's session (the portable layer logs them and hands them to
// observers); and the last connection failure (connect.go
// records it), named in the events and in the errors of calls that found
// no member answering.

// health follows whether the store has a working connection.
type health struct {
	down atomic.Bool // Disconnected was the last reported (or Connect has not finished)

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

// connUp reports Connected after a Disconnected, or at the end of Connect.
func (s *etcdStore) connUp() {
	if s.health.down.Load() && s.health.down.CompareAndSwap(true, false) {
		s.emit(driver.Event{Kind: driver.Connected, Server: strings.Join(s.cfg.endpoints, ",")})
	}
}

// connDown reports Disconnected, once until members answer again.
func (s *etcdStore) connDown(err error) {
	if s.health.down.CompareAndSwap(false, true) {
		s.emit(driver.Event{Kind: driver.Disconnected, Server: strings.Join(s.cfg.endpoints, ","), Err: err})
	}
}

// expired loses ss because the server ended it (its lease revoked or
// expired: the lock keys on it are gone), and reports Expired, once.
func (s *etcdStore) expired(ss *lockSession, err error) {
	ss.lose(err)
	if ss.lostErr() == err { // this call lost it
		s.emit(driver.Event{Kind: driver.Expired, Err: err})
	}
}

// watchConn follows the state of the client's gRPC connection (one for
// all endpoints: ready while any member's is) until the store closes.
// Leaving ready is losing the connection: the client's connection never
// goes idle for want of calls (dialOptions).
func (s *etcdStore) watchConn(conn *grpc.ClientConn) {
	st := conn.GetState()
	ready := time.Now() // Connect saw it ready
	for conn.WaitForStateChange(s.ctx, st) && s.ctx.Err() == nil {
		prev := st
		st = conn.GetState()
		switch {
		case st == connectivity.Ready:
			ready = time.Now()
			s.connUp()
		case prev == connectivity.Ready, st == connectivity.TransientFailure:
			err := s.lastFailure(ready)
			if err == nil {
				// Closed by the client: keepalive pings unanswered.
				err = fmt.Errorf("connection to the members lost (gRPC state %v)", st)
			}
			s.connDown(err)
		}
	}
}
