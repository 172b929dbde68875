package tck_test

// Broken variants for the checks that the blind bug sets of issue 39 (bugs
// written from the contract alone, without the kit) showed missing: each
// wraps the memory driver with one such bug.

import (
	"context"
	"strings"

	"github.com/cosid-go/store/driver"
)

func init() {
	wrapped := func(name, catch string, wrap func(memDriver) driver.Store) variant {
		return variant{name: name, checks: []string{catch}, broken: true, suite: wrapSuite(wrap)}
	}
	variants = append(variants,
		wrapped("purge-report-no-owners", "Purge/Everything", func(s memDriver) driver.Store { return purgeReportNoOwners{s} }),
	)
}

// purgeReportNoOwners purges everything but leaves the owner indexes out of
// what it reports deleted.
type purgeReportNoOwners struct{ memDriver }

func (s purgeReportNoOwners) Purge(ctx context.Context) ([]string, error) {
	deleted, err := s.memDriver.Purge(ctx)
	out := []string{}
	for _, d := range deleted {
		if !strings.HasPrefix(d, "owner ") {
			out = append(out, d)
		}
	}
	return out, err
}
