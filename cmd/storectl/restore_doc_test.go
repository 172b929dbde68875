package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/etcdtest"
	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// restoreOps is what each instance of the restore procedures does: ranges,
// two slot terms released with their last timestamp unknown, a lock hold.
const restoreOps = "next:orders:10:3,term:a,term:b,lock:job"

// inPlaceRestore is one engine's documented backup and in-place restore.
type inPlaceRestore struct {
	doc             string // under docs/
	backup, restore string // the procedures' names
	spec            storeSpec
	op              *operator
	// backupSteps and restoreSteps play the procedures' comment lines.
	backupSteps, restoreSteps map[string]func()
	// raise, if set, is run instead of the restore procedure's lines from
	// its storectl restore on (the runbook's form of that step).
	raise []string
	// refusals are the errors a store open across the restore may get
	// besides ErrCorrupt (ZooKeeper refuses the session of a client that
	// saw a newer zxid than the restored servers have: ErrUnavailable).
	refusals []error
	// members, if set, are the operators of each member of a cluster:
	// the restore's commands before storectl restore, which the doc says
	// to run on every member, are run by each with its own names.
	// backupOp, if set, follows the backup instead of op (the member the
	// backup is taken on).
	members  []*operator
	backupOp *operator
	// skip, if set, is the start of a line of the restore from its
	// storectl restore on that is not followed (an operator's mistake):
	// followRestore then returns what was handed out without judging it.
	skip string
}

// putBack follows the lines of the restore before its storectl restore:
// on every member when there are members.
func (c inPlaceRestore) putBack(t *testing.T, lines []string, step func(string)) {
	t.Helper()
	if c.members == nil {
		c.op.follow(lines, step)
		return
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "#") {
			c.op.follow([]string{l}, step)
			continue
		}
		for _, m := range c.members {
			m.follow([]string{l}, nil)
		}
	}
}

// refused reports whether err is one of the restore's refusals.
func (c inPlaceRestore) refused(err error) bool {
	for _, r := range append(c.refusals, store.ErrCorrupt) {
		if errors.Is(err, r) {
			return true
		}
	}
	return false
}

// followRestore hands out values, slot terms and lock fences from instance
// processes, takes the backup as the doc says, hands out more, puts the
// backup back and raises it as the doc says, hands out more again, and
// counts what was handed out twice: nothing. A store that stayed open
// across the restore (as no instance should) is refused with ErrCorrupt
// once the backup is back and before storectl restore has raised it,
// rather than handing out again what it handed out before.
func followRestore(t *testing.T, c inPlaceRestore) *handedOutLog {
	h := newHandedOut()
	if e := h.instanceOf(t, c.spec, restoreOps); e != "" {
		t.Fatal(e)
	}
	backupOp := c.op
	if c.backupOp != nil {
		backupOp = c.backupOp
	}
	backupOp.follow(procedure(t, c.doc, c.backup), stepper(t, c.backupSteps))
	if e := h.instanceOf(t, c.spec, restoreOps); e != "" {
		t.Fatal(e)
	}
	// The store that stays open: it saw the values and fences handed out
	// after the backup.
	open := c.spec.open(t)
	ctx := t.Context()
	r := next(t, open, "orders", 10)
	h.record("orders", r)
	k, err := open.Locks().Lock(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	h.fences[fmt.Sprintf("lock/job/%d", k.Fence())]++
	if err := k.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	lines := procedure(t, c.doc, c.restore)
	i := 0
	for i < len(lines) && !strings.HasPrefix(lines[i], "storectl restore ") {
		i++
	}
	if i == len(lines) {
		t.Fatalf("docs/%s: the procedure %s has no storectl restore", c.doc, c.restore)
	}
	step := stepper(t, c.restoreSteps)
	c.putBack(t, lines[:i], step)
	// The backup is back, not raised yet.
	if r, err := open.Ranges().Next(ctx, "orders", 10); !c.refused(err) {
		t.Fatalf("Next of a store open across the restore: %v, %v; want ErrCorrupt (its key went back)", r, err)
	} else {
		t.Logf("a store open across the restore, before storectl restore: %v", err)
	}
	rest := lines[i:]
	if c.raise != nil {
		rest = c.raise
		step = stepper(t, map[string]func(){"stop every instance": func() {}, "start the instances": func() {}})
	}
	if c.skip != "" {
		var kept []string
		for _, l := range rest {
			if strings.HasPrefix(l, c.skip) {
				c.op.replace(l) // read, not run: its names are the doc's still
				continue
			}
			kept = append(kept, l)
		}
		rest = kept
	}
	res := c.op.follow(rest, step)
	var raised result
	for l, r := range res {
		if strings.HasPrefix(l, "storectl restore ") {
			raised = r
		}
	}
	// (The refused Next may have taken a range the store never handed out:
	// a gap above the backup's 30.)
	if c.skip == "" {
		raised.want(t, exitOK, "key orders: raised from ", "namespace workers: 2 slots raised", "locks: fences raised")
	}

	if e := h.instanceOf(t, c.spec, restoreOps); e != "" {
		t.Fatal(e)
	}
	// The store that stayed open is refused or goes on above.
	r, err = open.Ranges().Next(ctx, "orders", 10)
	t.Logf("a store open across the restore, after storectl restore: %v, %v", r, err)
	if err == nil {
		h.record("orders", r)
	} else if !c.refused(err) {
		t.Fatalf("Next of the store open across the restore, after it: %v", err)
	}
	if c.skip != "" {
		return h
	}
	if v, f, o := h.duplicates(); v+f+o > 0 {
		t.Fatalf("after the documented restore: %d values handed out twice (of %d), %d fences twice, %d overlapping terms",
			v, h.total(), f, o)
	}
	if n := h.total(); n < 100 {
		t.Fatalf("%d values handed out in all, want at least 100 (three instances' three ranges of 10, the open store's)", n)
	}
	return h
}

// record counts a range handed out.
func (h *handedOutLog) record(key string, r store.Range) {
	if h.values[key] == nil {
		h.values[key] = map[int64]int{}
	}
	for v := r.Start; v < r.End; v++ {
		h.values[key][v]++
	}
}

// TestRestorePostgresAsDocumented follows docs/drivers/postgres.md's backup
// (pg_dump) and restore (pg_restore, then storectl restore) on a database
// of its own.
func TestRestorePostgresAsDocumented(t *testing.T) {
	url := pgDatabase(t, pgtest.Shared(t), "restore")
	op := newOperator(t,
		"postgres://ids@db-1:5432/ids", url,
		"/backup/", t.TempDir()+"/")
	op.pgTools()
	followRestore(t, inPlaceRestore{
		doc: "drivers/postgres.md", backup: "postgres-backup", restore: "postgres-restore",
		spec: pgSpec(url), op: op,
		restoreSteps: map[string]func(){
			"stop every instance": func() {},
			"start the instances": func() {},
		},
	})
}

// TestRestoreZooKeeperAsDocumented follows docs/drivers/zookeeper.md's
// backup (a copy of a member's version-2 directory) and restore (the copy
// put back with the members stopped, then storectl restore) on a server of
// its own. The server is standalone: it plays "one member" and "every
// member".
func TestRestoreZooKeeperAsDocumented(t *testing.T) {
	versions := zktest.Versions()
	srv := zktest.StartServer(t, versions[len(versions)-1])
	backups := t.TempDir()
	op := newOperator(t,
		"zk-1:2181,zk-2:2181,zk-3:2181", srv.Addr(),
		"/var/lib/zookeeper/", srv.DataDir()+"/",
		"/backup/", backups+"/")
	spec := storeSpec{driver: "zookeeper", options: map[string]string{
		"connectString": srv.Addr(), "root": "/cosid",
		"sessionTimeout": "10s", "blockUntilConnectedWait": "20s"}}
	followRestore(t, inPlaceRestore{
		doc: "drivers/zookeeper.md", backup: "zookeeper-backup", restore: "zookeeper-restore",
		spec: spec, op: op,
		backupSteps: map[string]func(){
			"stop one member (a follower: the others keep the quorum)": srv.Stop,
			"start the member": srv.Start,
		},
		restoreSteps: map[string]func(){
			"stop every instance": func() {},
			"stop every member":   srv.Stop,
			"start every member":  srv.Start,
			"start the instances": func() {},
		},
		refusals: []error{store.ErrUnavailable},
	})
}

// TestRestoreEtcdAsDocumented follows docs/drivers/etcd.md's backup
// (etcdctl snapshot save) and restore (etcdutl snapshot restore into the
// data directory, then storectl restore) on a member of its own, which
// plays every member.
func TestRestoreEtcdAsDocumented(t *testing.T) {
	c := etcdtest.Start(t, 1)
	m := c.Members[0]
	client := strings.TrimPrefix(m.ClientURL, "http://")
	op := newOperator(t,
		"etcd-1:2379,etcd-2:2379,etcd-3:2379", client,
		"etcd-1=http://etcd-1:2380,etcd-2=http://etcd-2:2380,etcd-3=http://etcd-3:2380", m.Name+"="+m.PeerURL,
		"http://etcd-1:2380", m.PeerURL,
		"etcd-1:2379", client,
		"--name etcd-1", "--name "+m.Name,
		"/var/lib/etcd", m.DataDir(),
		"/backup/", t.TempDir()+"/")
	for _, tool := range []string{"etcdctl", "etcdutl"} {
		path, err := etcdtest.Tool(tool)
		if err != nil {
			t.Fatal(err)
		}
		op.tool(tool, path)
	}
	spec := storeSpec{driver: "etcd", options: map[string]string{"endpoints": m.ClientURL, "dialTimeout": "20s"}}
	followRestore(t, inPlaceRestore{
		doc: "drivers/etcd.md", backup: "etcd-backup", restore: "etcd-restore",
		spec: spec, op: op,
		restoreSteps: map[string]func(){
			"stop every instance": func() {},
			"stop every member":   m.Stop,
			"start every member":  func() { c.Restart(t, m) },
			"start the instances": func() {},
		},
	})
}

// TestRestoreMySQLAsDocumented follows docs/drivers/mysql.md's backup
// (mysqldump) and restore (the database dropped and the dump loaded with
// the mysql client, then storectl restore) on a database of its own of the
// shared MariaDB server.
func TestRestoreMySQLAsDocumented(t *testing.T) {
	op, spec := mysqlOperator(t, true)
	followRestore(t, inPlaceRestore{
		doc: "drivers/mysql.md", backup: "mysql-backup", restore: "mysql-restore",
		spec: spec, op: op,
		restoreSteps: map[string]func(){
			"stop every instance": func() {},
			"start the instances": func() {},
		},
	})
}

// TestRestoreRunbookAsDocumented follows docs/operations.md's procedure for
// a corrupt store (a backup restored), whose storectl restore names the
// store in a stores.yaml: the one docs/drivers/postgres.md shows, after
// the PostgreSQL page's backup and put-back.
func TestRestoreRunbookAsDocumented(t *testing.T) {
	url := pgDatabase(t, pgtest.Shared(t), "runbook")
	dir := t.TempDir()
	op := newOperator(t,
		"postgres://ids@db-1:5432/ids?sslmode=verify-full", url,
		"postgres://ids@db-1:5432/ids", url,
		"stores.yaml", filepath.Join(dir, "stores.yaml"),
		"/backup/", dir+"/")
	op.pgTools()
	yaml := op.replace(docBlock(t, "drivers/postgres.md", "postgres-stores.yaml"))
	if err := os.WriteFile(filepath.Join(dir, "stores.yaml"), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	followRestore(t, inPlaceRestore{
		doc: "drivers/postgres.md", backup: "postgres-backup", restore: "postgres-restore",
		spec: pgSpec(url), op: op,
		restoreSteps: map[string]func(){"stop every instance": func() {}},
		raise:        procedure(t, "operations.md", "corrupt"),
	})
}
