package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

func init() {
	register(&command{name: "inspect", run: runInspect, usage: `Usage: storectl inspect [--json] STORE FLAGS

Shows the store's identity, and lists every range key (next value, sealed),
every namespace (limit, tolerance, sealed, ID layout)
with its used slots, and every lock with its holder and waiters. Slot times are
printed in UTC and relative to now; a slot is live while now, on this machine's
clock, is before its expiry. A capability the driver lacks is shown as
"unsupported". The store must exist: inspect creates nothing.

  --json   print one JSON document instead (schema 1):
           {"schema", "id" (the store's identity, or null), "now", "nowUTC",
            "keys": [{"key", "next", "sealed"}],
            "namespaces": [{"name", "limit", "toleranceMs", "sealed", "layout" (once recorded), "slots": [{"slot",
              "state" (live|expired|released), "owner", "incarnation", "lastOwner",
              "fence", "ttlMs", "toleranceMs", "floor", "expiresAt", "ceiling",
              "nextFloor", and each time again as RFC 3339: "floorUTC", ...}]}],
            "locks": [{"name", "holder": {"owner", "fence"} or null,
              "waiters": [{"owner", "fence"}]}],
            "locksSealed": true once the locks moved to another store (else left out),
            "unsupported": ["ranges" | "slots" | "locks"]}
           Times are milliseconds since the Unix epoch; a section the driver
           does not support is null and named in "unsupported".

` + storeFlagsUsage})
}

func runInspect(ctx context.Context, e *env, args []string) error {
	var asJSON bool
	st, desc, err := openWithFlags("inspect", args, func(fs *flag.FlagSet) { fs.BoolVar(&asJSON, "json", false, "print JSON") })
	if err != nil {
		return err
	}
	defer st.Close()
	r, err := survey(ctx, st, e.now().UnixMilli())
	if err != nil {
		return err
	}
	if r.ID, r.idNote, err = identity(ctx, st); err != nil {
		return err
	}
	if _, err := rawAs(st, func(bm driver.BackupMarker) (err error) {
		r.Backup, err = bm.BackupMark(ctx)
		return err
	}); err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	r.writeText(e.stdout, desc)
	return nil
}

// report is everything inspect shows; its JSON form is the --json schema.
// A section is nil when the driver lacks the capability.
type report struct {
	Schema      int          `json:"schema"`
	ID          *string      `json:"id"`
	Now         int64        `json:"now"`
	NowUTC      string       `json:"nowUTC"`
	Keys        []keyReport  `json:"keys"`
	Namespaces  []nsReport   `json:"namespaces"`
	Locks       []lockReport `json:"locks"`
	Unsupported []string     `json:"unsupported"`
	// Backup is the mark of a backup copy (driver.BackupMarker), omitted
	// for a live store.
	Backup string `json:"backup,omitempty"`
	// LocksSealed: the store's locks moved to another store
	// (driver.LockSealer); omitted when they did not.
	LocksSealed bool `json:"locksSealed,omitempty"`

	idNote string // why ID is nil
}

// identity reads the store's identity; a driver without the capability, or
// a store made before identities existed, has none, and note says so.
func identity(ctx context.Context, st *store.Store) (id *string, note string, err error) {
	v, err := st.ID(ctx)
	switch {
	case err == nil:
		return &v, "", nil
	case errors.Is(err, store.ErrUnsupported):
		return nil, "unsupported by this driver", nil
	case errors.Is(err, store.ErrNotFound):
		return nil, "none yet (made before identities existed; its next open by init or a program gives it one)", nil
	}
	return nil, "", err
}

type keyReport struct {
	Key    string `json:"key"`
	Next   int64  `json:"next"`
	Sealed bool   `json:"sealed"`
}

type nsReport struct {
	Name        string       `json:"name"`
	Limit       int          `json:"limit"`
	ToleranceMs int64        `json:"toleranceMs"`
	Sealed      bool         `json:"sealed"`           // no new term, no renewal (migrated out)
	Layout      string       `json:"layout,omitempty"` // of its Snowflake IDs, once a generator recorded it
	Slots       []slotReport `json:"slots"`
}

type slotReport struct {
	Slot         int    `json:"slot"`
	State        string `json:"state"`
	Owner        string `json:"owner"`
	Incarnation  string `json:"incarnation"`
	LastOwner    string `json:"lastOwner"`
	Fence        int64  `json:"fence"`
	TTLMs        int64  `json:"ttlMs"`
	ToleranceMs  int64  `json:"toleranceMs"`
	Floor        int64  `json:"floor"`
	ExpiresAt    int64  `json:"expiresAt"`
	Ceiling      int64  `json:"ceiling"`
	NextFloor    int64  `json:"nextFloor"`
	FloorUTC     string `json:"floorUTC"`
	ExpiresAtUTC string `json:"expiresAtUTC"`
	CeilingUTC   string `json:"ceilingUTC"`
	NextFloorUTC string `json:"nextFloorUTC"`

	info store.SlotInfo // as listed, for the safety checks
}

type lockReport struct {
	Name    string         `json:"name"`
	Holder  *waiterReport  `json:"holder"`
	Waiters []waiterReport `json:"waiters"`
}

type waiterReport struct {
	Owner string `json:"owner"`
	Fence int64  `json:"fence"`
}

// survey reads the whole store. ErrUnsupported leaves a section nil; any
// other error ends the survey.
func survey(ctx context.Context, st *store.Store, now int64) (*report, error) {
	r := &report{Schema: 1, Now: now, NowUTC: utc(now), Unsupported: []string{}}
	var err error
	if r.Keys, err = surveyKeys(ctx, st); errors.Is(err, store.ErrUnsupported) {
		r.Unsupported = append(r.Unsupported, "ranges")
	} else if err != nil {
		return nil, err
	}
	if r.Namespaces, err = surveySlots(ctx, st, now); errors.Is(err, store.ErrUnsupported) {
		r.Unsupported = append(r.Unsupported, "slots")
	} else if err != nil {
		return nil, err
	}
	if r.Locks, err = surveyLocks(ctx, st); errors.Is(err, store.ErrUnsupported) {
		r.Unsupported = append(r.Unsupported, "locks")
	} else if err != nil {
		return nil, err
	}
	if r.LocksSealed, err = st.Locks().Sealed(ctx); errors.Is(err, store.ErrUnsupported) {
		err = nil
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

func surveyKeys(ctx context.Context, st *store.Store) ([]keyReport, error) {
	out := []keyReport{}
	for k, err := range st.Ranges().All(ctx) {
		if err != nil {
			return nil, err
		}
		out = append(out, keyReport{Key: k.Key, Next: k.Next, Sealed: k.Sealed})
	}
	return out, nil
}

func surveySlots(ctx context.Context, st *store.Store, now int64) ([]nsReport, error) {
	nss, err := st.Slots().Namespaces(ctx)
	if err != nil {
		return nil, err
	}
	out := []nsReport{}
	for _, ns := range nss {
		infos, err := st.Slots().List(ctx, ns.Name)
		if err != nil && !errors.Is(err, store.ErrNotFound) { // gone since listed: no slots
			return nil, err
		}
		nr := nsReport{Name: ns.Name, Limit: ns.Limit, ToleranceMs: ns.Tolerance.Milliseconds(), Sealed: ns.Sealed, Slots: []slotReport{}}
		nr.Layout, err = st.Slots().Layout(ctx, ns.Name)
		if err != nil && !errors.Is(err, store.ErrUnsupported) {
			return nil, err
		}
		for _, s := range infos {
			nr.Slots = append(nr.Slots, slotReport{
				Slot:         s.Slot,
				State:        slotState(s, now),
				Owner:        s.Owner,
				Incarnation:  s.Incarnation,
				LastOwner:    s.LastOwner,
				Fence:        s.Fence,
				TTLMs:        s.TTL.Milliseconds(),
				ToleranceMs:  s.Tolerance.Milliseconds(),
				Floor:        s.Floor,
				ExpiresAt:    s.ExpiresAt,
				Ceiling:      s.Ceiling,
				NextFloor:    s.NextFloor,
				FloorUTC:     utc(s.Floor),
				ExpiresAtUTC: utc(s.ExpiresAt),
				CeilingUTC:   utc(s.Ceiling),
				NextFloorUTC: utc(s.NextFloor),
				info:         s,
			})
		}
		out = append(out, nr)
	}
	return out, nil
}

func surveyLocks(ctx context.Context, st *store.Store) ([]lockReport, error) {
	out := []lockReport{}
	err := eachLock(ctx, st, func(name string, ws []store.Waiter, err error) error {
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		lr := lockReport{Name: name, Waiters: []waiterReport{}}
		for i, w := range ws {
			wr := waiterReport{Owner: w.Owner, Fence: w.Fence}
			if i == 0 {
				lr.Holder = &wr
			} else {
				lr.Waiters = append(lr.Waiters, wr)
			}
		}
		out = append(out, lr)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (r *report) writeText(w io.Writer, desc string) {
	id := r.idNote
	if r.ID != nil {
		id = *r.ID
	}
	fmt.Fprintf(w, "store  %s\nid     %s\nnow    %s\n", desc, id, utc(r.Now))
	if r.Backup != "" {
		fmt.Fprintf(w, "backup %s: hands out nothing until storectl restore raises it\n", r.Backup)
	}

	fmt.Fprintln(w)
	switch {
	case r.Keys == nil:
		fmt.Fprintln(w, "RANGES: unsupported by this driver")
	case len(r.Keys) == 0:
		fmt.Fprintln(w, "RANGES: none")
	default:
		fmt.Fprintf(w, "RANGES (%s)\n", count(len(r.Keys), "key"))
		tw := table(w)
		fmt.Fprintln(tw, "KEY\tNEXT\tSEALED")
		for _, k := range r.Keys {
			fmt.Fprintf(tw, "%s\t%d\t%s\n", k.Key, k.Next, yesNo(k.Sealed))
		}
		tw.Flush()
	}

	fmt.Fprintln(w)
	switch {
	case r.Namespaces == nil:
		fmt.Fprintln(w, "SLOTS: unsupported by this driver")
	case len(r.Namespaces) == 0:
		fmt.Fprintln(w, "SLOTS: no namespaces")
	default:
		fmt.Fprintf(w, "SLOTS (%s)\n", count(len(r.Namespaces), "namespace"))
		for _, ns := range r.Namespaces {
			sealed := ""
			if ns.Sealed {
				sealed = ", sealed"
			}
			if ns.Layout != "" {
				sealed += ", ID layout " + ns.Layout
			}
			fmt.Fprintf(w, "namespace %s: limit %d, tolerance %v%s, %s used\n",
				ns.Name, ns.Limit, time.Duration(ns.ToleranceMs)*time.Millisecond, sealed, count(len(ns.Slots), "slot"))
			if len(ns.Slots) == 0 {
				continue
			}
			tw := table(w)
			fmt.Fprintln(tw, "  SLOT\tSTATE\tOWNER\tINCARNATION\tLAST OWNER\tFENCE\tTTL\tFLOOR\tEXPIRES\tCEILING\tNEXT FLOOR")
			for _, s := range ns.Slots {
				expires, ceiling := stamp(s.ExpiresAt, r.Now), stamp(s.Ceiling, r.Now)
				if s.State == stateReleased {
					// Without a term they mean nothing: the next floor is what counts.
					expires, ceiling = "-", "-"
				}
				fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%d\t%v\t%s\t%s\t%s\t%s\n",
					s.Slot, s.State, dash(s.Owner), dash(s.Incarnation), dash(s.LastOwner), s.Fence,
					time.Duration(s.TTLMs)*time.Millisecond,
					stamp(s.Floor, r.Now), expires, ceiling, stamp(s.NextFloor, r.Now))
			}
			tw.Flush()
		}
	}

	fmt.Fprintln(w)
	switch {
	case r.Locks == nil:
		fmt.Fprintln(w, "LOCKS: unsupported by this driver")
	case r.LocksSealed && len(r.Locks) == 0:
		fmt.Fprintln(w, "LOCKS: none; sealed (they moved to another store: Lock and TryLock give ErrSealed here)")
	case len(r.Locks) == 0:
		fmt.Fprintln(w, "LOCKS: none")
	default:
		fmt.Fprintf(w, "LOCKS (%s)\n", count(len(r.Locks), "lock"))
		if r.LocksSealed {
			fmt.Fprintln(w, "sealed: they moved to another store; Lock and TryLock give ErrSealed here, a holder can still unlock")
		}
		tw := table(w)
		fmt.Fprintln(tw, "NAME\tHOLDER\tFENCE\tWAITERS")
		for _, l := range r.Locks {
			holder, fence := "-", "-"
			if l.Holder != nil {
				holder, fence = l.Holder.Owner, fmt.Sprint(l.Holder.Fence)
			}
			var ws []string
			for _, wr := range l.Waiters {
				ws = append(ws, fmt.Sprintf("%s (fence %d)", wr.Owner, wr.Fence))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", l.Name, holder, fence, dash(strings.Join(ws, ", ")))
		}
		tw.Flush()
	}
}

func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
