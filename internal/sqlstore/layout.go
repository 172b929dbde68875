package sqlstore

import (
	"context"
	"errors"

	"github.com/cosid-go/store/driver"
)

// KeepLayout records the namespace's layout unless it has one, and returns
// its layout (see driver.LayoutKeeper). The layout is a cosid_meta row,
// layout/NS, written in the transaction that holds the namespace row (so
// a seal or purge does not pass it); a purge deletes it with the
// namespace.
func (s *Store) KeepLayout(ctx context.Context, want driver.Namespace, layout string) (string, error) {
	var have string
	err := s.nsTx(ctx, want, func(tx Querier) error {
		if _, err := s.namespace(ctx, tx, want, ""); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, s.q.LayoutKeep, "layout/"+want.Name, layout); err != nil {
			return err
		}
		return tx.QueryRow(ctx, s.q.LayoutRead, "layout/"+want.Name).Scan(&have)
	})
	return have, err
}

// Layout returns the namespace's layout, "" when it has none (see
// driver.LayoutKeeper).
func (s *Store) Layout(ctx context.Context, ns string) (string, error) {
	var have string
	err := s.db.QueryRow(ctx, s.q.LayoutRead, "layout/"+ns).Scan(&have)
	if errors.Is(err, ErrNoRows) {
		return "", nil
	}
	return have, err
}
