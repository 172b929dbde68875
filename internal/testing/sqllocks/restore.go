package sqllocks

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cosid-go/store/driver"
)

// sessionIDsAcrossARestore: the namespace put back from an older dump as
// the driver's docs say (dropped, the dump loaded with the server's
// client tools), with a store left open across it, as no instance should
// be. Its lock session was made after the backup and is gone with it; the
// counter that gives session ids and fences went back, so the store's
// next session would take an id handed out before the restore by another
// store (whose watchers would carry over to it). It is refused with
// ErrCorrupt instead, until the fences are raised as storectl restore
// raises them; then sessions and fences go on above everything handed
// out. No session id or fence is handed out twice.
func sessionIDsAcrossARestore(t *testing.T, d Dialect) {
	t.Parallel()
	srv := d.Shared(t)
	ns := d.Namespace(t, srv)
	ctx := t.Context()
	open := func() Store { return d.Open(t, srv.Addr(), ns, nil) }

	// given holds every value of the counter a store was seen to use, a
	// session id or a fence, with what it was.
	given := map[int64][]string{}
	note := func(v int64, what string) { given[v] = append(given[v], what) }
	lastSession := map[Store]int64{}
	lock := func(s Store, who string) error {
		l, err := s.Lock(ctx, "job", who, true)
		if id := d.SessionID(s); id != 0 && id != lastSession[s] {
			lastSession[s] = id
			note(id, who+" session")
		}
		if err != nil {
			return err
		}
		note(l.Fence(), who+" fence")
		return l.Unlock(ctx)
	}
	mustLock := func(s Store, who string) {
		t.Helper()
		if err := lock(s, who); err != nil {
			t.Fatalf("%s: %v", who, err)
		}
	}

	before := open()
	mustLock(before, "before")
	_ = before.Close()
	restore := d.Dump(t, srv, ns)

	across := open() // left open across the restore
	mustLock(across, "open")
	after := open()
	mustLock(after, "after")
	_ = after.Close()

	restore()
	for i := range 3 {
		if err := lock(across, fmt.Sprintf("open across the restore, try %d", i)); !errors.Is(err, driver.ErrCorrupt) {
			t.Errorf("Lock of the store open across the restore, try %d: %v; want ErrCorrupt", i, err)
		}
	}

	// storectl restore's raise of the lock fences (restoreLocks).
	sealer, ok := across.(driver.LockSealer)
	if !ok {
		t.Fatalf("%T is no driver.LockSealer", across)
	}
	floor, err := sealer.SealLocks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := sealer.RaiseLockFences(ctx, floor+1000); err != nil {
		t.Fatal(err)
	}
	mustLock(across, "open, raised")
	mustLock(open(), "restarted")

	for v, what := range given {
		if len(what) > 1 {
			t.Errorf("%d handed out %d times: %s", v, len(what), strings.Join(what, ", "))
		}
	}
	t.Logf("handed out: %v", given)
}
