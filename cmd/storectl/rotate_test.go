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
)

// rotation is one engine's credential rotation: the store as instances
// open it with the old credentials and with the new, and the operator
// whose PATH has the engine's admin tools.
type rotation struct {
	doc, name        string
	oldSpec, newSpec storeSpec
	op               *operator
	rollStep         string // the procedure's comment line that rolls the instances
	oldRefused       string // what opening with the old credentials says at the end
}

// followRotation: an instance with the old credentials holds a lock and a
// slot and hands out values before, during and after the credential is
// added (no call fails); at the roll, an instance with the new
// credentials finds the lock held (no second holder) until the old one
// stops, then takes it with a higher fence, and the slot above the old
// term; once the old credential is removed, the new instance goes on and a
// store with the old credentials is refused. No value, fence or term is
// handed out twice.
func followRotation(t *testing.T, c rotation) {
	ctx := t.Context()
	h := newHandedOut()
	old := c.oldSpec.open(t)
	take := func(st *store.Store) {
		t.Helper()
		h.record("orders", next(t, st, "orders", 10))
	}
	take(old)
	k, err := old.Locks().Lock(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	h.fences["lock/job/"+itoa(k.Fence())]++
	l := acquire(t, old, restoreNS, "host-a", 0, time.Minute)
	h.lease(l)
	var fresh *store.Store
	rolled := false
	c.op.follow(procedure(t, c.doc, c.name), stepper(t, map[string]func(){
		c.rollStep: func() {
			take(old) // the old credential still works once the new one is added
			fresh = c.newSpec.open(t)
			take(fresh)
			if _, err := fresh.Locks().TryLock(ctx, "job"); !errors.Is(err, store.ErrLocked) {
				t.Fatalf("TryLock with the new credentials while the old instance holds the lock: %v, want ErrLocked", err)
			}
			// The old instance stops.
			if err := k.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			if err := old.Slots().Release(ctx, l); err != nil {
				t.Fatal(err)
			}
			if err := old.Close(); err != nil {
				t.Fatal(err)
			}
			rolled = true
		},
	}))
	if !rolled {
		t.Fatal("the procedure never rolled the instances")
	}
	take(fresh)
	k2, err := fresh.Locks().Lock(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	h.fences["lock/job/"+itoa(k2.Fence())]++
	if err := k2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	h.lease(acquire(t, fresh, restoreNS, "host-a", 0, time.Minute))
	if _, err := store.Open(c.oldSpec.driver, c.oldSpec.options); err == nil || !strings.Contains(err.Error(), c.oldRefused) {
		t.Fatalf("a store opened with the old credentials after the rotation: %v, want it refused (%q)", err, c.oldRefused)
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
		oldSpec: spec("ids", "OLDPASSWORD"), newSpec: spec("ids-2026", "NEWPASSWORD"), op: op,
		rollStep:   "roll the instances to username ids-2026 and password NEWPASSWORD, one at a time",
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
		oldSpec: spec("ids", "OLDPASSWORD"), newSpec: spec("ids_2026", "NEWPASSWORD"), op: op,
		rollStep:   "roll the instances to user ids_2026 and password NEWPASSWORD, one at a time",
		oldRefused: `role "ids" is not permitted to log in`})
}
