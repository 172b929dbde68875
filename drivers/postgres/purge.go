package postgres

import (
	"context"
	"fmt"

	"github.com/cosid-go/store/internal/sqlstore"
)

// purgeLocks deletes the lock tables' rows in Purge's transaction and lists
// them: "lock rebalance holder host-a (fence 7)", then "lock rebalance".
// The ticket sequence is kept, so fences never repeat after a purge. Every
// session row goes too, so the stores still holding locks lose them.
func purgeLocks(ctx context.Context, tx sqlstore.Querier, q func(string) string) ([]string, error) {
	rows, err := tx.Query(ctx, q(`SELECT l.name, w.owner, w.ticket FROM {p}cosid_lock l
		LEFT JOIN {p}cosid_lock_waiter w ON w.name = l.name ORDER BY l.name, w.ticket`))
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
	for _, t := range []string{"cosid_lock_waiter", "cosid_lock_session", "cosid_lock"} {
		if _, err := tx.Exec(ctx, q(`DELETE FROM {p}`+t)); err != nil {
			return nil, err
		}
	}
	return deleted, nil
}
