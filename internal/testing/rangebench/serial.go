package rangebench

import (
	"context"
	"testing"

	"github.com/cosid-go/store"
)

// Serial is b.N Nexts of step 1 on one key of st, one after another, with
// the allocations reported: what a store option (an observer, a metrics
// hook) costs a call, compared with a store without it in the same run.
func Serial(b *testing.B, st *store.Store) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := st.Ranges().Next(ctx, "k", 1); err != nil {
			b.Fatal(err)
		}
	}
}
