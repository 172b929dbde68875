// Package pgdialect is PostgreSQL's sqlstore.Dialect, on pgx.
package pgdialect

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/cosid-go/store/internal/sqlstore"
)

// Clock is the database's clock in ms since the epoch: clock_timestamp(),
// which moves within a transaction, unlike now().
const Clock = "(floor(extract(epoch FROM clock_timestamp()) * 1000))::bigint"

// New returns PostgreSQL's dialect for the tables in schema (a name the
// driver checked): row locks, so the free-slot search first passes over
// the rows other acquirers hold, then takes their locks without waiting.
// The schema is created if missing.
func New(schema string) sqlstore.Dialect {
	return sqlstore.Dialect{
		Name:      "postgres",
		Prefix:    pgx.Identifier{schema}.Sanitize() + ".",
		Now:       Clock,
		ForUpdate: " FOR UPDATE",
		// No row lock on the namespace row: the seal locks the table.
		SealLock: "LOCK TABLE {p}cosid_namespace IN ACCESS EXCLUSIVE MODE",
		Bytewise: ` COLLATE "C"`,
		// A new slot's three writes in one round trip.
		WritesInWith: true,
		// Keyed by the schema, the namespace and the slot: a lock of
		// the same key taken by anything else (a hash's collision)
		// only has an acquire pass over the slot, then come back to it.
		ClaimSlot: "pg_try_advisory_xact_lock(hashtextextended('" + strings.ReplaceAll(schema, "'", "''") +
			"/' || CAST($1 AS TEXT), CAST($2 AS BIGINT)))",
		FreeSearch: []string{" FOR UPDATE SKIP LOCKED", " FOR UPDATE NOWAIT"},
		// In the order an Acquire uses them, so a purge waits for the
		// acquires under way rather than deadlock with them; the
		// namespaces as SealLock does, since an acquire only reads its
		// row; the ranges last (no slot transaction writes them), so that
		// no key is sealed between the purge's check of seals and its
		// deletion.
		PurgeLock: "LOCK TABLE {p}cosid_namespace IN ACCESS EXCLUSIVE MODE; " +
			"LOCK TABLE {p}cosid_slot, {p}cosid_owner, {p}cosid_range IN EXCLUSIVE MODE",
		HasMeta: "SELECT to_regclass('" + pgx.Identifier{schema, "cosid_meta"}.Sanitize() + "') IS NOT NULL",
		Setup: func(ctx context.Context, tx sqlstore.Querier) error {
			// Stores opening at once on a new schema would race to create
			// the same tables; one at a time, per database.
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(7161541250637836288)"); err != nil {
				return err
			}
			var exists bool
			if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)", schema).Scan(&exists); err != nil {
				return err
			}
			if !exists {
				_, err := tx.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
				return err
			}
			return nil
		},
		Classify: Classify,
	}
}

// The SQLSTATE codes the store acts on (PostgreSQL's Appendix A).
const (
	serializationFailure = "40001"
	deadlockDetected     = "40P01"
	lockNotAvailable     = "55P03"
	foreignKeyViolation  = "23503"
	// The server ended a transaction left idle past
	// idle_in_transaction_session_timeout (and the session with it): rolled
	// back, as the others. A loaded client stalls that long between two
	// statements of its own.
	idleInTransaction = "25P03"
)

// Classify reads the server's SQLSTATE code.
func Classify(err error) sqlstore.Kind {
	var e *pgconn.PgError
	if !errors.As(err, &e) {
		return sqlstore.Other
	}
	switch e.Code {
	case serializationFailure, deadlockDetected, lockNotAvailable, idleInTransaction:
		return sqlstore.Aborted
	case foreignKeyViolation:
		return sqlstore.MissingParent
	}
	return sqlstore.Other
}
