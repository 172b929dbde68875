package idgen_test

import (
	"context"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/idgen"
)

// TestErrorTexts pins what a user reads when a generator is opened with a
// bad key, namespace or owner: what was wrong, named once.
func TestErrorTexts(t *testing.T) {
	st, err := store.Open("memory", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	ns := store.Namespace{Name: "workers", Limit: 4, Tolerance: time.Second}
	for _, tc := range []struct {
		call func() error
		want string
	}{
		{func() error { _, err := idgen.NewSegment(ctx, st, "a//b", idgen.SegmentOptions{}); return err },
			`idgen: NewSegment: store: Next: key "a//b" must not contain "//" (an empty segment)`},
		{func() error { _, err := idgen.NewSegment(ctx, st, "/orders", idgen.SegmentOptions{}); return err },
			`idgen: NewSegment: store: Next: key "/orders" must not start with '/'`},
		{func() error {
			_, err := idgen.NewSnowflake(ctx, st, ns, "host/a", idgen.SnowflakeOptions{})
			return err
		}, `idgen: session: store: Acquire "workers": owner "host/a" must not contain '/' (it is a single name, not a path)`},
		{func() error {
			g, err := idgen.NewSegment(ctx, st, "orders", idgen.SegmentOptions{})
			if err != nil {
				return err
			}
			if err := g.Close(ctx); err != nil {
				return err
			}
			_, err = g.NextID(ctx)
			return err
		}, `idgen: closed: segment "orders"`},
	} {
		if err := tc.call(); err == nil || err.Error() != tc.want {
			t.Errorf("got  %v\nwant %s", err, tc.want)
		}
	}
}
