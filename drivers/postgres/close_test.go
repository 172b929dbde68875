package postgres

import (
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/pgtest"
)

// TestCloseOnSilentNetwork: a store holding a lock, with pool connections
// open, whose network goes silent, closes within a bound: it gives the
// server closeGrace to hear its goodbyes, then closes its sockets. Without
// that, pgx waits 15 s per connection (about 20 s here). The store's
// goroutines end with it (goleak checks every test of the package).
func TestCloseOnSilentNetwork(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	p := pgtest.NewProxy(t, srv.Addr())
	s := openAt(t, pgtest.ConnStringAt(p.Addr()), freshSchema("close"), map[string]string{"lockTimeout": "2s"})
	ctx := t.Context()
	if _, err := s.Next(ctx, "k", 10); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lock(ctx, "x", "a", true); err != nil {
		t.Fatal(err)
	}
	p.Freeze()
	defer p.Thaw()
	start := time.Now()
	err := s.Close()
	took := time.Since(start)
	t.Logf("Close took %v: %v", took, err)
	// closeGrace, then the sockets' close ends every wait at once; the bound
	// leaves room for a loaded machine.
	if bound := closeGrace + 8*time.Second; took > bound {
		t.Errorf("Close on a silent network took %v, want under %v", took, bound)
	}
}
