package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/internal/testing/etcdtest"
	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/poll"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// rotation is one engine's credential rotation: the store as instances
// open it with each credential in turn (the old first, the new last), the
// procedure's comment line of each roll (from specs[i] to specs[i+1]),
// and the operator whose PATH has the engine's admin tools.
type rotation struct {
	doc, name  string
	specs      []storeSpec
	rolls      []string
	op         *operator
	oldRefused string // what a store with the old credentials gets at the end
}

// followRotation: an instance holds a lock and a slot and hands out values
// across the procedure; at each roll, it still works, and an instance with
// the next credentials finds the lock held (no second holder) until the
// running one stops, then takes it with a higher fence, and the slot above
// the old term. At the end a store with the old credentials is refused
// (at its open, or at its first call). No value, fence or term is handed
// out twice.
func followRotation(t *testing.T, c rotation) {
	ctx := t.Context()
	h := newHandedOut()
	take := func(st *store.Store) {
		t.Helper()
		h.record("orders", next(t, st, "orders", 10))
	}
	hold := func(st *store.Store) (*store.Lock, store.Lease) {
		t.Helper()
		take(st)
		k, err := st.Locks().Lock(ctx, "job")
		if err != nil {
			t.Fatal(err)
		}
		h.fences["lock/job/"+itoa(k.Fence())]++
		l := acquire(t, st, restoreNS, "host-a", 0, time.Minute)
		h.lease(l)
		return k, l
	}
	stop := func(st *store.Store, k *store.Lock, l store.Lease) {
		t.Helper()
		if err := k.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if err := st.Slots().Release(ctx, l); err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	cur := c.specs[0].open(t)
	k, l := hold(cur)
	steps := map[string]func(){}
	for i, step := range c.rolls {
		steps[step] = func() {
			take(cur) // the running instance goes on
			next := c.specs[i+1].open(t)
			take(next)
			if _, err := next.Locks().TryLock(ctx, "job"); !errors.Is(err, store.ErrLocked) {
				t.Fatalf("TryLock with the credentials of %q while the running instance holds the lock: %v, want ErrLocked", step, err)
			}
			stop(cur, k, l)
			cur = next
			k, l = hold(cur)
		}
	}
	c.op.follow(procedure(t, c.doc, c.name), stepper(t, steps))
	take(cur)
	stop(cur, k, l)
	old := c.specs[0]
	st, err := store.Open(old.driver, old.options)
	if err == nil {
		_, err = st.Ranges().Next(ctx, "orders", 10)
		st.Close()
	}
	if err == nil || !strings.Contains(err.Error(), c.oldRefused) {
		t.Fatalf("a store with the old credentials after the rotation: %v, want it refused (%q)", err, c.oldRefused)
	}
	if v, f, o := h.duplicates(); v+f+o > 0 {
		t.Fatalf("across the rotation: %d values handed out twice (of %d), %d fences twice, %d overlapping terms",
			v, h.total(), f, o)
	}
}

// TestRotateEtcdAsDocumented follows docs/drivers/etcd.md's rotation of
// the store's user and password, as written, on a member with auth on.
func TestRotateEtcdAsDocumented(t *testing.T) {
	c := etcdtest.Start(t, 1)
	c.EnableAuth(t, "ids", "OLDPASSWORD")
	m := c.Members[0]
	op := newOperator(t,
		"etcd-1:2379", strings.TrimPrefix(m.ClientURL, "http://"),
		"ROOTPASSWORD", c.RootPassword(),
		"grant-role ids-2026 cosid", "grant-role ids-2026 readwrite")
	path, err := etcdtest.Tool("etcdctl")
	if err != nil {
		t.Fatal(err)
	}
	op.tool("etcdctl", path)
	spec := func(user, password string) storeSpec {
		return storeSpec{driver: "etcd", options: map[string]string{"endpoints": m.ClientURL, "dialTimeout": "20s",
			"username": user, "password": password}}
	}
	followRotation(t, rotation{doc: "drivers/etcd.md", name: "etcd-rotate",
		specs: []storeSpec{spec("ids", "OLDPASSWORD"), spec("ids-2026", "NEWPASSWORD")}, op: op,
		rolls:      []string{"roll the instances to username ids-2026 and password NEWPASSWORD, one at a time"},
		oldRefused: "authentication failed"})
}

// TestRotatePostgresAsDocumented follows docs/drivers/postgres.md's
// rotation of the store's role and password, as written, on a server of
// its own whose pg_hba.conf asks every role but the superuser for its
// password (scram-sha-256).
func TestRotatePostgresAsDocumented(t *testing.T) {
	srv := pgtest.Start(t)
	bin, err := pgtest.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	admin, err := pgx.Connect(ctx, srv.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	var hba string
	if err := admin.QueryRow(ctx, "SHOW hba_file").Scan(&hba); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE ROLE ids LOGIN PASSWORD 'OLDPASSWORD'",
		"CREATE DATABASE ids OWNER ids",
		// Passwords checked: only the superuser (the test's admin) is trusted.
		"COPY (SELECT * FROM (VALUES ('local all all trust'), ('host all postgres 127.0.0.1/32 trust'), " +
			"('host all all 127.0.0.1/32 scram-sha-256')) AS hba) TO '" + hba + "'",
		"SELECT pg_reload_conf()",
	} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	url := "postgres://" + srv.Addr() + "/ids?sslmode=disable"
	spec := func(user, password string) storeSpec {
		return storeSpec{driver: "postgres", options: map[string]string{"connString": url, "schema": "cosid", "poolSize": "4",
			"user": user, "password": password}}
	}
	// The reload is the server's: wait until it asks for passwords.
	poll.Until(t, time.Minute, "the server asks for passwords", func() bool {
		st, err := store.Open("postgres", spec("ids", "WRONG").options)
		if err == nil {
			st.Close()
		}
		return err != nil && strings.Contains(err.Error(), "password authentication failed")
	})
	op := newOperator(t, "postgres://admin@db-1:5432/ids", "postgres://postgres@"+srv.Addr()+"/ids?sslmode=disable")
	op.tool("psql", filepath.Join(bin, "psql"))
	followRotation(t, rotation{doc: "drivers/postgres.md", name: "postgres-rotate",
		specs: []storeSpec{spec("ids", "OLDPASSWORD"), spec("ids_2026", "NEWPASSWORD")}, op: op,
		rolls:      []string{"roll the instances to user ids_2026 and password NEWPASSWORD, one at a time"},
		oldRefused: `role "ids" is not permitted to log in`})
}

// TestRotateZooKeeperAsDocumented follows docs/drivers/zookeeper.md's
// rotation of the store's digest credentials, as written, on a server of
// its own.
func TestRotateZooKeeperAsDocumented(t *testing.T) {
	versions := zktest.Versions()
	srv := zktest.StartServer(t, versions[len(versions)-1])
	op := newOperator(t, "zk-1:2181", srv.Addr())
	op.script("zkCli.sh", `exec java -cp "`+srv.Classpath()+`" org.apache.zookeeper.ZooKeeperMain "$@"`)
	spec := func(auth string) storeSpec {
		return storeSpec{driver: "zookeeper", options: map[string]string{"connectString": srv.Addr(), "root": "/cosid",
			"sessionTimeout": "10s", "blockUntilConnectedWait": "20s", "auth": auth}}
	}
	followRotation(t, rotation{doc: "drivers/zookeeper.md", name: "zookeeper-rotate",
		specs: []storeSpec{spec("digest:ids:OLDPASSWORD"), spec("digest:ids:OLDPASSWORD,digest:ids-2026:NEWPASSWORD"),
			spec("digest:ids-2026:NEWPASSWORD")},
		rolls: []string{
			"roll the instances to auth digest:ids:OLDPASSWORD,digest:ids-2026:NEWPASSWORD, one at a time",
			"roll the instances to auth digest:ids-2026:NEWPASSWORD, one at a time",
		},
		op: op, oldRefused: "not authenticated"})
}
