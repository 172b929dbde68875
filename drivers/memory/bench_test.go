package memory

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/rangebench"
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
