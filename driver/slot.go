package driver

import (
	"fmt"
	"hash/fnv"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SlotRecord is everything a driver keeps of one slot, and the slot rules
// of SlotLeaseStore and SlotSeeder as methods on it. A driver stores the fields (a ZooKeeper node,
// a table row), loads a record, asks it for a decision and writes back what
// the decision returns, all in one atomic read-modify-write of its own (a
// compare-and-set on a version, a transaction). The methods are pure: they
// read no clock and change nothing in place; now is the store's clock, read
// by the driver (ZooKeeper: the mtime of a write; SQL: the database's time).
//
// A slot never used is the zero SlotRecord, or, after a purge, a record
// whose only field is Fence, set to the store-wide fence floor (the highest
// slot fence any purge deleted, see Purger): its first term then gets a
// fence above every earlier one. A driver that keeps a slot timestamp
// floor across purges (Purger) sets NextFloor to it too. Written is 0 exactly for a record never
// stored.
// Durations and times are milliseconds; times are in the store's clock.
type SlotRecord struct {
	Owner       string // holder of the current term; "" when there is none
	Incarnation string // "" exactly when Owner is ""
	LastOwner   string // owner of the last term that ended: released, taken over (expired or reclaimed), or ended by a seed
	Fence       int64  // the current or last term's; 0 for a slot never used
	TTL         int64  // the current or last term's
	Tolerance   int64  // the namespace's, copied into each term
	Floor       int64  // the current or last term's first timestamp
	ExpiresMin  int64  // lower bound of ExpiresAt, written by each renewal
	CeilingMin  int64  // lower bound of Ceiling, written by each renewal
	NextFloor   int64  // the next term starts at least here
	Written     int64  // the store-clock time of the write that made this record
}

// ExpiresAt is when the holder stops issuing (docs/design.md, Slot leases):
// max(ExpiresMin, Written + TTL).
func (r SlotRecord) ExpiresAt() int64 { return TermExpiresAt(r.ExpiresMin, r.Written, r.TTL) }

// Ceiling bounds the term's timestamps: max(CeilingMin, ExpiresAt + Tolerance).
func (r SlotRecord) Ceiling() int64 { return TermCeiling(r.CeilingMin, r.ExpiresAt(), r.Tolerance) }

// Live reports whether a term holds the slot at now: it has an owner and
// has not expired (now < ExpiresAt).
func (r SlotRecord) Live(now int64) bool { return r.Owner != "" && now < r.ExpiresAt() }

// Holds reports whether the record's current term is the one l describes:
// same owner, incarnation and fence. It ignores expiry: a term nobody took
// over is still its holder's, to renew or release.
func (r SlotRecord) Holds(l Lease) bool {
	return r.Owner != "" && r.Owner == l.Owner && r.Incarnation == l.Incarnation && r.Fence == l.Fence
}

// SlotVerdict is what an acquire may do with one slot.
type SlotVerdict int

const (
	SlotBusy SlotVerdict = iota // another's live term, or unusable: pass over it
	SlotFree                    // never used, released, expired, or reclaimable: NewTerm
	SlotOwn                     // the requester's own live term: return it as it is
)

func (v SlotVerdict) String() string {
	switch v {
	case SlotFree:
		return "free"
	case SlotOwn:
		return "own"
	}
	return "busy"
}

// Judge decides what req may do with this slot at now, by the rules of
// SlotLeaseStore.Acquire ("Free", and a live term of the same owner and
// incarnation): SlotOwn, SlotFree or SlotBusy. A slot Acquire passes over
// (fence math.MaxInt64) is SlotBusy with an error saying why, so that the
// driver can name it in its ErrExhausted message.
func (r SlotRecord) Judge(req AcquireRequest, now int64) (SlotVerdict, error) {
	v := SlotBusy
	switch {
	case !r.Live(now):
		v = SlotFree
	case r.Owner != req.Owner:
	case r.Incarnation == req.Incarnation:
		return SlotOwn, nil
	case req.Reclaim:
		v = SlotFree
	}
	if v == SlotFree && r.Fence == math.MaxInt64 {
		return SlotBusy, fmt.Errorf("fence %d cannot grow", r.Fence)
	}
	return v, nil
}

// NewTerm is the record of req's new term, written at now, on a slot Judge
// found SlotFree: the new term of SlotLeaseStore.Acquire (fence, floor,
// times, LastOwner). A taken-over term's holder may have issued anything
// below its ceiling, hence the floor above it. The new term has no expiry
// lower bound and CeilingMin = Floor, which gives Ceiling >= Floor however
// short its ttl. Until it ends, NextFloor is its Floor: no later term
// starts lower.
func (r SlotRecord) NewTerm(req AcquireRequest, now int64) SlotRecord {
	n := SlotRecord{
		Owner:       req.Owner,
		Incarnation: req.Incarnation,
		LastOwner:   r.LastOwner,
		Fence:       r.Fence + 1,
		TTL:         req.TTL.Milliseconds(),
		Tolerance:   req.Namespace.Tolerance.Milliseconds(),
		Floor:       r.NextFloor,
		Written:     now,
	}
	if r.Owner != "" {
		n.Floor = max(n.Floor, r.Ceiling())
		n.LastOwner = r.Owner
	}
	n.CeilingMin = n.Floor
	n.NextFloor = n.Floor
	return n
}

// Renewed is SlotLeaseStore.Renew on a record, at now (its rules are
// there). The term's current ExpiresAt and Ceiling become its lower
// bounds, ExpiresMin and CeilingMin: that is how neither goes back when
// the store's clock does. On an error (ErrLeaseLost, or ErrInvalidArgument
// from Agrees) r is returned unchanged.
func (r SlotRecord) Renewed(l Lease, now int64) (SlotRecord, error) {
	if err := r.checkTerm(l); err != nil {
		return r, err
	}
	n := r
	n.ExpiresMin = r.ExpiresAt()
	n.CeilingMin = r.Ceiling()
	n.Written = now
	return n, nil
}

// Released is SlotLeaseStore.Release on a record, at now (its rules are
// there; the next floor is ReleasedFloor of the record's Floor and
// Ceiling). Fence, Floor, TTL and the bounds stay, for the next term and
// for tools.
func (r SlotRecord) Released(l Lease, used, now int64) (SlotRecord, error) {
	if err := r.checkTerm(l); err != nil {
		return r, err
	}
	n := r
	n.NextFloor = ReleasedFloor(used, r.Floor, r.Ceiling())
	n.LastOwner, n.Owner, n.Incarnation = r.Owner, "", ""
	n.Written = now
	return n, nil
}

func (r SlotRecord) checkTerm(l Lease) error {
	if !r.Holds(l) {
		return r.lost(l)
	}
	return r.Agrees(l)
}

// Agrees is the check of a lease's times against the term r holds that
// SlotLeaseStore.Renew states (and Release applies): nil, or an error
// wrapping ErrInvalidArgument that names the first field that disagrees.
// A lease rebuilt by hand with a field in the wrong unit, or moved, is
// refused rather than written into the slot.
func (r SlotRecord) Agrees(l Lease) error {
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	bad := func(field string, got any, why string, want any) error {
		return fmt.Errorf("lease of fence %d: %s %v %s %v: it is not a lease the store returned for this term: %w",
			l.Fence, field, got, why, want, ErrInvalidArgument)
	}
	switch {
	case l.TTL%time.Millisecond != 0 || ms(l.TTL) != r.TTL:
		return bad("TTL", l.TTL, "differs from the term's", time.Duration(r.TTL)*time.Millisecond)
	case l.Tolerance%time.Millisecond != 0 || ms(l.Tolerance) != r.Tolerance:
		return bad("Tolerance", l.Tolerance, "differs from the term's", time.Duration(r.Tolerance)*time.Millisecond)
	case l.Floor != r.Floor:
		return bad("Floor", l.Floor, "differs from the term's", r.Floor)
	case l.ExpiresAt > r.ExpiresAt():
		return bad("ExpiresAt", l.ExpiresAt, "is above the term's", r.ExpiresAt())
	case l.Ceiling > r.Ceiling():
		return bad("Ceiling", l.Ceiling, "is above the term's", r.Ceiling())
	case l.Ceiling < l.Floor:
		return bad("Ceiling", l.Ceiling, "is below the lease's Floor", l.Floor)
	case l.Ceiling < TermCeiling(0, l.ExpiresAt, r.Tolerance):
		return bad("Ceiling", l.Ceiling, "is below the lease's ExpiresAt + Tolerance", TermCeiling(0, l.ExpiresAt, r.Tolerance))
	}
	return nil
}

// Seeded is SlotSeeder.SeedSlot on a record, at now (its rules are there).
// changed is false when nothing needs writing; the driver then writes
// nothing. A slot never stored (Written 0) always changes: the seed creates
// it, as a released slot (Owner "", the seeded Fence and NextFloor).
func (r SlotRecord) Seeded(fence, nextFloor, now int64) (n SlotRecord, changed bool, err error) {
	if r.Live(now) {
		return r, false, fmt.Errorf("slot has a live term of %s (fence %d) until %d: %w",
			r.Owner, r.Fence, r.ExpiresAt(), ErrLocked)
	}
	n = r
	if r.Owner != "" {
		n.NextFloor = max(r.NextFloor, r.Ceiling())
		n.LastOwner, n.Owner, n.Incarnation = r.Owner, "", ""
	}
	n.Fence = max(n.Fence, fence)
	n.NextFloor = max(n.NextFloor, nextFloor)
	if n == r && r.Written != 0 {
		return r, false, nil
	}
	n.Written = now
	return n, true, nil
}

func (r SlotRecord) lost(l Lease) error {
	now := fmt.Sprintf("fence %d, released", r.Fence)
	if r.Owner != "" {
		now = fmt.Sprintf("fence %d of %s/%s", r.Fence, r.Owner, r.Incarnation)
	}
	return fmt.Errorf("slot no longer holds fence %d of %s/%s (it holds %s): %w",
		l.Fence, l.Owner, l.Incarnation, now, ErrLeaseLost)
}

// Lease is the record's current term as a Lease of slot n of namespace ns.
// The driver sets State.
func (r SlotRecord) Lease(ns string, n int) Lease {
	return Lease{
		Namespace:   ns,
		Slot:        n,
		Owner:       r.Owner,
		Incarnation: r.Incarnation,
		Fence:       r.Fence,
		TTL:         time.Duration(r.TTL) * time.Millisecond,
		Tolerance:   time.Duration(r.Tolerance) * time.Millisecond,
		Floor:       r.Floor,
		ExpiresAt:   r.ExpiresAt(),
		Ceiling:     r.Ceiling(),
	}
}

// Info is the record as slot n of a listing.
func (r SlotRecord) Info(n int) SlotInfo {
	return SlotInfo{
		Slot:        n,
		Owner:       r.Owner,
		Incarnation: r.Incarnation,
		LastOwner:   r.LastOwner,
		Fence:       r.Fence,
		TTL:         time.Duration(r.TTL) * time.Millisecond,
		Tolerance:   time.Duration(r.Tolerance) * time.Millisecond,
		Floor:       r.Floor,
		ExpiresAt:   r.ExpiresAt(),
		Ceiling:     r.Ceiling(),
		NextFloor:   r.NextFloor,
	}
}

// OwnerIndexLen is how many of an owner's last slots its index keeps.
const OwnerIndexLen = 8

// RememberSlot returns an owner's index with n put first (most recent
// first), without repeats, at most OwnerIndexLen long. index is not changed.
func RememberSlot(index []int, n int) []int {
	out := make([]int, 1, OwnerIndexLen)
	out[0] = n
	for _, m := range index {
		if m != n && len(out) < OwnerIndexLen {
			out = append(out, m)
		}
	}
	return out
}

// FirstSlots is what an acquire looks at first, in the order of
// SlotLeaseStore.Acquire: the owner's last slots (most recent first, slots
// at or above limit and repeats dropped), then the preferred slot (none
// when it is negative).
func FirstSlots(index []int, preferred, limit int) []int {
	var out []int
	for _, n := range append(slices.Clone(index), preferred) {
		if n >= 0 && n < limit && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// SearchStart is where an acquire's search for a free slot begins, after
// the owner's last slots and the preferred slot: a point derived from the
// owner key and the incarnation (FNV-1a), so that the acquirers of a fleet
// starting at once spread over the namespace, each finding a free slot near
// its own point. A search from one point shared by all (the lowest free
// slot) had them all race for the same slot, each losing to one of the
// others: that made a fleet's acquires cost the square of its size, and a
// write every acquirer had to win on one row or node.
func SearchStart(owner, incarnation string, limit int) int {
	if limit <= 1 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(owner))
	h.Write([]byte{0})
	h.Write([]byte(incarnation))
	return int(h.Sum64() % uint64(limit))
}

// SearchOrder yields every slot of a namespace of limit slots once, in the
// order of the search from start: start, start+1, ..., limit-1, then 0,
// ..., start-1.
func SearchOrder(start, limit int) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := range limit {
			if !yield((start + i) % limit) {
				return
			}
		}
	}
}

// Issuing reports whether the record holds a term, not released, whose
// holder may still issue timestamps at now: now < Ceiling. Only a new term
// of the slot keeps above them (NewTerm starts it at the ceiling), so a
// purge, which forgets the slot, must wait until the ceiling has passed.
func (r SlotRecord) Issuing(now int64) bool { return r.Owner != "" && now < r.Ceiling() }

// FloorAhead reports whether the record holds no term and its next term
// must start above now (NextFloor > now): a term released without saying
// which timestamps it used (its next floor is its ceiling), or one whose
// holder's clock ran ahead. A purge forgets the floor, and the next term
// would start at 0, below timestamps already issued, so a purge must wait
// until the store's clock has passed it.
func (r SlotRecord) FloorAhead(now int64) bool { return r.Owner == "" && now < r.NextFloor }

// PurgeRefusal is the error a purge gives while r, slot n of namespace ns,
// is Issuing or has its FloorAhead at now (nil otherwise): ErrLocked,
// naming the slot, its holder or last owner and the time at which it
// frees.
func (r SlotRecord) PurgeRefusal(ns string, n int, now int64) error {
	utc := func(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }
	switch {
	case r.Issuing(now):
		return fmt.Errorf("slot %s/%d: the term of %s/%s (fence %d) is not released and may issue timestamps until its ceiling %d (%s): %w",
			ns, n, r.Owner, r.Incarnation, r.Fence, r.Ceiling(), utc(r.Ceiling()), ErrLocked)
	case r.FloorAhead(now):
		return fmt.Errorf("slot %s/%d: its next term must start at or above %d (%s), ahead of the store's clock "+
			"(the last term, of %s, fence %d, was released without its last used timestamp, or issued ahead): "+
			"a purge would forget that floor until the clock passes it: %w",
			ns, n, r.NextFloor, utc(r.NextFloor), r.LastOwner, r.Fence, ErrLocked)
	}
	return nil
}

// PurgeSealedRefusal is the error a purge gives while the store holds
// sealed range keys or sealed namespaces (the rule and why: Purger), nil
// when it holds none: ErrSealed, naming them (at most eight of each, and
// how many).
func PurgeSealedRefusal(keys, namespaces []string) error {
	if len(keys) == 0 && len(namespaces) == 0 {
		return nil
	}
	var parts []string
	name := func(what string, list []string) {
		if len(list) == 0 {
			return
		}
		shown := list[:min(len(list), 8)]
		q := make([]string, len(shown))
		for i, v := range shown {
			q[i] = strconv.Quote(v)
		}
		more := ""
		if len(list) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(list)-len(shown))
		}
		parts = append(parts, fmt.Sprintf("%d sealed %s (%s%s)", len(list), what, strings.Join(q, ", "), more))
	}
	name("range keys", keys)
	name("namespaces", namespaces)
	return fmt.Errorf("the store holds %s: each moved to another store, and its seal is what makes an instance "+
		"still pointed here get ErrSealed instead of values or slots the other store hands out; "+
		"a purge would forget the seals, so nothing is deleted: %w", strings.Join(parts, " and "), ErrSealed)
}
