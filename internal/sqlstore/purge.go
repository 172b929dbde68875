package sqlstore

import (
	"context"
	"fmt"
	"sort"
)

// Purge deletes every row of the store's tables (the schema version row
// stays) and returns what it deleted, children before parents as the
// memory driver lists them: "range orders", "slot workers/3",
// "owner workers/host-a", "namespace workers". Dialect.PurgeMore adds the
// driver's own tables (locks). Meant for a store no instance uses.
func (s *Store) Purge(ctx context.Context) ([]string, error) {
	deleted := []string{}
	err := s.db.Tx(ctx, func(tx Querier) error {
		deleted = deleted[:0]
		keys, err := strings1(ctx, tx, s.Q(`SELECT key FROM {p}cosid_range`))
		if err != nil {
			return err
		}
		for _, k := range keys {
			deleted = append(deleted, "range "+k)
		}
		names, err := strings1(ctx, tx, s.Q(`SELECT name FROM {p}cosid_namespace`))
		if err != nil {
			return err
		}
		for _, ns := range names {
			slots, err := strings1(ctx, tx, s.Q(`SELECT CAST(slot AS TEXT) FROM {p}cosid_slot WHERE namespace = $1`), ns)
			if err != nil {
				return err
			}
			for _, n := range slots {
				deleted = append(deleted, fmt.Sprintf("slot %s/%s", ns, n))
			}
			owners, err := strings1(ctx, tx, s.Q(`SELECT owner FROM {p}cosid_owner WHERE namespace = $1`), ns)
			if err != nil {
				return err
			}
			for _, o := range owners {
				deleted = append(deleted, "owner "+ns+"/"+o)
			}
			deleted = append(deleted, "namespace "+ns)
		}
		for _, t := range []string{"cosid_range", "cosid_slot", "cosid_owner", "cosid_namespace"} {
			if _, err := tx.Exec(ctx, s.Q(`DELETE FROM {p}`+t)); err != nil {
				return err
			}
		}
		if s.d.PurgeMore != nil {
			more, err := s.d.PurgeMore(ctx, tx, s.Q)
			if err != nil {
				return err
			}
			deleted = append(deleted, more...)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.forget()
	return deleted, nil
}

// strings1 returns the one text column of a query, sorted bytewise.
func strings1(ctx context.Context, q Querier, query string, args ...any) ([]string, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	sort.Strings(out)
	return out, rows.Err()
}
