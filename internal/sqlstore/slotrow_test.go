package sqlstore_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
)

// A slot row edited by hand so that one stored value disagrees with the
// rest, or holds a negative fence, is ErrCorrupt to a store that never saw
// it, never a lease lost or kept: corrupt data is never guessed. Mutants
// that needed two values wrong at once went unseen (make mutants-sqlstore).
func TestCorruptSlotRow(t *testing.T) {
	edits := []string{
		`UPDATE {p}cosid_slot SET expires_at = expires_at + 1 WHERE namespace = $1`,
		`UPDATE {p}cosid_slot SET ceiling = ceiling + 1 WHERE namespace = $1`,
		`UPDATE {p}cosid_slot SET fence = -1 WHERE namespace = $1`,
	}
	for _, db := range databases(t) {
		t.Run(db.name, func(t *testing.T) {
			ctx := t.Context()
			s, err := sqlstore.Open(ctx, db.db, db.d)
			if err != nil {
				t.Fatal(err)
			}
			for i, edit := range edits {
				ns := driver.Namespace{Name: fmt.Sprintf("w%d", i), Limit: 1, Tolerance: time.Second}
				l := acquire(t, s, ns, "a")
				mustExec(t, db, edit, ns.Name)
				fresh, err := sqlstore.Open(ctx, db.db, db.d)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := fresh.Renew(ctx, l); !errors.Is(err, driver.ErrCorrupt) {
					t.Errorf("Renew after %s: %v; want ErrCorrupt", edit, err)
				}
			}
		})
	}
}
