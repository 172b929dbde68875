package tck_test

// Broken variants for the checks that the second blind bug sets of issue
// 39 (bugs written from the contract and the drivers' code, without the
// kit) showed missing: each wraps the memory driver with one such bug.

import (
	"fmt"
	"maps"
	"testing"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/tck"
)

func init() {
	variants = append(variants,
		variant{name: "create-false-missing-refused", checks: []string{"Options/CreateFalse"}, suite: createFalseSuite(false)},
		variant{name: "create-false-creates", checks: []string{"Options/CreateFalse"}, broken: true, suite: createFalseSuite(true)},
	)
}

// createFalseSuite names a missing memory state (Suite.MissingOptions);
// lax opens one with create=false all the same, creating it.
func createFalseSuite(lax bool) func(*testing.T) tck.Suite {
	return func(*testing.T) tck.Suite {
		s := memSuite()
		s.MissingOptions = func(*testing.T) map[string]string {
			return map[string]string{"name": fmt.Sprintf("tck-self-missing-%d", memStates.Add(1))}
		}
		if lax {
			s.Factory = func(options map[string]string) (driver.Store, error) {
				o := maps.Clone(options)
				delete(o, driver.OptionCreate)
				return openMemory(o)
			}
		}
		return s
	}
}
