package zktest

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/faults"
)

// Stores are the clients a fault schedule cuts off: Stores[i][m] is store
// i's proxy to member m of the ensemble.
type Stores [][]*Proxy

// cut cuts stores off every member for d.
func (s Stores) cut(t testing.TB, stores []int, d time.Duration) {
	for _, i := range stores {
		for _, p := range s[i] {
			p.Cut()
		}
	}
	faults.Hold(t, d)
	for _, i := range stores {
		for _, p := range s[i] {
			p.Restore()
		}
	}
}

// EnsembleFaults is the schedule of the ensemble tests, in turn: the
// leader killed and restarted, any member killed and restarted, half the
// stores cut off for 500ms, one store cut off for 2.5s (past a 2s session
// timeout). After each fault it waits for a quorum, then 300ms of traffic.
func EnsembleFaults(t testing.TB, e *Ensemble, stores Stores, rnd *rand.Rand) faults.Schedule {
	return faults.Schedule{
		Faults: []faults.Fault{
			e.killLeader(t),
			e.killMember(t, rnd),
			cutHalf(t, stores, rnd),
			cutOne(t, stores, rnd),
		},
		After: e.settle(t),
	}
}

// LockFaults is EnsembleFaults with, first in each turn, a follower cut
// off from the other members for 3s while its clients stay connected, as
// in the lock's partition proof (e must be linked: StartLinkedEnsemble).
// The leader's own isolation would be an election, which the kills cover.
func LockFaults(t testing.TB, e *Ensemble, stores Stores, rnd *rand.Rand) faults.Schedule {
	s := EnsembleFaults(t, e, stores, rnd)
	s.Faults = append([]faults.Fault{func() string {
		m := (max(e.Leader(), 0) + 1 + rnd.IntN(len(e.Members)-1)) % len(e.Members)
		e.Isolate(m)
		faults.Hold(t, 3*time.Second)
		e.Heal(m)
		return fmt.Sprintf("isolated member %d for 3s", m+1)
	}}, s.Faults...)
	return s
}

func (e *Ensemble) killLeader(t testing.TB) faults.Fault {
	return func() string {
		l := e.Leader()
		if l < 0 {
			e.WaitQuorum(t)
			l = e.Leader()
		}
		e.Members[l].Kill()
		faults.Hold(t, 300*time.Millisecond)
		e.Members[l].Start()
		return fmt.Sprintf("killed and restarted leader %d", l+1)
	}
}

func (e *Ensemble) killMember(t testing.TB, rnd *rand.Rand) faults.Fault {
	return func() string {
		m := rnd.IntN(len(e.Members))
		e.Members[m].Kill()
		faults.Hold(t, 300*time.Millisecond)
		e.Members[m].Start()
		return fmt.Sprintf("killed and restarted member %d", m+1)
	}
}

func cutHalf(t testing.TB, stores Stores, rnd *rand.Rand) faults.Fault {
	return func() string {
		c := rnd.Perm(len(stores))[:(len(stores)+1)/2]
		stores.cut(t, c, 500*time.Millisecond)
		return fmt.Sprintf("cut stores %v for 500ms", c)
	}
}

func cutOne(t testing.TB, stores Stores, rnd *rand.Rand) faults.Fault {
	return func() string {
		i := rnd.IntN(len(stores))
		stores.cut(t, []int{i}, 2500*time.Millisecond)
		return fmt.Sprintf("cut store %d for 2.5s (its session expires)", i)
	}
}

// settle waits for a quorum, then lets traffic flow for 300ms.
func (e *Ensemble) settle(t testing.TB) func() {
	return func() {
		e.WaitQuorum(t)
		faults.Hold(t, 300*time.Millisecond)
	}
}
