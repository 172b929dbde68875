package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/cosid-go/store/driver"
)

// LockPurge are a driver's statements for PurgeLocks, on tables of the
// shape the SQL drivers' locks share: cosid_lock (name), the waiter rows
// (name, owner, ticket) and the sessions.
type LockPurge struct {
	// Lock keeps every lock table from being written until the purge's
	// transaction ends (a table lock, or locking reads at REPEATABLE READ).
	Lock string
	// Head is the waiter with the lowest ticket: name, owner, ticket.
	Head string
	// List is every name with its waiters (name, owner, ticket; NULL
	// owner and ticket for a name with none), by name then ticket.
	List string
	// Delete empties the tables, keeping the ticket counter and the seal.
	Delete []string
}

// PurgeLocks deletes the lock tables' rows in Purge's transaction and lists
// them: "lock rebalance holder host-a (fence 7)", then "lock rebalance".
// The ticket counter is kept, so fences never repeat after a purge. The
// session rows go too (sessions holding nothing: they start again at
// their next Lock).
//
// While a lock is held or waited on (a waiter row) it gives ErrLocked and
// the transaction rolls back: a purge never ends a hold, as ending one
// would make two holders while its holder still counts on its last
// confirmation. A session's rows go only by a takeover, after its
// confirmations stood still for its lock timeout. The tables are locked
// first, so no row written meanwhile escapes the check.
func PurgeLocks(ctx context.Context, tx Querier, driverName string, st *LockPurge) ([]string, error) {
	rows, err := tx.Query(ctx, st.Lock)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var name, owner string
	var ticket int64
	err = tx.QueryRow(ctx, st.Head).Scan(&name, &owner, &ticket)
	switch {
	case err == nil:
		return nil, fmt.Errorf("%s: purge: lock %q is held or waited on by %s (queue ticket %d): %w", driverName, name, owner, ticket, driver.ErrLocked)
	case !errors.Is(err, ErrNoRows):
		return nil, err
	}
	if rows, err = tx.Query(ctx, st.List); err != nil {
		return nil, err
	}
	var deleted []string
	current := "" // the name whose rows are being listed
	for rows.Next() {
		var name string
		var owner *string
		var ticket *int64
		if err := rows.Scan(&name, &owner, &ticket); err != nil {
			rows.Close()
			return nil, err
		}
		what := "waiter"
		if name != current {
			if current != "" {
				deleted = append(deleted, "lock "+current)
			}
			current, what = name, "holder"
		}
		if owner != nil {
			deleted = append(deleted, fmt.Sprintf("lock %s %s %s (fence %d)", name, what, *owner, *ticket))
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if current != "" {
		deleted = append(deleted, "lock "+current)
	}
	for _, q := range st.Delete {
		if _, err := tx.Exec(ctx, q); err != nil {
			return nil, err
		}
	}
	return deleted, nil
}
