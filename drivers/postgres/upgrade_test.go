package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/pgtest"
)

// TestUpgradeFromVersion1: a schema of version 1 (before the namespace
// seal and the record of used slots), opened by several stores at once,
// with create=true and create=false: the tables are upgraded once, to
// version 3, terms taken before renew, their slots are recorded as used,
// and sealing works afterwards.
func TestUpgradeFromVersion1(t *testing.T) {
	srv := pgtest.Shared(t)
	schema := freshSchema("upgrade")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ns, l := versionOneWithTerm(t, ctx, srv, schema)
	var err error

	stores := make([]*driverStore, 4)
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() {
			create := "true"
			if i%2 == 1 {
				create = "false"
			}
			d, err := fromOptions(map[string]string{"connString": srv.ConnString(), "schema": schema, "poolSize": "2", driver.OptionCreate: create})
			if err != nil {
				t.Errorf("open %d (create=%s) of a version 1 schema: %v", i, create, err)
				return
			}
			stores[i] = d.(*driverStore)
		})
	}
	wg.Wait()
	for _, s := range stores {
		if s != nil {
			t.Cleanup(func() { s.Close() })
		}
	}
	if t.Failed() {
		return
	}
	d := stores[0]
	if l, err = d.Renew(ctx, l); err != nil {
		t.Fatalf("Renew of a term taken before the upgrade: %v", err)
	}
	if err := stores[1].SealNamespace(ctx, ns.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Renew(ctx, l); !errors.Is(err, driver.ErrSealed) {
		t.Fatalf("Renew after the seal: %v, want ErrSealed", err)
	}
	nss, err := stores[2].Namespaces(ctx)
	if want := (driver.Namespace{Name: ns.Name, Limit: ns.Limit, Sealed: true}); err != nil || len(nss) != 1 || nss[0] != want {
		t.Fatalf("Namespaces: %+v, %v; want [%+v]", nss, err, want)
	}
	var v string
	if err := d.DB().QueryRow(ctx, "SELECT value FROM "+pgx.Identifier{schema}.Sanitize()+".cosid_meta WHERE name = 'schema_version'").Scan(&v); err != nil || v != "3" {
		t.Fatalf("schema_version after the upgrade: %q, %v; want 3", v, err)
	}
	var used int
	if err := d.DB().QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema}.Sanitize()+".cosid_slot_used WHERE namespace = 'workers' AND slot = $1", l.Slot).Scan(&used); err != nil || used != 1 {
		t.Fatalf("slot %d, used before the upgrade, recorded %d times, %v; want once", l.Slot, used, err)
	}
}

// TestSealSurvivesDeletedNamespaceRow: an operator deletes the row of a
// sealed namespace by hand (its slot rows stay). A held term's Renew gives
// ErrLeaseLost and another store's Acquire ErrCorrupt: neither reopens the
// namespace by recreating its row unsealed.
func TestSealSurvivesDeletedNamespaceRow(t *testing.T) {
	srv := pgtest.Shared(t)
	schema := freshSchema("sealdel")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	a, b := openAt(t, srv.ConnString(), schema, nil), openAt(t, srv.ConnString(), schema, nil)
	ns := driver.Namespace{Name: "workers", Limit: 4, Tolerance: time.Second}
	l, err := a.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "i", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SealNamespace(ctx, ns.Name); err != nil {
		t.Fatal(err)
	}
	q := pgx.Identifier{schema}.Sanitize()
	if err := srv.Exec(t, func(c *pgx.Conn) error {
		tag, err := c.Exec(ctx, "DELETE FROM "+q+".cosid_namespace WHERE name = 'workers'")
		if err == nil && tag.RowsAffected() != 1 {
			err = fmt.Errorf("deleted %d rows, want 1", tag.RowsAffected())
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Renew(ctx, l); !errors.Is(err, driver.ErrLeaseLost) {
		t.Errorf("Renew after the sealed namespace's row was deleted: %v; want ErrLeaseLost", err)
	}
	if err := b.SeedSlot(ctx, ns, 2, 10, 10); !errors.Is(err, driver.ErrCorrupt) {
		t.Errorf("SeedSlot after the sealed namespace's row was deleted: %v; want ErrCorrupt", err)
	}
	l2, err := b.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "b", Incarnation: "j", TTL: time.Minute})
	if !errors.Is(err, driver.ErrCorrupt) {
		t.Errorf("Acquire after the sealed namespace's row was deleted: slot %d fence %d, %v; want ErrCorrupt", l2.Slot, l2.Fence, err)
	}
}

// versionOneWithTerm leaves schema as version 1 wrote it (no sealed
// column, no cosid_slot_used), holding one live term of namespace "workers".
func versionOneWithTerm(t *testing.T, ctx context.Context, srv *pgtest.Server, schema string) (driver.Namespace, driver.Lease) {
	t.Helper()
	old := openAt(t, srv.ConnString(), schema, nil)
	ns := driver.Namespace{Name: "workers", Limit: 2}
	l, err := old.Acquire(ctx, driver.AcquireRequest{Namespace: ns, Owner: "a", Incarnation: "i", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	old.Close()
	q := pgx.Identifier{schema}.Sanitize()
	if err := srv.Exec(t, func(c *pgx.Conn) error {
		for _, s := range []string{"ALTER TABLE " + q + ".cosid_namespace DROP COLUMN sealed", "DROP TABLE " + q + ".cosid_slot_used",
			"UPDATE " + q + ".cosid_meta SET value = '1' WHERE name = 'schema_version'"} {
			if _, err := c.Exec(ctx, s); err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ns, l
}
