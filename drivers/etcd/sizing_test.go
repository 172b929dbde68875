package etcd

import (
	"strings"
	"testing"

	"github.com/cosid-go/store/internal/testing/etcdtest"
	"github.com/cosid-go/store/internal/testing/sizing"
)

// BenchmarkSizing prints etcd's row of docs/sizing.md, on a member of its
// own (make sizing; the other drivers' rows come from
// internal/testing/sizing/bench, which prints the header).
//
//	go test -run '^$' -bench Sizing -benchtime 1x .
func BenchmarkSizing(b *testing.B) {
	if sizing.Selected(b) != nil && !sizing.Selected(b)["etcd"] {
		b.Skip("COSID_SIZING_DRIVERS leaves out etcd")
	}
	for range b.N {
		endpoints := strings.Join(etcdtest.Start(b, 1).Endpoints(), ",")
		sizing.Row(b, sizing.Driver{Name: "etcd", Driver: "etcd",
			Options: map[string]string{"endpoints": endpoints, "prefix": freshPrefix("sizing")}})
	}
}
