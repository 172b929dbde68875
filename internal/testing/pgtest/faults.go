package pgtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/internal/testing/faults"
)

// Faults are what a PostgreSQL fault schedule acts on.
type Faults struct {
	Server *Server
	// Cut[i] is store i's proxy whose connections a fault cuts; Silent[i]
	// is the one whose network a fault silences (bytes held, sockets open).
	Cut, Silent []*Proxy
	// Holder, if set, returns the store that holds the lock the test
	// contends for, or -1: its network is the one silenced, the case a
	// lock's liveness rule is for.
	Holder func() int
	// StepClock, if set, steps the database's clock (the test's own clock
	// expression) by ms: then at least every third fault is a step.
	StepClock func(ms int64)
}

// Schedule picks a fault at random every 0.5 to 1.2s: the server killed
// and restarted, a store's connections cut for 100ms, one store's network
// silent for 1.5s (longer than a 1s lock timeout), every client backend
// terminated (pg_terminate_backend), or the database's clock stepped
// forward by 2s or back by 1s.
func (f Faults) Schedule(t testing.TB, rnd *rand.Rand) faults.Schedule {
	s := faults.Schedule{
		Faults: []faults.Fault{
			func() string {
				f.Server.Kill()
				f.Server.Restart(t)
				return "server killed+restarted"
			},
			func() string {
				p := f.Cut[rnd.IntN(len(f.Cut))]
				p.Cut()
				faults.Hold(t, 100*time.Millisecond)
				p.Restore()
				return "connections cut"
			},
			func() string {
				i := -1
				if f.Holder != nil {
					i = f.Holder()
				}
				if i < 0 {
					i = rnd.IntN(len(f.Silent))
				}
				f.Silent[i].Freeze()
				faults.Hold(t, 1500*time.Millisecond)
				f.Silent[i].Thaw()
				return "network silent 1.5s"
			},
			func() string { return fmt.Sprintf("%d backends terminated", f.Server.terminateBackends(t)) },
		},
		Before: func() { faults.Hold(t, time.Duration(500+rnd.IntN(700))*time.Millisecond) },
	}
	if f.StepClock != nil {
		s.Faults = append(s.Faults, func() string {
			step := []int64{2000, -1000}[rnd.IntN(2)]
			f.StepClock(step)
			return fmt.Sprintf("clock stepped %+dms", step)
		})
		s.Pick = func(round int) int {
			if round%3 == 1 {
				return len(s.Faults) - 1
			}
			return rnd.IntN(len(s.Faults))
		}
	} else {
		s.Pick = func(int) int { return rnd.IntN(len(s.Faults)) }
	}
	return s
}

// terminateBackends ends every client backend but its own, and returns
// how many it ended.
func (s *Server) terminateBackends(t testing.TB) int {
	var n int
	err := s.Exec(t, func(c *pgx.Conn) error {
		return c.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`).Scan(&n)
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("pgtest: pg_terminate_backend: %v", err)
	}
	return n
}

// Exec runs f on a connection of its own as the superuser, and returns
// f's error; it fails t when it cannot connect.
func (s *Server) Exec(t testing.TB, f func(*pgx.Conn) error) error {
	t.Helper()
	c, err := pgx.Connect(t.Context(), s.ConnString())
	if err != nil {
		t.Fatalf("pgtest: connect to %s: %v", s, err)
	}
	defer c.Close(context.Background())
	return f(c)
}
