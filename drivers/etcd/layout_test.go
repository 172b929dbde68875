package etcd

import (
	"testing"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/runs"
)

// TestLayoutKept: a namespace keeps the layout of its first Snowflake
// generator; another layout is refused and issues no ID again (see
// runs.LayoutKept).
func TestLayoutKept(t *testing.T) {
	prefix := freshPrefix("layout")
	runs.LayoutKept(t, func(t *testing.T) *store.Store { return openDriver(t, prefix, func(*driverStore) {}) })
}
