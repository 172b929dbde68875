package postgres

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/childproc"
	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/poll"
)

const upgraderEnv = "COSID_PG_UPGRADER"

// TestUpgradeKilledMidway: a process that opens a version 1 schema is
// killed in the middle of its upgrade (its lock of the tables, or its
// ALTER TABLE, sent and waiting for a lock another session holds on the
// namespace table). Nothing of its
// half-done upgrade stays: the schema is still version 1 without the
// column, and the next open upgrades it; a term taken before renews, and
// a seal then stops it.
func TestUpgradeKilledMidway(t *testing.T) {
	if v := os.Getenv(upgraderEnv); v != "" {
		connString, schema, _ := strings.Cut(v, "|")
		d, err := fromOptions(map[string]string{"connString": connString, "schema": schema, "poolSize": "1"})
		fmt.Println("opened", err) // never reached while the test holds the lock
		if err == nil {
			d.Close()
		}
		os.Exit(0)
	}
	srv := pgtest.Shared(t)
	schema := freshSchema("upgradekill")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	ns, l := versionOneWithTerm(t, ctx, srv, schema)
	q := pgx.Identifier{schema}.Sanitize()
	version := func(c *pgx.Conn) (v string, hasColumn bool, err error) {
		if err = c.QueryRow(ctx, "SELECT value FROM "+q+".cosid_meta WHERE name = 'schema_version'").Scan(&v); err != nil {
			return "", false, err
		}
		err = c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.columns
			WHERE table_schema = $1 AND table_name = 'cosid_namespace' AND column_name = 'sealed')`, schema).Scan(&hasColumn)
		return v, hasColumn, err
	}

	if err := srv.Exec(t, func(c *pgx.Conn) error {
		tx, err := c.Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, "LOCK TABLE "+q+".cosid_namespace IN ACCESS SHARE MODE"); err != nil {
			return err
		}
		cmd, out := childproc.Start(t, upgraderEnv, srv.ConnString()+"|"+schema)
		said := make(chan string, 1)
		go func() {
			line, _ := out.ReadString('\n')
			said <- line
		}()
		poll.Until(t, time.Minute, "the child's upgrade waits for the lock", func() bool {
			// A transaction keeps one snapshot of the statistics: take a new one.
			if _, err := c.Exec(ctx, "SELECT pg_stat_clear_snapshot()"); err != nil {
				return false
			}
			var n int
			err := c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE wait_event_type = 'Lock' AND (query LIKE 'ALTER TABLE%cosid_namespace%' OR query LIKE 'LOCK TABLE%cosid_namespace%')`).Scan(&n)
			return err == nil && n == 1
		})
		if err := cmd.Process.Kill(); err != nil {
			return err
		}
		_ = cmd.Wait()
		if line := <-said; line != "" {
			return fmt.Errorf("the child ended its open itself before the kill: %s", line)
		}
		return nil // the rollback lets the dead child's ALTER run, in a transaction that never commits
	}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Exec(t, func(c *pgx.Conn) error {
		var v string
		var has bool
		var err error
		// The dead child's session ends once its ALTER ran and it read EOF.
		poll.Until(t, time.Minute, "the killed upgrader's session ends", func() bool {
			var n int
			err := c.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'ALTER TABLE%cosid_namespace%'`).Scan(&n)
			return err == nil && n == 0
		})
		if v, has, err = version(c); err != nil {
			return err
		}
		if v != "1" || has {
			return fmt.Errorf("after the killed upgrade: schema_version %q, sealed column %v; want 1 and none", v, has)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	d := openAt(t, srv.ConnString(), schema, nil)
	l, err := d.Renew(ctx, l)
	if err != nil {
		t.Fatalf("Renew after the upgrade: %v", err)
	}
	if err := d.SealNamespace(ctx, ns.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Renew(ctx, l); !errors.Is(err, driver.ErrSealed) {
		t.Fatalf("Renew after the seal: %v, want ErrSealed", err)
	}
	if err := srv.Exec(t, func(c *pgx.Conn) error {
		v, has, err := version(c)
		if err == nil && (v != "3" || !has) {
			err = fmt.Errorf("after the upgrade: schema_version %q, sealed column %v; want 3 and the column", v, has)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}
