package memory

// The probes' helpers (see checkProbe in broken_test.go).

import (
	"fmt"
	"sync"

	"github.com/cosid-go/store/driver"
)

// Probes. Each returns what it observed, as text; TestBroken wants the
// sound store's answer and the variant's to differ.

var probeNames sync.Map

// probeStore opens a store on a private state, wrapped by wrap.
func probeStore(wrap func(*driverStore) driver.Store) (driver.Store, *driverStore) {
	s := newDriver("")
	return wrap(s), s
}

func freshName(what string) string {
	n := 0
	for {
		n++
		name := fmt.Sprintf("probe-%s-%d", what, n)
		if _, dup := probeNames.LoadOrStore(name, true); !dup {
			return name
		}
	}
}
