package tck_test

import (
	"testing"

	"github.com/cosid-go/store/tck"
)

// The memory driver keeps no slot timestamp floor across purges (its clock
// is the store's own): a suite that says it does is caught by the check,
// as an etcd suite that forgot to say so was.
func init() {
	variants = append(variants,
		variant{name: "purge-floor-declared", checks: []string{"History/PurgeSlotFloor"}, suite: func(*testing.T) tck.Suite { return memSuite() }},
		variant{name: "purge-floor-misdeclared", checks: []string{"History/PurgeSlotFloor"}, broken: true, suite: func(*testing.T) tck.Suite {
			s := memSuite()
			s.PurgeKeepsSlotFloor = true
			return s
		}},
	)
}
