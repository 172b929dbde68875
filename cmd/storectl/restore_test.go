package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store"
)

// An instance is a process of this test binary that opens a store as a
// program does (create, the default), takes ranges, slot terms and locks,
// prints them, and exits: "range KEY START END", "term NS SLOT FENCE FLOOR
// CEILING", "fence LOCK FENCE", or "error: ..." (exit code 1).
const instanceEnv = "STORECTL_TEST_INSTANCE"

// instanceRun is what an instance is told, as JSON in instanceEnv.
type instanceRun struct {
	Driver  string
	Options map[string]string
	Ops     string
}

// TestRestoreInstance is the instance when instanceEnv is set, and does
// nothing otherwise.
func TestRestoreInstance(t *testing.T) {
	env := os.Getenv(instanceEnv)
	if env == "" {
		return
	}
	var r instanceRun
	err := json.Unmarshal([]byte(env), &r)
	if err == nil {
		err = runInstance(storeSpec{driver: r.Driver, options: r.Options}, r.Ops)
	}
	if err != nil {
		fmt.Printf("error: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runInstance(spec storeSpec, ops string) error {
	st, err := store.Open(spec.driver, spec.options)
	if err != nil {
		return err
	}
	defer st.Close()
	ctx := context.Background()
	for op := range strings.SplitSeq(ops, ",") {
		switch f := strings.Split(op, ":"); f[0] {
		case "next": // next:KEY:STEP:COUNT
			var step, n int64
			fmt.Sscan(f[2], &step)
			fmt.Sscan(f[3], &n)
			for range n {
				r, err := st.Ranges().Next(ctx, f[1], step)
				if err != nil {
					return err
				}
				fmt.Printf("range %s %d %d\n", f[1], r.Start, r.End)
			}
		case "term": // term:NS: a term of the restore test's namespace, released with its last timestamp unknown
			l, err := st.Slots().Acquire(ctx, restoreNS, "host-"+f[1], store.AcquireOptions{TTL: time.Second})
			if err != nil {
				return err
			}
			fmt.Printf("term %s %d %d %d %d\n", l.Namespace, l.Slot, l.Fence, l.Floor, l.Ceiling)
			if err := st.Slots().Release(ctx, l); err != nil {
				return err
			}
		case "lock": // lock:NAME: a hold, released at once
			k, err := st.Locks().Lock(ctx, f[1])
			if err != nil {
				return err
			}
			fmt.Printf("fence %s %d\n", f[1], k.Fence())
			if err := k.Unlock(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

var restoreNS = store.Namespace{Name: "workers", Limit: 2, Tolerance: 20 * time.Millisecond}

// handedOutLog is what instances printed, to count what was handed out twice.
type handedOutLog struct {
	values map[string]map[int64]int // key -> value -> times handed out
	fences map[string]int           // ns/slot/fence -> times
	terms  map[string][][2]int64    // ns/slot -> [floor, ceiling) windows
	// program runs the instances instead of this test binary when set
	// (the previous version's, previousInstance).
	program string
}

func newHandedOut() *handedOutLog {
	return &handedOutLog{values: map[string]map[int64]int{}, fences: map[string]int{}, terms: map[string][][2]int64{}}
}

// instance runs one instance process on the SQLite file path and records
// what it printed.
func (h *handedOutLog) instance(t *testing.T, path, ops string) (errLine string) {
	t.Helper()
	return h.instanceOf(t, storeSpec{driver: "sqlite", options: map[string]string{"path": path}}, ops)
}

// instanceOf runs one instance process on spec's store and records what it
// printed.
func (h *handedOutLog) instanceOf(t *testing.T, spec storeSpec, ops string) (errLine string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	run, err := json.Marshal(instanceRun{Driver: spec.driver, Options: spec.options, Ops: ops})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestRestoreInstance$", "-test.count=1")
	if h.program != "" {
		cmd = exec.CommandContext(ctx, h.program)
	}
	cmd.Env = append(os.Environ(), instanceEnv+"="+string(run))
	out, _ := cmd.Output()
	lines := bufio.NewScanner(strings.NewReader(string(out)))
	for lines.Scan() {
		f := strings.Fields(lines.Text())
		switch {
		case len(f) == 4 && f[0] == "range":
			var start, end int64
			fmt.Sscan(f[2], &start)
			fmt.Sscan(f[3], &end)
			if h.values[f[1]] == nil {
				h.values[f[1]] = map[int64]int{}
			}
			for v := start; v < end; v++ {
				h.values[f[1]][v]++
			}
		case len(f) == 6 && f[0] == "term":
			var floor, ceiling int64
			fmt.Sscan(f[4], &floor)
			fmt.Sscan(f[5], &ceiling)
			slot := f[1] + "/" + f[2]
			h.fences[slot+"/"+f[3]]++
			h.terms[slot] = append(h.terms[slot], [2]int64{floor, ceiling})
		case len(f) == 3 && f[0] == "fence":
			h.fences["lock/"+f[1]+"/"+f[2]]++
		case strings.HasPrefix(lines.Text(), "error: "):
			errLine = lines.Text()
		}
	}
	return errLine
}

// asWrittenAndSkipped runs a documented procedure (run, what) as written
// and, at once, with its storectl restore skipped (run's skip), where the
// instances must hand out values and fences again: else the test could not
// tell a skipped step.
func asWrittenAndSkipped(t *testing.T, what string, run func(t *testing.T, skip string) *handedOutLog) {
	t.Run("AsWritten", func(t *testing.T) {
		t.Parallel()
		run(t, "")
	})
	t.Run("SkipRestore", func(t *testing.T) {
		t.Parallel()
		h := run(t, "storectl restore ")
		v, f, o := h.duplicates()
		t.Logf("without storectl restore: %d values handed out twice (of %d), %d fences twice, %d overlapping terms", v, h.total(), f, o)
		if v == 0 || f == 0 {
			t.Fatalf("the %s without storectl restore handed out %d values and %d fences twice: the test cannot tell a skipped step", what, v, f)
		}
	})
}

// duplicates counts values handed out more than once, fences given to more
// than one term of a slot or holder of a lock, and pairs of terms of a slot whose timestamp
// windows overlap.
func (h *handedOutLog) duplicates() (values, fences, overlaps int) {
	for _, vs := range h.values {
		for _, n := range vs {
			values += n - 1
		}
	}
	for _, n := range h.fences {
		fences += n - 1
	}
	for _, ws := range h.terms {
		for i := range ws {
			for j := range i {
				if ws[i][0] < ws[j][1] && ws[j][0] < ws[i][1] {
					overlaps++
				}
			}
		}
	}
	return values, fences, overlaps
}

func (h *handedOutLog) total() (n int) {
	for _, vs := range h.values {
		n += len(vs)
	}
	return n
}

// TestRestoreAsDocumented follows docs/drivers/sqlite.md's backup and
// restore, the commands read from the doc, with the storectl binary and
// instance processes, and counts what was handed out twice: nothing.
// OldProcedure follows the restore documented before (stop everything,
// move the copy over the file): on the code of then, the next instance
// handed out 30 values again; now the copy is marked and the instance
// refuses to start.
func TestRestoreAsDocumented(t *testing.T) {
	for _, old := range []bool{false, true} {
		name := "Documented"
		if old {
			name = "OldProcedure"
		}
		t.Run(name, func(t *testing.T) {
			dir, backups := t.TempDir(), t.TempDir()
			path, backup := filepath.Join(dir, "ids.db"), filepath.Join(backups, "ids-2026-12-01.db")
			op := newOperator(t, "/var/lib/app/", dir+"/", "/backup/", backups+"/")
			h := newHandedOut()
			const before = "next:orders:10:3,term:a,term:b"
			if e := h.instance(t, path, before); e != "" {
				t.Fatal(e)
			}
			// The nightly backup, taken while the store is in use.
			op.follow(procedure(t, "drivers/sqlite.md", "sqlite-backup"), nil)
			if e := h.instance(t, path, before); e != "" {
				t.Fatal(e)
			}
			// The store is lost; every instance is stopped.
			if old {
				for _, s := range []string{"", "-wal", "-shm"} {
					if err := os.Rename(path+s, filepath.Join(dir, "damaged.db"+s)); err != nil && s == "" {
						t.Fatal(err)
					}
				}
				// "To restore, stop every process using the file, then move
				// the copy over it."
				if err := os.Rename(backup, path); err != nil {
					t.Fatal(err)
				}
				e := h.instance(t, path, before)
				if v, f, o := h.duplicates(); v+f+o > 0 {
					t.Fatalf("after the old procedure: %d values handed out twice (of %d), %d fences twice, %d overlapping terms",
						v, h.total(), f, o)
				}
				if !strings.Contains(e, "storectl restore") {
					t.Fatalf("an instance on the moved copy: %q; want it refused, saying to run storectl restore", e)
				}
				return
			}
			// Inspecting the backup works; the backup is no migrate source.
			exe(t, "inspect", "--driver", "sqlite", "-o", "path="+backup).want(t, exitOK,
				"backup copy of store ", "orders  30    no")
			exe(t, "migrate", "--from", "sqlite:path="+backup, "--to", "sqlite:path="+filepath.Join(dir, "new.db")).
				want(t, exitRefused, "is a backup copy", "storectl restore")
			// The documented procedure.
			lines := procedure(t, "drivers/sqlite.md", "sqlite-restore")
			res := op.follow(lines, stepper(t, map[string]func(){"stop every process using the store": func() {}}))
			res[lines[len(lines)-1]].want(t, exitOK, "key orders: raised from 30 to 1000030", "backup mark cleared", "restored ")
			if e := h.instance(t, path, before); e != "" {
				t.Fatal(e)
			}
			if v, f, o := h.duplicates(); v+f+o > 0 {
				t.Fatalf("after the documented restore: %d values handed out twice (of %d), %d fences twice, %d overlapping terms",
					v, h.total(), f, o)
			}
			if n := h.total(); n != 90 {
				t.Fatalf("%d values handed out in all, want 90 (three instances' three ranges of 10)", n)
			}
			// The restored store is a live store: migrate's refusal above
			// said to restore first, and now it moves on.
			exe(t, "migrate", "--from", "sqlite:path="+path, "--to", "sqlite:path="+filepath.Join(dir, "new.db")).
				want(t, exitOK, "key orders: sealed in source at 1000060; initialised in target at 1000060")
		})
	}
}

// TestRestoreInPlace: restore raises a store put back by its own tools
// (here: a store holding what the backup held) past what its original
// handed out since, on every backend; it refuses while a lease may be in
// use, leaves sealed keys alone, creates --key keys at N, and a second run
// only raises again.
func TestRestoreInPlace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		spec := b.fresh(t)
		st := spec.open(t)
		// What the backup held: orders at 30, moved sealed at 7, a slot.
		if err := st.Ranges().Init(ctx, "orders", 30); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Ranges().Seal(ctx, "moved"); err != nil {
			t.Fatal(err)
		}
		live := acquire(t, st, restoreNS, "host-a", 0, time.Minute)
		restore := func(a ...string) result { return ctl(with(args("restore", "--no-moves"), spec.flags(), a)...) }
		restore("--raise", "1000").want(t, exitRefused, "stop every instance first (nothing changed)", "lease workers/0 of host-a")
		if err := st.Slots().Release(ctx, live); err != nil {
			t.Fatal(err)
		}
		restore().want(t, exitUsage, "--raise N is required")
		restore("--raise", "1000", "--key", "invoices").want(t, exitOK,
			"key orders: raised from 30 to 1030", "key moved: sealed at 0", "key invoices (--key): at 0, now at least 1000",
			"namespace workers: 2 slots raised: fences by 1000")
		if r := next(t, st, "orders", 10); r.Start != 1030 {
			t.Fatalf("orders after restore starts at %d, want 1030", r.Start)
		}
		if r := next(t, st, "invoices", 10); r.Start != 1000 {
			t.Fatalf("invoices after restore starts at %d, want 1000", r.Start)
		}
		if n, sealed, err := st.Ranges().Current(ctx, "moved"); err != nil || !sealed || n != 0 {
			t.Fatalf("moved after restore: %d sealed %v (%v), want sealed at 0", n, sealed, err)
		}
		l := acquire(t, st, restoreNS, "host-b", 1, time.Minute)
		if l.Fence <= 1000 || l.Floor < live.Ceiling {
			t.Fatalf("first term after restore: fence %d floor %d; want fence above 1000, floor at or above %d", l.Fence, l.Floor, live.Ceiling)
		}
		if err := st.Slots().ReleaseUsed(ctx, l, l.Floor); err != nil {
			t.Fatal(err)
		}
		restore("--raise", "1000").want(t, exitOK, "key orders: raised from 1040 to 2040")
	})
}

// TestRestoreMarkedInPlace: restore's second form on a marked SQLite copy
// left where it is: the copy is raised and its mark cleared, and a program
// then opens it and continues above its original.
func TestRestoreMarkedInPlace(t *testing.T) {
	dir := t.TempDir()
	path, backup := filepath.Join(dir, "ids.db"), filepath.Join(dir, "nightly.db")
	h := newHandedOut()
	if e := h.instance(t, path, "next:orders:10:3"); e != "" {
		t.Fatal(e)
	}
	exe(t, "backup", path, backup).want(t, exitOK, "backed up ")
	if e := h.instance(t, path, "next:orders:10:3"); e != "" {
		t.Fatal(e)
	}
	if e := h.instance(t, backup, "next:orders:10:1"); !strings.Contains(e, "storectl restore") {
		t.Fatalf("an instance on the marked copy: %q; want it refused, saying to run storectl restore", e)
	}
	exe(t, "restore", "--raise", "9223372036854775807", "--no-moves", "--driver", "sqlite", "-o", "path="+backup).
		want(t, exitUsage, "restore raises by 9223372036854775807, above the maximum 1000000000000", "--large", "nothing changed")
	exe(t, "restore", "--raise", "1000", "--no-moves", "--driver", "sqlite", "-o", "path="+backup).want(t, exitOK,
		"key orders: raised from 30 to 1030", "backup mark cleared")
	if e := h.instance(t, backup, "next:orders:10:3"); e != "" {
		t.Fatal(e)
	}
	if v, f, o := h.duplicates(); v+f+o > 0 || h.total() != 90 {
		t.Fatalf("%d values handed out twice (of %d, want 90)", v, h.total())
	}
	exe(t, "inspect", "--driver", "sqlite", "-o", "path="+backup).want(t, exitOK, "orders  1060  no")
}
