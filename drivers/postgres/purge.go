package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/cosid-go/store/driver"

	"github.com/cosid-go/store/internal/sqlstore"
)

// purgeLocks deletes the lock tables' rows in Purge's transaction and lists
// them: "lock rebalance holder host-a (fence 7)", then "lock rebalance".
// The ticket sequence is kept, so fences never repeat after a purge. The
// session rows go too (sessions holding nothing: they start again at their
// next Lock).
//
// While a lock is held or waited on (a waiter row) it gives ErrLocked and
// the transaction rolls back: a purge never ends a hold, as ending one
// would make two holders while its holder still counts on its last
// confirmation. A session's rows go only by a takeover, after its
// confirmations stood still for its lock timeout. The tables are locked
// first, so no row written meanwhile escapes the check.
func purgeLocks(ctx context.Context, tx sqlstore.Querier, lq *lockStatements) ([]string, error) {
	if _, err := tx.Exec(ctx, lq.PurgeLockTables); err != nil {
		return nil, err
	}
	var name, owner string
	var ticket int64
	err := tx.QueryRow(ctx, lq.PurgeHead).Scan(&name, &owner, &ticket)
	switch {
	case err == nil:
		return nil, fmt.Errorf("postgres: purge: lock %q is held or waited on by %s (fence %d): %w", name, owner, ticket, driver.ErrLocked)
	case !errors.Is(err, sqlstore.ErrNoRows):
		return nil, err
	}
	rows, err := tx.Query(ctx, lq.PurgeList)
	if err != nil {
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
	for _, q := range lq.PurgeDelete {
		if _, err := tx.Exec(ctx, q); err != nil {
			return nil, err
		}
	}
	return deleted, nil
}
