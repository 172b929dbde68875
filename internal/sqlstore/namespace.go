package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cosid-go/store/driver"
)

// errNoNamespace ends a transaction that found no row for its namespace:
// nsTx creates the row in a transaction of its own and runs it again.
var errNoNamespace = errors.New("no namespace row")

// nsTx runs fn, a transaction that reads its namespace with namespace, in
// a transaction; when the namespace has no row, it creates it first in a
// short transaction of its own (createNamespace) and runs fn again.
// Creating it inside fn's transaction, as an upsert each time, would cost
// every Acquire a round trip, and a fleet starting at once on a new
// namespace would queue behind the first acquirer's whole transaction,
// whose uncommitted row every other insert waits for.
func (s *Store) nsTx(ctx context.Context, want driver.Namespace, fn func(Querier) error) error {
	for {
		wasSealed := s.sawSealed(s.sealedNs, want.Name)
		err := s.db.Tx(ctx, fn)
		if !errors.Is(err, errNoNamespace) {
			return err
		}
		if wasSealed {
			// Gone without a purge (which clears the guard): created
			// afresh it would be unsealed.
			return s.guardSealedNs(want.Name, true, false)
		}
		if err := s.createNamespace(ctx, want); err != nil {
			return err
		}
	}
}

// createNamespace creates the namespace's row unless it has one. Where
// the database writes in WITH it is one statement of its own
// (NamespaceCreateOne), committed as it ends: a fleet starting at once on
// a new namespace has many acquirers find no row, and each one's insert
// waits for the first one's to commit; in a transaction that was three
// more round trips of the first, each a wait for a busy server.
func (s *Store) createNamespace(ctx context.Context, want driver.Namespace) error {
	if s.q.NamespaceCreateOne != "" {
		return RetryAborted(ctx, func(err error) bool { return s.d.Kind(err) == Aborted }, func() error {
			var created int64
			var slot *int64
			var was bool
			err := s.db.QueryRow(ctx, s.q.NamespaceCreateOne, want.Name, want.Limit, want.Tolerance.Milliseconds()).Scan(&created, &slot, &was)
			if err != nil || slot == nil || was {
				return err
			}
			// Not written: the slot's row or record of use is there
			// and the namespace row is not.
			return noNamespaceRow(want.Name, *slot)
		})
	}
	return s.db.Tx(ctx, func(q Querier) error {
		created, err := q.Exec(ctx, s.q.NamespaceCreate, want.Name, want.Limit, want.Tolerance.Milliseconds())
		if err != nil || created == 0 {
			return err
		}
		// Slot rows are written under their namespace row and a purge
		// deletes both: a slot row or record of use beside a missing
		// namespace row means the row was deleted by hand, and with it
		// maybe a seal. Creating it afresh would unseal the namespace
		// silently.
		var slot int64
		switch err := q.QueryRow(ctx, s.q.NamespaceSlot, want.Name).Scan(&slot); {
		case err == nil:
			return noNamespaceRow(want.Name, slot)
		case !errors.Is(err, ErrNoRows):
			return err
		}
		return nil
	})
}

// noNamespaceRow is the error of a namespace whose row is missing beside
// a slot of it that has a row or was used.
func noNamespaceRow(ns string, slot int64) error {
	return fmt.Errorf("namespace %q has no row but its slot %d has one or was used (deleted by hand?): %w", ns, slot, driver.ErrCorrupt)
}

// nsState is what a transaction reads with its namespace's row.
type nsState struct {
	now   int64 // the store's time
	index []int // the owner's index (owner's last slots, most recent first)
	floor int64 // the fence floor of slots never used (Purge)
}

// namespace reads namespace want's row, owner's index in it and the fence
// floor, checks that the namespace is not sealed and then its settings. No
// row gives errNoNamespace (see nsTx). It is q's transaction's first
// read: a seal waits for the slot writes that follow until the
// transaction ends, or they see it (Dialect.SealLock, or the row's share
// lock, Dialect.ForShare).
func (s *Store) namespace(ctx context.Context, q Querier, want driver.Namespace, owner string) (nsState, error) {
	var limit, tol int64
	var sealed bool
	var index, floor *string
	var st nsState
	wasSealed := s.sawSealed(s.sealedNs, want.Name)
	err := q.QueryRow(ctx, s.q.NamespaceLock, want.Name, owner).Scan(&limit, &tol, &sealed, &st.now, &index, &floor)
	switch {
	case errors.Is(err, ErrNoRows):
		return st, errNoNamespace
	case err != nil:
		return st, err
	}
	if err := s.guardSealedNs(want.Name, wasSealed, sealed); err != nil {
		return st, err
	}
	switch {
	case sealed:
		return st, sealedErr(want.Name)
	case limit != int64(want.Limit) || tol != want.Tolerance.Milliseconds():
		return st, fmt.Errorf("namespace has limit %d and tolerance %v, not limit %d and tolerance %v: %w",
			limit, time.Duration(tol)*time.Millisecond, want.Limit, want.Tolerance, driver.ErrConfigMismatch)
	}
	if st.floor, err = parseFenceFloor(floor); err != nil {
		return st, err
	}
	if index != nil {
		st.index, err = parseIndex(want.Name, owner, *index)
	}
	return st, err
}

// parseIndex reads an owner index, "3,1,0".
func parseIndex(ns, owner, list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("owner index %s/%s is %q, not a list of slots: %w", ns, owner, list, driver.ErrCorrupt)
		}
		out = append(out, n)
	}
	return out, nil
}
