// Package mysqldialect is the sqlstore.Dialect of MySQL and MariaDB, on
// github.com/go-sql-driver/mysql.
//
// # What differs from PostgreSQL, and how
//
// Neither server has ON CONFLICT: upserts are INSERT ... ON DUPLICATE KEY
// UPDATE, whose affected-rows count is 1 for a row inserted, 2 for one
// updated and 0 for one left as it was (the driver must not set
// CLIENT_FOUND_ROWS). `key` is a reserved word, quoted. A TEXT column
// cannot be a primary key: names and keys are VARBINARY(1024) (bytewise,
// as the contract compares them).
//
// RETURNING: MariaDB 10.5+ has it on INSERT and DELETE only, MySQL 8 not
// at all; neither on UPDATE. The statements that return a value (Next,
// Seal) put it in LAST_INSERT_ID(expr) instead, which both servers report
// in the statement's OK packet: still one round trip. A statement that
// does so begins with a mark the driver's adapter reads (MarkID,
// MarkIDChanged, MarkIDFound); an upsert whose count the shared code
// compares with 1 begins with MarkUpsert (2, an update, counts as 1).
//
// SKIP LOCKED and NOWAIT: MariaDB 10.6+ and MySQL 8.0+ both have them. A
// lock NOWAIT cannot have fails with 1205 on MariaDB and 3572 on MySQL 8;
// both are Aborted, as are deadlocks (1213) and lock waits past
// innodb_lock_wait_timeout (1205: InnoDB rolls back the statement only,
// and the driver rolls back the whole transaction before trying again).
// FOR SHARE is MySQL 8's, LOCK IN SHARE MODE both servers': the latter.
//
// Isolation: InnoDB's default, REPEATABLE READ, reads one snapshot for a
// whole transaction, and the shared Acquire, which looks for a never-used
// slot again after losing one, would see the same stale gap forever. The
// driver sets READ COMMITTED on every connection (each statement reads
// the latest commits, and locking reads take no gap locks, as on
// PostgreSQL); the purge's lock, whose locking reads must also keep new
// rows out until it ends (gap locks), begins its transaction at
// REPEATABLE READ (MarkRepeatableRead).
//
// DDL commits: CREATE TABLE ends the transaction around it on both
// servers, so the tables are created one statement at a time (each IF NOT
// EXISTS, safe to race) and the rows written after them (version, store
// identity) are upserts that keep what a concurrent open wrote first.
//
// The clock is UTC_TIMESTAMP(6), independent of the session's time zone,
// as ms since the epoch: a statement's start time, like PostgreSQL's
// statement_timestamp().
package mysqldialect

import (
	"context"
	"errors"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/cosid-go/store/internal/sqlstore"
)

// Clock is the server's clock in ms since the epoch.
const Clock = "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)"

// The marks a statement may begin with, for the driver's adapter.
const (
	// MarkID: the statement's value is the LAST_INSERT_ID(expr) it set.
	MarkID = "/*cosid:id*/ "
	// MarkIDChanged: as MarkID, but no row when it changed none, or when
	// the value it computes passed BIGINT's range (error 1690: the
	// statement failed and changed nothing).
	MarkIDChanged = "/*cosid:id-changed*/ "
	// MarkIDFound: as MarkID, but no row when the id is 0 (its WHERE
	// admits only rows whose value is above 0, so 0 means none matched).
	MarkIDFound = "/*cosid:id-found*/ "
	// MarkUpsert: an INSERT ... ON DUPLICATE KEY UPDATE whose count of 2
	// (a row updated) is reported as 1, as ON CONFLICT DO UPDATE counts.
	MarkUpsert = "/*cosid:upsert*/ "
	// MarkRepeatableRead: a transaction that begins with this statement
	// runs at REPEATABLE READ, not the connection's READ COMMITTED.
	MarkRepeatableRead = "/*cosid:repeatable-read*/ "
)

// Quote quotes an identifier (a database name the driver checked).
func Quote(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// New returns the dialect for the tables in database (a name the driver
// checked).
func New(database string) sqlstore.Dialect {
	return sqlstore.Dialect{
		Name:       "mysql",
		Prefix:     Quote(database) + ".",
		Now:        Clock,
		ForUpdate:  " FOR UPDATE",
		ForShare:   " LOCK IN SHARE MODE",
		FreeSearch: []string{" FOR UPDATE SKIP LOCKED", " FOR UPDATE NOWAIT"},
		// Every row and gap of the tables an Acquire, Renew, Release, seed
		// or Next writes, at REPEATABLE READ: as PostgreSQL's LOCK TABLE,
		// nothing is written or inserted until the purge ends.
		PurgeLock: MarkRepeatableRead + `SELECT n.c + s.c + o.c + r.c FROM
			(SELECT count(*) AS c FROM {p}cosid_namespace FOR UPDATE) n,
			(SELECT count(*) AS c FROM {p}cosid_slot FOR UPDATE) s,
			(SELECT count(*) AS c FROM {p}cosid_owner FOR UPDATE) o,
			(SELECT count(*) AS c FROM {p}cosid_range FOR UPDATE) r`,
		HasMeta: `SELECT count(*) > 0 FROM information_schema.tables
			WHERE table_schema = '` + strings.ReplaceAll(database, "'", "''") + `' AND table_name = 'cosid_meta'`,
		Setup: func(ctx context.Context, tx sqlstore.Querier) error {
			_, err := tx.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+Quote(database))
			return err
		},
		Classify:   Classify,
		Statements: statements,
	}
}

// The server error numbers the store acts on.
const (
	lockWaitTimeout = 1205 // also MariaDB's NOWAIT
	deadlock        = 1213
	lockNowait      = 3572 // MySQL 8's NOWAIT
	noReferenced    = 1452 // a foreign key's parent row is missing
	outOfRange      = 1690 // a value passed its type's range: the statement failed
)

// OutOfRange says whether err is the server's refusal of a value past its
// type's range (BIGINT arithmetic that passes math.MaxInt64): the
// statement changed nothing.
func OutOfRange(err error) bool {
	var e *mysql.MySQLError
	return errors.As(err, &e) && e.Number == outOfRange
}

// Classify reads the server's error number.
func Classify(err error) sqlstore.Kind {
	var e *mysql.MySQLError
	if !errors.As(err, &e) {
		return sqlstore.Other
	}
	switch e.Number {
	case lockWaitTimeout, deadlock, lockNowait:
		return sqlstore.Aborted
	case noReferenced:
		return sqlstore.MissingParent
	}
	return sqlstore.Other
}

// keep is the upsert tail that keeps an existing row as it is.
const keep = " ON DUPLICATE KEY UPDATE name = name"

const slotUsedTable = `CREATE TABLE IF NOT EXISTS {p}cosid_slot_used (
		namespace VARBINARY(1024) NOT NULL,
		slot BIGINT NOT NULL,
		PRIMARY KEY (namespace, slot)) ENGINE=InnoDB`

// statements replace the shared ones whose syntax MySQL lacks (see the
// package documentation).
var statements = map[string]string{
	"Create[0]": `CREATE TABLE IF NOT EXISTS {p}cosid_meta (
		name VARBINARY(1024) PRIMARY KEY,
		value BLOB NOT NULL) ENGINE=InnoDB`,
	"Create[1]": "CREATE TABLE IF NOT EXISTS {p}cosid_range (\n\t\t`key` VARBINARY(1024) PRIMARY KEY," + `
		next BIGINT NOT NULL,
		sealed BOOLEAN NOT NULL) ENGINE=InnoDB`,
	"Create[2]": `CREATE TABLE IF NOT EXISTS {p}cosid_namespace (
		name VARBINARY(1024) PRIMARY KEY,
		slot_limit BIGINT NOT NULL,
		tolerance_ms BIGINT NOT NULL,
		sealed BOOLEAN NOT NULL DEFAULT FALSE) ENGINE=InnoDB`,
	"Create[3]": `CREATE TABLE IF NOT EXISTS {p}cosid_slot (
		namespace VARBINARY(1024) NOT NULL,
		slot BIGINT NOT NULL,
		owner VARBINARY(1024) NOT NULL,
		incarnation VARBINARY(1024) NOT NULL,
		last_owner VARBINARY(1024) NOT NULL,
		fence BIGINT NOT NULL,
		ttl_ms BIGINT NOT NULL,
		tolerance_ms BIGINT NOT NULL,
		floor BIGINT NOT NULL,
		expires_min BIGINT NOT NULL,
		ceiling_min BIGINT NOT NULL,
		next_floor BIGINT NOT NULL,
		mtime BIGINT NOT NULL,
		expires_at BIGINT NOT NULL,
		ceiling BIGINT NOT NULL,
		version BIGINT NOT NULL,
		PRIMARY KEY (namespace, slot)) ENGINE=InnoDB`,
	"Create[4]": `CREATE TABLE IF NOT EXISTS {p}cosid_owner (
		namespace VARBINARY(1024) NOT NULL,
		owner VARBINARY(1024) NOT NULL,
		slots BLOB NOT NULL,
		PRIMARY KEY (namespace, owner)) ENGINE=InnoDB`,
	"Create[5]": slotUsedTable,
	// Schema version 2 never existed on MySQL; the upgrade is valid anyway.
	"Upgrade2[0]": slotUsedTable,
	"Upgrade2[1]": `INSERT INTO {p}cosid_slot_used (namespace, slot) SELECT namespace, slot FROM {p}cosid_slot
		ON DUPLICATE KEY UPDATE slot = {p}cosid_slot_used.slot`,
	"SlotUsed": `INSERT INTO {p}cosid_slot_used (namespace, slot) VALUES ($1, $2) ON DUPLICATE KEY UPDATE slot = slot`,

	"InitVersion":     `INSERT INTO {p}cosid_meta (name, value) VALUES ('schema_version', $1)` + keep,
	"InitStoreID":     `INSERT INTO {p}cosid_meta (name, value) VALUES ('store_id', $1)` + keep,
	"LayoutKeep":      `INSERT INTO {p}cosid_meta (name, value) VALUES ($1, $2)` + keep,
	"RaiseFenceFloor": `INSERT INTO {p}cosid_meta (name, value) VALUES ('slot_fence_floor', $1) ON DUPLICATE KEY UPDATE value = $1`,

	// A new key's row is inserted with next = step; an existing one's
	// grows unless sealed or past math.MaxInt64 (then it is left as it
	// is, and no row is counted).
	"Next": MarkIDChanged + "INSERT INTO {p}cosid_range (`key`, next, sealed) VALUES ($1, LAST_INSERT_ID($2), FALSE)" + `
		ON DUPLICATE KEY UPDATE next = IF(sealed OR next > 9223372036854775807 - $2, next, LAST_INSERT_ID(next + $2))`,
	// A sealed row is not matched; past math.MaxInt64, next + $2 fails
	// (1690) and changes nothing: no row either way (MarkIDChanged). Not
	// a condition next <= 9223372036854775807 - $2: on MariaDB 10.11 each
	// condition beside the key's costs the statement a few µs, that one
	// 3-4 µs of 67-76 (trials on a loaded 2-core machine, 2026-12-04,
	// docs/drivers/mysql.md).
	"NextUpdate": MarkIDChanged + `UPDATE {p}cosid_range SET next = LAST_INSERT_ID(next + $2)
		WHERE ` + "`key`" + ` = $1 AND NOT sealed`,
	"Current": "SELECT next, sealed FROM {p}cosid_range WHERE `key` = $1",
	"Seal": MarkID + "INSERT INTO {p}cosid_range (`key`, next, sealed) VALUES ($1, LAST_INSERT_ID(0), TRUE)" + `
		ON DUPLICATE KEY UPDATE next = LAST_INSERT_ID(next), sealed = TRUE`,
	// Used only with $2 >= 1: a row that matched has an id above 0.
	"SealUpdate": MarkIDFound + `UPDATE {p}cosid_range SET next = LAST_INSERT_ID(next), sealed = TRUE
		WHERE ` + "`key`" + ` = $1 AND next >= $2`,
	"Init": MarkUpsert + "INSERT INTO {p}cosid_range (`key`, next, sealed) VALUES ($1, $2, FALSE) ON DUPLICATE KEY UPDATE `key` = `key`",
	"Keys": "SELECT `key` FROM {p}cosid_range",
	// VARBINARY compares and sorts by bytes already.
	"ListRanges":  "SELECT `key`, next, sealed FROM {p}cosid_range WHERE `key` > $1 ORDER BY `key` LIMIT $2",
	"AdvanceRead": "SELECT next, sealed FROM {p}cosid_range WHERE `key` = $1{forupdate}",
	"Advance": MarkUpsert + "INSERT INTO {p}cosid_range (`key`, next, sealed) VALUES ($1, $2, FALSE)" + `
		ON DUPLICATE KEY UPDATE next = IF(sealed OR next >= $2, next, $2)`,
	"PurgeSealedKeys": "SELECT `key` FROM {p}cosid_range WHERE sealed",

	"NamespaceCreate": `INSERT INTO {p}cosid_namespace (name, slot_limit, tolerance_ms) VALUES ($1, $2, $3)` + keep,
	"NamespaceSeal": `INSERT INTO {p}cosid_namespace (name, slot_limit, tolerance_ms, sealed) VALUES ($1, 0, 0, TRUE)
		ON DUPLICATE KEY UPDATE sealed = TRUE`,
	"OwnerWrite": `INSERT INTO {p}cosid_owner (namespace, owner, slots) VALUES ($1, $2, $3)
		ON DUPLICATE KEY UPDATE slots = $3`,
	"SlotGap": sqlstore.SlotGap("SIGNED", " FROM DUAL"),
	"SlotInsert": `INSERT INTO {p}cosid_slot (namespace, slot, owner, incarnation, last_owner, fence, ttl_ms,
		tolerance_ms, floor, expires_min, ceiling_min, next_floor, mtime, expires_at, ceiling, version)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
		ON DUPLICATE KEY UPDATE slot = slot`,
	"PurgeSlots": `SELECT CAST(slot AS CHAR) FROM {p}cosid_slot WHERE namespace = $1`,
}
