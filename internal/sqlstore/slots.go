package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cosid-go/store/driver"
)

// Acquire leases a slot in one transaction: the owner's last slots, the
// preferred slot, then the first free slot the database finds in the
// search order (driver.SearchOrder) from the acquire's own point
// (driver.SearchStart).
func (s *Store) Acquire(ctx context.Context, req driver.AcquireRequest) (driver.Lease, error) {
	var out driver.Lease
	var exhausted error
	err := s.nsTx(ctx, req.Namespace, func(tx Querier) error {
		// A transaction tried again (its COMMIT refused: SQLSTATE 25P03)
		// forgets what the attempt before found: that one's ErrExhausted
		// beside this one's committed term would hide the term.
		out, exhausted = driver.Lease{}, nil
		a := &acquire{s: s, tx: tx, req: req, ns: req.Namespace.Name}
		l, err := a.run(ctx)
		if errors.Is(err, errNoNamespace) {
			return err
		}
		if errors.Is(err, driver.ErrExhausted) {
			// Nothing but the namespace was written: it stays, as after
			// any Acquire.
			exhausted = err
			return nil
		}
		out = l
		return err
	})
	if err == nil && exhausted != nil {
		return driver.Lease{}, exhausted
	}
	if err != nil {
		return out, err
	}
	// The new term is remembered only now, committed: remembered at its
	// write, a transaction then aborted (a deadlock, a lock it could not
	// have) would leave this store expecting a fence the database never
	// had, and its next read of the slot (a Release, a listing, another
	// Acquire) would call the database gone back. A new term's ceiling_min
	// is its floor; a live term returned as it is has one at least there.
	s.sawSlot(out.Namespace, out.Slot, driver.MarkOf(driver.SlotRecord{Owner: out.Owner, Fence: out.Fence, CeilingMin: out.Floor}))
	return out, nil
}

// acquire is one Acquire's transaction.
type acquire struct {
	s     *Store
	tx    Querier
	req   driver.AcquireRequest
	ns    string
	now   int64
	index []int // the owner's index, read at the start
	floor int64 // the fence floor of the slots never used (Purge)
	// The search goes on from past a slot never used it lost (from,
	// when moved), rather than from its start again; passed are the
	// slots another acquire was creating when this one tried them, to be
	// waited for only if the search comes back to them.
	moved  bool
	from   int
	passed map[int]bool
	// marks are the store's slot marks taken before the acquire's first
	// read (slotguard.go): a slot it finds never used that this store saw
	// at a fence above the floor went back with its row.
	marks map[int]driver.SlotMark
	// corrupt are the slots whose rows do not check (slotRow.check): passed
	// over, as the contract asks, and named if no slot is free.
	corrupt map[int]error
	skips   int // corrupt rows left out of reads, counted at each read
}

// start is where the search for a free slot starts: the acquire's own
// point (driver.SearchStart), or past the last slot it lost.
func (a *acquire) start() int {
	if a.moved {
		return a.from
	}
	return driver.SearchStart(a.req.Owner, a.req.Incarnation, a.req.Namespace.Limit)
}

// judge applies the slot rule (docs/design.md, Slot leases) to a row (nil:
// never used). A slot whose
// fence cannot grow is busy; the search never offers it either.
func (a *acquire) judge(r *slotRow) driver.SlotVerdict {
	var rec driver.SlotRecord
	if r != nil {
		rec = r.rec
	}
	v, _ := rec.Judge(a.req, a.now)
	return v
}

func (a *acquire) run(ctx context.Context) (driver.Lease, error) {
	a.marks = a.s.slotMarks(a.ns)
	ns, err := a.s.namespace(ctx, a.tx, a.req.Namespace, a.req.Owner)
	if err != nil {
		return driver.Lease{}, err
	}
	a.now, a.index, a.floor = ns.now, ns.index, ns.floor
	first := driver.FirstSlots(a.index, a.req.Preferred, a.req.Namespace.Limit)
	rows, taken, err := a.lockFirst(ctx, first)
	if err != nil {
		return driver.Lease{}, err
	}
	// Another acquire holding the preferred slot's row (taken) is taking
	// it; a corrupt row is passed over.
	first = slices.DeleteFunc(first, func(n int) bool { return n == taken || a.corrupt[n] != nil })
	// A live term of this owner and incarnation is returned as it is, even
	// when the owner's index lists a free slot before it.
	for _, n := range first {
		if r := rows[n]; a.judge(r) == driver.SlotOwn {
			return r.lease(a.ns), nil
		}
	}
	for _, n := range first {
		if a.judge(rows[n]) == driver.SlotFree {
			if l, ok, err := a.take(ctx, n, rows[n]); err != nil || ok {
				return l, err
			}
		}
	}
	for _, free := range a.s.q.SlotFree {
		for {
			n, r, found, err := a.firstFree(ctx, free)
			if errors.Is(err, errCorruptFound) {
				return a.scan(ctx)
			}
			if err != nil || !found {
				if err != nil {
					return driver.Lease{}, err
				}
				break
			}
			if r != nil && a.judge(r) == driver.SlotOwn {
				return r.lease(a.ns), nil
			}
			l, ok, err := a.take(ctx, n, r)
			if err != nil || ok {
				return l, err
			}
			// Another acquire created slot n meanwhile, or is creating
			// it: look again, from the next slot, since every slot from
			// the start to n was found taken (a never used slot is the
			// first the search found; a row before it was judged).
			if r == nil {
				a.moved, a.from = true, (n+1)%a.req.Namespace.Limit
			}
		}
	}
	return driver.Lease{}, a.exhausted(ctx)
}

// errCorruptFound ends a search statement's pass whose slot's row does not
// check: the statement would find it first again, so the search goes on
// in Go (acquire.scan).
var errCorruptFound = errors.New("a corrupt slot row found first")

// scan is the search for a free slot past corrupt rows, which the search
// statements cannot pass over (they judge a row by its stored expiry,
// and a corrupt row's may say free): the namespace's rows are read, in
// one statement, and judged here in the search order. A free row is then
// locked without waiting, as the search statements lock (a row another
// acquire holds is passed over: two acquirers never wait on each other,
// Dialect.FreeSearch), and judged again; a slot created meanwhile fails
// take's insert, and the scan goes on. This path is rare (a row edited by
// hand or by a broken writer), so it costs a read of every row.
func (a *acquire) scan(ctx context.Context) (driver.Lease, error) {
	rows, err := a.readRows(ctx, a.s.q.SlotList, a.ns)
	if err != nil {
		return driver.Lease{}, err
	}
	limit := a.req.Namespace.Limit
	start := driver.SearchStart(a.req.Owner, a.req.Incarnation, limit)
	// Round 0 tries every slot; round 1 the slots another acquire was
	// creating, waiting for it now (take); round 2 the free rows another
	// transaction held, locked as the search statements' last pass locks
	// (a lock still held aborts the transaction, which is tried again):
	// ErrExhausted only once every slot was judged.
	held := map[int]bool{}
	for round := range 3 {
		for i := range limit {
			n := (start + i) % limit
			if a.corrupt[n] != nil || (round == 1) != a.passed[n] || (round == 2) != held[n] {
				continue
			}
			r := rows[n]
			if r != nil && a.s.d.ForUpdate != "" && a.judge(r) == driver.SlotFree {
				tail := a.s.q.SlotsTailSkip
				if round == 2 {
					tail = a.s.q.SlotsTailLast
				}
				locked, err := a.lockRows(ctx, []int{n}, tail)
				if err != nil {
					return driver.Lease{}, err
				}
				if r = locked[n]; r == nil {
					held[n] = a.corrupt[n] == nil // else it does not check now
					continue
				}
			}
			switch a.judge(r) {
			case driver.SlotOwn:
				return r.lease(a.ns), nil
			case driver.SlotFree:
				if l, ok, err := a.take(ctx, n, r); err != nil || ok {
					return l, err
				}
			}
		}
	}
	return driver.Lease{}, a.exhausted(ctx)
}

// exhausted is the error of a search that found no free slot. The search
// statements pass over a slot whose fence cannot grow, so on this rare path
// the namespace's rows are read once more to name them, as the contract asks.
func (a *acquire) exhausted(ctx context.Context) error {
	rows, err := a.readRows(ctx, a.s.q.SlotList, a.ns)
	if err != nil {
		return err
	}
	var why []string
	for _, n := range slices.Sorted(maps.Keys(rows)) {
		if _, err := rows[n].rec.Judge(a.req, a.now); err != nil {
			why = append(why, fmt.Sprintf("slot %d: %v", n, err))
		}
	}
	for _, n := range slices.Sorted(maps.Keys(a.corrupt)) {
		if rows[n] == nil && n < a.req.Namespace.Limit {
			why = append(why, a.corrupt[n].Error())
		}
	}
	if len(why) > 0 {
		return fmt.Errorf("no free slot among %d; passed over %s: %w", a.req.Namespace.Limit, strings.Join(why, "; "), driver.ErrExhausted)
	}
	return fmt.Errorf("all %d slots are held: %w", a.req.Namespace.Limit, driver.ErrExhausted)
}

// lockFirst reads, and locks, the slots an acquire looks at first
// (driver.FirstSlots). The owner's own slots are locked waiting, so that
// its live term is found whoever holds the row for a moment. The
// preferred slot, when not the owner's, is passed over while another
// transaction holds its row (taken is then its number, else -1): that
// acquire is taking it, and waiting would queue a fleet whose instances
// all prefer one slot (slot 0 by default) behind each other, each holding
// the row until its transaction ends. Where rows are locked, the
// preferred slot is first read without a lock: held by another's live term
// (in a fleet, slot 0 for all but one), it is passed over having cost
// one read, where a lock would have been a write to the row by every
// acquire of the fleet, and the rows it hides a second read.
func (a *acquire) lockFirst(ctx context.Context, first []int) (rows map[int]*slotRow, taken int, err error) {
	own := slices.DeleteFunc(slices.Clone(first), func(n int) bool { return !slices.Contains(a.index, n) })
	if rows, err = a.lockRows(ctx, own, a.s.q.SlotsTail); err != nil || len(own) == len(first) {
		return rows, -1, err
	}
	pref := first[len(first)-1] // FirstSlots puts it last
	if a.s.d.ForUpdate != "" {
		read, err := a.lockRows(ctx, []int{pref}, a.s.q.SlotsTailRead)
		if err != nil {
			return nil, -1, err
		}
		// Busy is busy whatever happens next: nothing is written from
		// this read. Free or own, the slot is read again, locked.
		if r := read[pref]; r != nil && a.judge(r) == driver.SlotBusy {
			rows[pref] = r
			return rows, -1, nil
		}
	}
	skip, err := a.lockRows(ctx, []int{pref}, a.s.q.SlotsTailSkip)
	if err != nil {
		return nil, -1, err
	}
	if r := skip[pref]; r != nil {
		rows[pref] = r
		return rows, -1, nil
	}
	var exists int64
	if err := a.tx.QueryRow(ctx, a.s.q.SlotExists, a.ns, pref).Scan(&exists); err != nil || exists == 0 {
		return rows, -1, err // never used
	}
	return rows, pref, nil
}

// lockRows reads the listed slots with the read's ending tail (SlotsTail
// locks them, Dialect.ForUpdate).
func (a *acquire) lockRows(ctx context.Context, slots []int, tail string) (map[int]*slotRow, error) {
	if len(slots) == 0 {
		return map[int]*slotRow{}, nil
	}
	var q strings.Builder
	q.WriteString(a.s.q.SlotsHead)
	args := []any{a.ns}
	for i, n := range slots {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(a.s.d.Placeholder(i + 2))
		args = append(args, n)
	}
	q.WriteString(tail)
	return a.readRows(ctx, q.String(), args...)
}

// readRows runs a query of slot rows in the acquire's transaction: a
// corrupt row is left out and recorded in a.corrupt.
func (a *acquire) readRows(ctx context.Context, query string, args ...any) (map[int]*slotRow, error) {
	return a.s.readRows(ctx, a.tx, a.ns, func(slot int, err error) {
		if a.corrupt == nil {
			a.corrupt = map[int]error{}
		}
		a.corrupt[slot] = err
		a.skips++
	}, query, args...)
}

// readRows runs a query of slot rows and accepts each. A row that does
// not check fails the read, or, when pass is not nil, is left out and
// given to pass; a row behind what this store saw always fails it.
func (s *Store) readRows(ctx context.Context, q Querier, ns string, pass func(slot int, err error), query string, args ...any) (map[int]*slotRow, error) {
	marks := s.slotMarks(ns)
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int]*slotRow{}
	for rows.Next() {
		r := &slotRow{}
		if err := rows.Scan(r.dest()...); err != nil {
			return nil, err
		}
		if corrupt, err := s.accept(ns, marks[r.slot], r); err != nil {
			if !corrupt || pass == nil {
				return nil, err
			}
			pass(r.slot, err)
			continue
		}
		out[r.slot] = r
	}
	return out, rows.Err()
}

// firstFree finds the first slot in the search order (driver.SearchStart) this
// request may take with statement free (one of SlotFree): a row, or, when
// r is nil, a slot never used.
func (a *acquire) firstFree(ctx context.Context, free string) (n int, r *slotRow, found bool, err error) {
	limit := a.req.Namespace.Limit
	start := a.start()
	// The first slot never used comes first: a row the search may take
	// lies before it in the search order or is not taken, so the rows are
	// read only up to it, not the whole namespace (in a fleet spread over
	// it, a gap is near; reading every row of the namespace per Acquire,
	// many of them written by transactions still open, made a fleet's
	// cost grow with the square of its size).
	var gap int64
	var freeBefore bool
	end := limit // the search order's positions read for rows: [0, end)
	err = a.tx.QueryRow(ctx, a.s.q.SlotGap, a.ns, limit, start,
		a.now, a.req.Owner, a.req.Incarnation, a.req.Reclaim).Scan(&gap, &freeBefore)
	switch {
	case errors.Is(err, ErrNoRows):
	case err != nil:
		return 0, nil, false, err
	case !freeBefore:
		// No row before the gap that the search could take: the gap is
		// the first free slot (SlotGapFree).
		return int(gap), nil, true, nil
	default:
		end = (int(gap) + limit - start) % limit
	}
	// Positions [0, end) are the slots [start, start+end), wrapping past
	// limit to [0, start+end-limit).
	was := a.skips
	rows, err := a.readRows(ctx, free, a.ns, limit, a.now,
		a.req.Owner, a.req.Incarnation, a.req.Reclaim, start, min(start+end, limit), max(start+end-limit, 0))
	if err != nil {
		return 0, nil, false, err
	}
	if a.skips > was {
		return 0, nil, false, errCorruptFound
	}
	for _, row := range rows { // one at most (LIMIT 1)
		n, r, found = row.slot, row, true
	}
	if !found && end < limit {
		n, found = int(gap), true
	}
	return n, r, found, nil
}

// take starts a new term in slot n (old is its row, nil if never used). It
// reports false when the slot was created by another acquire meanwhile.
func (a *acquire) take(ctx context.Context, n int, old *slotRow) (driver.Lease, bool, error) {
	var prev driver.SlotRecord
	var oldVersion int64
	if old != nil {
		prev, oldVersion = old.rec, old.version
	} else {
		// A slot never used since the last purge continues above it.
		prev.Fence = a.floor
		if seen := a.marks[n].Fence(); seen > prev.Fence {
			return driver.Lease{}, false, wentBack(a.ns, n, fmt.Sprintf("no row (fence %d, the purges' floor), not fence %d", prev.Fence, seen))
		}
		if v, err := prev.Judge(a.req, a.now); v != driver.SlotFree {
			// The floor is store-wide: no slot never used can start a
			// term, and every used one was judged before.
			return driver.Lease{}, false, fmt.Errorf("slot %d: %v: %w", n, err, driver.ErrExhausted)
		}
	}
	r := &slotRow{slot: n, rec: prev.NewTerm(a.req, a.now)}
	if old == nil && a.s.q.SlotCreate != "" {
		ok, busy, err := a.s.create(ctx, a.tx, a.ns, r, a.req.Owner, a.index, !a.passed[n])
		if err != nil || !ok {
			if busy {
				// Another acquire is creating it: passed over, and
				// tried again, waiting, only if the search comes back
				// to it (a claim held by anything else must not hide
				// the slot for good).
				if a.passed == nil {
					a.passed = map[int]bool{}
				}
				a.passed[n] = true
			}
			return driver.Lease{}, false, err
		}
		return r.lease(a.ns), true, nil // remembered once committed (Acquire)
	}
	ok, err := a.s.write(ctx, a.tx, a.ns, r, oldVersion, old == nil)
	if err != nil || !ok {
		return driver.Lease{}, false, err
	}
	if old == nil {
		if err := a.s.recordUsed(ctx, a.tx, a.ns, n); err != nil {
			return driver.Lease{}, false, err
		}
	}
	if err := a.s.remember(ctx, a.tx, a.ns, a.req.Owner, a.index, n); err != nil {
		return driver.Lease{}, false, err
	}
	// Its fence is remembered once the transaction commits (Acquire).
	return r.lease(a.ns), true, nil
}

// remember writes owner's index idx with n put first (driver.RememberSlot).
func (s *Store) remember(ctx context.Context, q Querier, ns, owner string, idx []int, n int) error {
	_, err := q.Exec(ctx, s.q.OwnerWrite, ns, owner, indexText(idx, n))
	return err
}

// indexText is owner index idx with n put first (driver.RememberSlot), as
// stored: "3,1,0".
func indexText(idx []int, n int) string {
	var list []string
	for _, m := range driver.RememberSlot(idx, n) {
		list = append(list, strconv.Itoa(m))
	}
	return strings.Join(list, ",")
}

func sealedErr(ns string) error {
	return fmt.Errorf("namespace %q is sealed: %w", ns, driver.ErrSealed)
}

// Renew continues l's term, even after its expiry if nobody took the slot:
// in one transaction, the namespace row read first (a sealed namespace
// gives ErrSealed; see Dialect.SealLock and ForShare), then a read and a compare-and-set on the
// slot row's version.
func (s *Store) Renew(ctx context.Context, l driver.Lease) (driver.Lease, error) {
	var out driver.Lease
	var wrote driver.SlotRecord
	wasSealed := s.sawSealed(s.sealedNs, l.Namespace)
	err := s.db.Tx(ctx, func(tx Querier) error {
		var sealed bool
		err := tx.QueryRow(ctx, s.q.NamespaceSealed, l.Namespace).Scan(&sealed)
		switch {
		case errors.Is(err, ErrNoRows):
			// Purged, or deleted by hand with its seal, if any: the term
			// cannot tell it is still allowed to grow.
			return fmt.Errorf("namespace %q has no row: %w", l.Namespace, driver.ErrLeaseLost)
		case err != nil:
			return err
		}
		if err := s.guardSealedNs(l.Namespace, wasSealed, sealed); err != nil {
			return err
		}
		if sealed {
			return sealedErr(l.Namespace)
		}
		for {
			r, now, err := s.current(ctx, tx, l)
			if err != nil {
				return err
			}
			old := r.version
			if r.rec, err = r.rec.Renewed(l, now); err != nil {
				return err
			}
			ok, err := s.write(ctx, tx, l.Namespace, r, old, false)
			if err != nil {
				return err
			}
			if ok {
				out, wrote = r.lease(l.Namespace), r.rec
				return nil
			}
			// Written by someone else in between: read again.
		}
	})
	if err != nil {
		return l, err
	}
	s.sawSlot(l.Namespace, l.Slot, driver.MarkOf(wrote)) // committed (Acquire)
	return out, nil
}

// SealNamespace seals namespace ns (see driver.SlotLeaseStore), creating it
// sealed (limit 0) if it is missing. It waits for the Acquires and Renews
// under way (Dialect.SealLock, or the row they share-locked), and those
// after it see the seal.
func (s *Store) SealNamespace(ctx context.Context, ns string) error {
	err := s.db.Tx(ctx, func(tx Querier) error {
		if s.d.SealLock != "" {
			if _, err := tx.Exec(ctx, s.d.Rewrite(s.d.SealLock)); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, s.q.NamespaceSeal, ns)
		return err
	})
	if err != nil {
		return err
	}
	// Remembered only now, committed (as a fence, see Acquire).
	return s.guardSealedNs(ns, false, true)
}

// Release ends l's term; used < 0 means unknown.
func (s *Store) Release(ctx context.Context, l driver.Lease, used int64) error {
	for {
		r, now, err := s.current(ctx, s.db, l)
		if err != nil {
			return err
		}
		old := r.version
		if r.rec, err = r.rec.Released(l, used, now); err != nil {
			return err
		}
		ok, err := s.write(ctx, s.db, l.Namespace, r, old, false)
		if err != nil {
			return err
		}
		if ok {
			s.sawSlot(l.Namespace, l.Slot, driver.MarkOf(r.rec))
			return nil
		}
	}
}

// current reads l's slot and returns it if it still holds l's term.
func (s *Store) current(ctx context.Context, q Querier, l driver.Lease) (*slotRow, int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	r, now, err := s.readSlot(ctx, q, l.Namespace, l.Slot)
	if err != nil {
		return nil, 0, err
	}
	if r == nil || !r.rec.Holds(l) {
		return nil, 0, fmt.Errorf("slot no longer holds fence %d of %s/%s: %w",
			l.Fence, l.Owner, l.Incarnation, driver.ErrLeaseLost)
	}
	return r, now, nil
}

// Namespaces lists every namespace, sorted by name.
func (s *Store) Namespaces(ctx context.Context) ([]driver.Namespace, error) {
	rows, err := s.db.Query(ctx, s.q.NamespaceList)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []driver.Namespace{}
	for rows.Next() {
		var n driver.Namespace
		var limit, tol int64
		if err := rows.Scan(&n.Name, &limit, &tol, &n.Sealed); err != nil {
			return nil, err
		}
		n.Limit, n.Tolerance = int(limit), time.Duration(tol)*time.Millisecond
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Slots lists the used slots of a namespace by slot number.
func (s *Store) Slots(ctx context.Context, ns string) ([]driver.SlotInfo, error) {
	var limit, tol, now int64
	err := s.db.QueryRow(ctx, s.q.NamespaceRead, ns).Scan(&limit, &tol, &now)
	if errors.Is(err, ErrNoRows) {
		return nil, fmt.Errorf("no namespace %q: %w", ns, driver.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	rows, err := s.readRows(ctx, s.db, ns, nil, s.q.SlotList, ns)
	if err != nil {
		return nil, err
	}
	out := make([]driver.SlotInfo, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.rec.Info(r.slot))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slot < out[j].Slot })
	return out, nil
}
