package memory

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/fleetbench"
	"github.com/cosid-go/store/internal/testing/lockscale"
	"github.com/cosid-go/store/internal/testing/rangebench"
)

var benchStates atomic.Int64

// BenchmarkNextConcurrent: many goroutines on one key against 64 keys,
// coalescing on and off (package rangebench).
//
//	go test -run '^$' -bench NextConcurrent -benchtime 2000x ./drivers/memory/
func BenchmarkNextConcurrent(b *testing.B) {
	name := fmt.Sprintf("bench-%d", benchStates.Add(1))
	rangebench.Run(b, func(testing.TB) driver.Store { return newDriver(name) })
}

// BenchmarkFleet: a fleet of stores of one state acquiring slots of one
// namespace at once (package fleetbench).
//
//	COSID_FLEET=250,1000 go test -run '^$' -bench Fleet -benchtime 1x ./drivers/memory/
func BenchmarkFleet(b *testing.B) {
	name := fmt.Sprintf("fleet-%d", benchStates.Add(1))
	fleetbench.Run(b, func() (driver.Store, error) { return newDriver(name), nil })
}

// BenchmarkManyLockHolders: stores of one state holding lock names of
// their own, with churn (package lockscale). An Unlock wakes the new head
// of its name only (dequeue): nothing else to count.
//
//	COSID_LOCKHOLDERS=200x50 go test -run '^$' -bench ManyLockHolders -benchtime 1x ./drivers/memory/
func BenchmarkManyLockHolders(b *testing.B) {
	name := fmt.Sprintf("bench-holders-%d", benchStates.Add(1))
	lockscale.Report(b, func() *store.Store {
		st, err := store.Open("memory", map[string]string{"name": name})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		return st
	}, nil)
}
