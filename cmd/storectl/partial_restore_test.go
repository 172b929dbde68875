package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// bothSlots takes slot 0 and 1 of restoreNS at once in a store of the
// test's own, records them as handed out, and releases them (their last
// timestamps unknown).
func bothSlots(t *testing.T, h *handedOutLog, spec storeSpec) {
	t.Helper()
	st, err := store.Open(spec.driver, spec.options)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, l := range []store.Lease{acquire(t, st, restoreNS, "host-x", 0, time.Second), acquire(t, st, restoreNS, "host-y", 1, time.Second)} {
		h.lease(l)
		if err := st.Slots().Release(t.Context(), l); err != nil {
			t.Fatal(err)
		}
	}
}

// slotZero takes and releases a term of slot 0 of restoreNS (an Acquire
// without a preference searches from a point of its owner's, so an
// instance's term may be of either slot).
func slotZero(t *testing.T, h *handedOutLog, spec storeSpec) {
	t.Helper()
	st, err := store.Open(spec.driver, spec.options)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l := acquire(t, st, restoreNS, "host-x", 0, time.Second)
	h.lease(l)
	if err := st.Slots().Release(t.Context(), l); err != nil {
		t.Fatal(err)
	}
}

// lease records a term as handed out.
func (h *handedOutLog) lease(l store.Lease) {
	slot := l.Namespace + "/" + itoa(int64(l.Slot))
	h.fences[slot+"/"+itoa(l.Fence)]++
	h.terms[slot] = append(h.terms[slot], [2]int64{l.Floor, l.Ceiling})
}

// followPartialRestore: storectl restore on a store whose record of used
// slots did not go back with its slots stops at the slot with ErrCorrupt,
// naming the partial restore; the recovery of docs/operations.md, followed
// as written, raises it, and the slots are then handed out with no fence
// twice and no overlapping terms. skip, if set, is the start of a line of
// the recovery not followed (an operator's mistake): it then returns what
// was handed out without judging it.
func followPartialRestore(t *testing.T, h *handedOutLog, spec storeSpec, op *operator, name, corrupt, skip string) *handedOutLog {
	t.Helper()
	exe(t, with(args("restore", "--raise", "1000000", "--no-moves"), spec.flags())...).want(t, exitFailed, corrupt)
	var lines []string
	for _, l := range procedure(t, "operations.md", name) {
		if skip != "" && strings.HasPrefix(l, skip) {
			op.replace(l) // read, not run: its names are the doc's still
			continue
		}
		lines = append(lines, l)
	}
	res := op.follow(lines, nil)
	for l, r := range res {
		if strings.HasPrefix(l, "storectl restore ") {
			r.want(t, exitOK, "namespace workers: 2 slots raised")
		}
	}
	for range 2 {
		if e := h.instanceOf(t, spec, "next:orders:10:1,term:a,term:b"); e != "" {
			t.Fatal(e)
		}
		bothSlots(t, h, spec)
	}
	if skip != "" {
		return h
	}
	if v, f, o := h.duplicates(); v+f+o > 0 {
		t.Fatalf("after the documented recovery: %d values handed out twice (of %d), %d fences twice, %d overlapping terms",
			v, h.total(), f, o)
	}
	return h
}

// TestPartialRestoreAsDocumented: PostgreSQL, a pg_restore of every table
// of the backup but cosid_slot_used (a partial restore), and ZooKeeper, the
// slot nodes put back as they were before slot 1 was first taken but not
// the made/ markers; then docs/operations.md's recovery, as written.
func TestPartialRestoreAsDocumented(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		url := pgDatabase(t, pgtest.Shared(t), "partial")
		backups := t.TempDir()
		op := newOperator(t, "postgres://ids@db-1:5432/ids", url, "/backup/", backups+"/")
		op.pgTools()
		spec := pgSpec(url)
		h := newHandedOut()
		if e := h.instanceOf(t, spec, "next:orders:10:3"); e != "" {
			t.Fatal(e)
		}
		slotZero(t, h, spec) // slot 1 is first taken after the backup
		op.follow(procedure(t, "drivers/postgres.md", "postgres-backup"), nil)
		bothSlots(t, h, spec) // slot 1's first term, after the backup
		// The partial restore: every table of the backup but cosid_slot_used.
		dump := filepath.Join(backups, "ids-2026-12-01.dump")
		list := filepath.Join(backups, "list")
		op.run("pg_restore -l "+dump+" | grep -v -e cosid_slot_used -e ' SCHEMA ' > "+list).want(t, exitOK)
		op.run("pg_restore --clean --if-exists --single-transaction -L "+list+" --dbname='"+url+"' "+dump).want(t, exitOK)
		followPartialRestore(t, h, spec, op, "partial-restore-postgres",
			"slot workers/1 was used before and its row is gone (deleted by hand, or a partial restore)", "")
	})
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		partialSQLite(t, "")
	})
	t.Run("mysql", func(t *testing.T) {
		t.Parallel()
		partialMySQL(t, "")
	})
	// The recovery without its storectl restore: the records deleted,
	// the instances started on the store as the partial restore left it
	// (its keys were raised already by the restore that stopped at the
	// slot, so no value comes twice: slot terms do).
	for name, f := range map[string]func(*testing.T, string) *handedOutLog{"sqlite": partialSQLite, "mysql": partialMySQL} {
		t.Run(name+"/SkipRestore", func(t *testing.T) {
			t.Parallel()
			h := f(t, "storectl restore ")
			v, fences, o := h.duplicates()
			t.Logf("without storectl restore: %d values handed out twice (of %d), %d fences twice, %d overlapping terms", v, h.total(), fences, o)
			if fences == 0 || o == 0 {
				t.Fatalf("the recovery without storectl restore handed out %d fences twice, %d overlapping terms: the test cannot tell a skipped step", fences, o)
			}
		})
	}
	t.Run("zookeeper", func(t *testing.T) {
		t.Parallel()
		versions := zktest.Versions()
		srv := zktest.StartServer(t, versions[len(versions)-1])
		op := newOperator(t, "zk-1:2181,zk-2:2181,zk-3:2181", srv.Addr(), "zk-1:2181", srv.Addr())
		op.script("zkCli.sh", `exec java -cp "`+srv.Classpath()+`" org.apache.zookeeper.ZooKeeperMain "$@"`)
		spec := storeSpec{driver: "zookeeper", options: map[string]string{
			"connectString": srv.Addr(), "root": "/cosid", "sessionTimeout": "10s", "blockUntilConnectedWait": "20s"}}
		h := newHandedOut()
		if e := h.instanceOf(t, spec, "next:orders:10:3"); e != "" {
			t.Fatal(e)
		}
		slotZero(t, h, spec)
		bothSlots(t, h, spec) // slot 1's first term
		// The partial restore: the slot nodes as they were before slot 1
		// was first taken, the made/ markers as they are.
		conn, _, err := zk.Connect([]string{srv.Addr()}, 10*time.Second, zk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if err := conn.Delete("/cosid/slot/workers/1", -1); err != nil {
			t.Fatal(err)
		}
		followPartialRestore(t, h, spec, op, "partial-restore-zookeeper",
			"/cosid/slot/workers/1 is gone but /cosid/made/workers/1 says it was made", "")
	})
}
