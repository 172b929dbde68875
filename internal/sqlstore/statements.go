package sqlstore

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// statements are every statement of the shared logic, written for a
// store's dialect once, when it opens (newStatements), and checked then:
// each field must be set (Dialect.Prepare).
type statements struct {
	Create []string // the tables, the dialect's own last

	// cosid_meta
	InitVersion, InitStoreID, StoreID, SchemaVersion string
	// Upgrade1 makes tables of schema version 1 those of version 2 (the
	// namespace seal); Upgrade2 those of version 2 those of version 3 (the
	// record of used slots, filled from the slot rows there are);
	// SetVersion then records the version.
	Upgrade1, SetVersion                  string
	Upgrade2                              []string
	FenceFloor, RaiseFenceFloor, MaxFence string
	// LayoutKeep records a namespace's layout (row layout/NS) unless it
	// has one; LayoutRead reads it (driver.LayoutKeeper).
	LayoutKeep, LayoutRead string

	// Ranges. Next is one round trip: add step unless sealed or past
	// math.MaxInt64; a new key starts at 0, so its new next value is step.
	// NextUpdate is the same for a key this store has seen: a plain
	// UPDATE, cheaper than an upsert's speculative insert. SealUpdate seals
	// a key this store saw above 0 only where it has not gone back, so
	// that a refusal leaves nothing written.
	Next, NextUpdate, Current, Seal, SealUpdate, Init, Keys string
	// ListRanges is one keyset page of keys: above $1, bytewise, $2 rows.
	ListRanges string
	// AdvanceRead reads a key under a row lock; Advance raises it, never
	// lowering it nor touching a sealed one (driver.RangeAdvancer).
	AdvanceRead, Advance string

	// Namespaces and owner indexes. NamespaceLock and NamespaceSealed read
	// the row under a share lock (Dialect.ForShare), before a slot write
	// that a seal must not pass; NamespaceSeal writes it. NamespaceLock
	// also reads, in the same round trip, owner $2's index and the fence
	// floor of slots never used (slot_fence_floor).
	NamespaceCreate, NamespaceRead, NamespaceList, OwnerWrite string
	NamespaceLock, NamespaceSealed, NamespaceSeal             string
	// NamespaceSlot finds one slot of a namespace that has a row or was
	// used, read when its namespace row was just created (there should be
	// none).
	NamespaceSlot string
	// NamespaceCreateOne is NamespaceCreate and NamespaceSlot as one
	// statement, where the database writes in WITH
	// (Dialect.WritesInWith), run on its own: the row is written only
	// if no slot of the namespace has a row or was used, and committed
	// when the statement ends. It returns the rows written, a slot that
	// has a row or was used (or NULL), and whether the namespace row was
	// there before it (createNamespace). Empty elsewhere.
	NamespaceCreateOne string `stmt:"optional"`

	// Slots. SlotFree has one statement per pass of the free-slot search
	// (Dialect.FreeSearch). SlotsHead, placeholders $2..., SlotsTail read
	// the listed slots, locked.
	SlotFree                                  []string
	SlotGap, SlotList, SlotInsert, SlotUpdate string
	SlotRead, SlotsHead, SlotsTail            string
	// SlotsTailSkip ends the read of a preferred slot: locked, passing
	// over a row another transaction holds (the first FreeSearch ending);
	// SlotExists then tells such a row from none. It reads no fence: a
	// row read without its lock may be older than one this store is
	// writing (see Store.accept).
	SlotsTailSkip, SlotExists string
	// SlotsTailRead ends a read of the listed slots without a lock.
	SlotsTailRead string
	// SlotsTailLast ends a read that locks the listed slots as the free
	// search's last pass does (NOWAIT: a lock held elsewhere aborts the
	// transaction, which is tried again).
	SlotsTailLast string
	// SlotUsed records that a slot was created (cosid_slot_used); it
	// writes nothing, and says so, for a slot recorded before.
	SlotUsed string
	// SlotCreate is SlotInsert, then SlotUsed and OwnerWrite ($17, $18)
	// once the row is in, as one statement, where the database writes in
	// WITH (Dialect.WritesInWith); empty elsewhere. With $19 true it first
	// claims the slot (Dialect.ClaimSlot) and writes nothing unless it
	// got the claim. It returns the rows each of the first two wrote and
	// whether it had the claim.
	SlotCreate                                     string `stmt:"optional"`
	PurgeNamespaces, PurgeSlots, PurgeOwners, Ping string
	PurgeTerms                                     string // every slot, and the store's time
	PurgeSealedKeys, PurgeSealedNamespaces         string
	PurgeDelete                                    []string
}

// newStatements writes the statements for d.
func newStatements(d Dialect) (*statements, error) {
	free := make([]string, len(d.FreeSearch))
	for i, lock := range d.FreeSearch {
		free[i] = slotFree + lock
	}
	create, nsCreate := "", ""
	if d.WritesInWith {
		claim := cmp.Or(d.ClaimSlot, "TRUE")
		create, nsCreate = strings.Replace(slotCreate, "CLAIM", claim, 1), namespaceCreateOne
	}
	st := &statements{
		Create: slices.Concat(tables, d.Tables),

		InitVersion: `INSERT INTO {p}cosid_meta (name, value) VALUES ('schema_version', $1)
			ON CONFLICT (name) DO NOTHING`,
		InitStoreID: `INSERT INTO {p}cosid_meta (name, value) VALUES ('store_id', $1)
			ON CONFLICT (name) DO NOTHING`,
		Upgrade1: `ALTER TABLE {p}cosid_namespace ADD COLUMN sealed BOOLEAN NOT NULL DEFAULT FALSE`,
		// Every slot with a row was created; one whose row was deleted by
		// hand before the upgrade cannot be told from one never used.
		Upgrade2: []string{slotUsedTable,
			`INSERT INTO {p}cosid_slot_used (namespace, slot) SELECT namespace, slot FROM {p}cosid_slot
			WHERE TRUE ON CONFLICT (namespace, slot) DO NOTHING`},
		SetVersion:    `UPDATE {p}cosid_meta SET value = $1 WHERE name = 'schema_version'`,
		StoreID:       `SELECT value FROM {p}cosid_meta WHERE name = 'store_id'`,
		SchemaVersion: `SELECT value FROM {p}cosid_meta WHERE name = 'schema_version'`,
		FenceFloor:    `SELECT value FROM {p}cosid_meta WHERE name = 'slot_fence_floor'`,
		RaiseFenceFloor: `INSERT INTO {p}cosid_meta AS m (name, value) VALUES ('slot_fence_floor', $1)
			ON CONFLICT (name) DO UPDATE SET value = $1`,
		MaxFence: `SELECT max(fence) FROM {p}cosid_slot`,
		LayoutKeep: `INSERT INTO {p}cosid_meta (name, value) VALUES ($1, $2)
			ON CONFLICT (name) DO NOTHING`,
		LayoutRead: `SELECT value FROM {p}cosid_meta WHERE name = $1`,

		Next: `INSERT INTO {p}cosid_range AS r (key, next, sealed) VALUES ($1, $2, FALSE)
			ON CONFLICT (key) DO UPDATE SET next = r.next + $2
			WHERE NOT r.sealed AND r.next <= 9223372036854775807 - $2
			RETURNING next`,
		NextUpdate: `UPDATE {p}cosid_range SET next = next + $2
			WHERE key = $1 AND NOT sealed AND next <= 9223372036854775807 - $2
			RETURNING next`,
		Current: `SELECT next, sealed FROM {p}cosid_range WHERE key = $1`,
		Seal: `INSERT INTO {p}cosid_range AS r (key, next, sealed) VALUES ($1, 0, TRUE)
			ON CONFLICT (key) DO UPDATE SET sealed = TRUE
			RETURNING next`,
		SealUpdate: `UPDATE {p}cosid_range SET sealed = TRUE WHERE key = $1 AND next >= $2
			RETURNING next`,
		Init: `INSERT INTO {p}cosid_range (key, next, sealed) VALUES ($1, $2, FALSE)
			ON CONFLICT (key) DO NOTHING`,
		Keys: `SELECT key FROM {p}cosid_range`,
		ListRanges: `SELECT key, next, sealed FROM {p}cosid_range WHERE key{bytewise} > $1
			ORDER BY key{bytewise} LIMIT $2`,
		AdvanceRead: `SELECT next, sealed FROM {p}cosid_range WHERE key = $1{forupdate}`,
		Advance: `INSERT INTO {p}cosid_range AS r (key, next, sealed) VALUES ($1, $2, FALSE)
			ON CONFLICT (key) DO UPDATE SET next = $2 WHERE NOT r.sealed AND r.next < $2`,

		NamespaceCreate: `INSERT INTO {p}cosid_namespace (name, slot_limit, tolerance_ms) VALUES ($1, $2, $3)
			ON CONFLICT (name) DO NOTHING`,
		NamespaceRead: `SELECT slot_limit, tolerance_ms, {now} FROM {p}cosid_namespace WHERE name = $1`,
		NamespaceList: `SELECT name, slot_limit, tolerance_ms, sealed FROM {p}cosid_namespace`,
		NamespaceLock: `SELECT slot_limit, tolerance_ms, sealed, {now},
			(SELECT slots FROM {p}cosid_owner WHERE namespace = $1 AND owner = $2),
			(SELECT value FROM {p}cosid_meta WHERE name = 'slot_fence_floor')
			FROM {p}cosid_namespace WHERE name = $1{forshare}`,
		NamespaceSealed: `SELECT sealed FROM {p}cosid_namespace WHERE name = $1{forshare}`,
		NamespaceSeal: `INSERT INTO {p}cosid_namespace AS n (name, slot_limit, tolerance_ms, sealed) VALUES ($1, 0, 0, TRUE)
			ON CONFLICT (name) DO UPDATE SET sealed = TRUE`,
		NamespaceSlot: `SELECT slot FROM {p}cosid_slot WHERE namespace = $1
			UNION ALL SELECT slot FROM {p}cosid_slot_used WHERE namespace = $1 LIMIT 1`,
		NamespaceCreateOne: nsCreate,
		OwnerWrite: `INSERT INTO {p}cosid_owner AS o (namespace, owner, slots) VALUES ($1, $2, $3)
			ON CONFLICT (namespace, owner) DO UPDATE SET slots = $3`,

		SlotFree: free,
		SlotGap:  SlotGap("BIGINT", ""),
		SlotList: `SELECT ` + slotCols + ` FROM {p}cosid_slot WHERE namespace = $1 ORDER BY slot`,
		SlotInsert: `INSERT INTO {p}cosid_slot (namespace, ` + slotCols + `)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
			ON CONFLICT (namespace, slot) DO NOTHING`,
		SlotUpdate: `UPDATE {p}cosid_slot SET owner = $3, incarnation = $4, last_owner = $5,
			fence = $6, ttl_ms = $7, tolerance_ms = $8, floor = $9, expires_min = $10, ceiling_min = $11,
			next_floor = $12, mtime = $13, expires_at = $14, ceiling = $15, version = $16
			WHERE namespace = $1 AND slot = $2 AND version = $17`,
		SlotRead:      `SELECT ` + slotCols + `, {now} FROM {p}cosid_slot WHERE namespace = $1 AND slot = $2`,
		SlotsHead:     `SELECT ` + slotCols + ` FROM {p}cosid_slot WHERE namespace = $1 AND slot IN (`,
		SlotsTail:     `) ORDER BY slot{forupdate}`,
		SlotsTailSkip: `) ORDER BY slot` + d.FreeSearch[0],
		SlotsTailRead: `) ORDER BY slot`,
		SlotsTailLast: `) ORDER BY slot` + d.FreeSearch[len(d.FreeSearch)-1],
		SlotExists:    `SELECT count(*) FROM {p}cosid_slot WHERE namespace = $1 AND slot = $2`,
		SlotUsed: `INSERT INTO {p}cosid_slot_used (namespace, slot) VALUES ($1, $2)
			ON CONFLICT (namespace, slot) DO NOTHING`,
		SlotCreate: create,

		PurgeNamespaces: `SELECT name FROM {p}cosid_namespace`,
		PurgeSlots:      `SELECT CAST(slot AS TEXT) FROM {p}cosid_slot WHERE namespace = $1`,
		PurgeOwners:     `SELECT owner FROM {p}cosid_owner WHERE namespace = $1`,
		PurgeTerms: `SELECT namespace, ` + slotCols + `, {now} FROM {p}cosid_slot
			ORDER BY namespace, slot`,
		PurgeSealedKeys:       `SELECT key FROM {p}cosid_range WHERE sealed`,
		PurgeSealedNamespaces: `SELECT name FROM {p}cosid_namespace WHERE sealed`,
		PurgeDelete: []string{`DELETE FROM {p}cosid_range`, `DELETE FROM {p}cosid_slot`, `DELETE FROM {p}cosid_slot_used`,
			`DELETE FROM {p}cosid_owner`, `DELETE FROM {p}cosid_namespace`,
			`DELETE FROM {p}cosid_meta WHERE name LIKE 'layout/%'`}, // a layout goes with its namespace
		Ping: `SELECT 1`,
	}
	return st, d.Prepare(st)
}

// SlotGap is the statement of the first slot never used in the search
// order from $3 (driver.SearchOrder), in a namespace of $2 slots, for a
// database whose integer type is integer and whose SELECT without a table
// ends with noTable: $3 itself; else the first slot right after a used
// one from $3 on; else 0; else the first right after a used one below
// $3. Each walks the key's index from its point and stops at the first
// gap, so the cost is the distance to it, not the namespace's size (a
// fleet spread over it finds a gap near), and each runs only when those
// before it found none (COALESCE): the walk from 0, which a search finds
// nothing in unless it wraps, is not made. SlotGapFree adds whether a
// row lies before the gap that the search may take; LIMIT 1 keeps the
// gap a row of its own, computed once (merged into that statement, it
// would be computed again at each use).
func SlotGap(integer, noTable string) string {
	after := `(SELECT a.slot + 1 FROM {p}cosid_slot a WHERE a.namespace = $1 AND a.slot + 1 < $2
		AND NOT EXISTS (SELECT 1 FROM {p}cosid_slot b WHERE b.namespace = $1 AND b.slot = a.slot + 1)
		AND a.slot %s $3 ORDER BY a.slot LIMIT 1)`
	never := `(SELECT CAST(%s AS ` + integer + `)` + noTable + `
		WHERE NOT EXISTS (SELECT 1 FROM {p}cosid_slot WHERE namespace = $1 AND slot = %[1]s))`
	return SlotGapFree(`SELECT s FROM (SELECT COALESCE(` + fmt.Sprintf(never, "$3") + `,
		` + fmt.Sprintf(after, ">=") + `,
		` + fmt.Sprintf(never, "0") + `,
		` + fmt.Sprintf(after, "<") + `) AS s` + noTable + ` LIMIT 1) c WHERE s IS NOT NULL LIMIT 1`)
}

// slotFree finds the first free slot in the search order from $7
// (driver.SearchOrder) among the slots in [$7, $8) or below $9 (a stretch
// of the search order, see acquire.firstFree): released, expired, or one
// this request may take or return (its own owner: the same incarnation,
// or a reclaim). The pass's ending (Dialect.FreeSearch) goes after it.
const slotFree = `SELECT ` + slotCols + ` FROM {p}cosid_slot
	WHERE namespace = $1 AND slot < $2 AND ((slot >= $7 AND slot < $8) OR slot < $9)
	AND (owner = '' OR expires_at <= $3 OR (owner = $4 AND (incarnation = $5 OR $6)))
	AND fence < 9223372036854775807
	ORDER BY (slot + $2 - $7) % $2 LIMIT 1`

// slotCreate is SlotCreate: each write reads the rows the one before it
// returned, so a slot created meanwhile by another acquire (the insert
// writes nothing) leaves the rest unwritten, as does a record of use that
// was there already (the caller's ErrCorrupt then rolls the row back).
// The claim (CLAIM, Dialect.ClaimSlot) comes first and the insert reads
// it, so that a slot another acquire is creating costs no wait: an insert
// of a row another transaction has inserted and not yet committed waits
// for that transaction to end. The insert's values are cast since they
// come from a SELECT, not VALUES, whose columns would type them.
const slotCreate = `WITH claim AS (SELECT CASE WHEN CAST($19 AS BOOLEAN) THEN CLAIM ELSE TRUE END AS ok),
	ins AS (INSERT INTO {p}cosid_slot (namespace, ` + slotCols + `)
		SELECT CAST($1 AS TEXT), CAST($2 AS BIGINT), CAST($3 AS TEXT), CAST($4 AS TEXT), CAST($5 AS TEXT),
			CAST($6 AS BIGINT), CAST($7 AS BIGINT), CAST($8 AS BIGINT), CAST($9 AS BIGINT), CAST($10 AS BIGINT),
			CAST($11 AS BIGINT), CAST($12 AS BIGINT), CAST($13 AS BIGINT), CAST($14 AS BIGINT), CAST($15 AS BIGINT),
			CAST($16 AS BIGINT)
		FROM claim WHERE claim.ok
		ON CONFLICT (namespace, slot) DO NOTHING RETURNING slot),
	used AS (INSERT INTO {p}cosid_slot_used (namespace, slot) SELECT $1, slot FROM ins
		ON CONFLICT (namespace, slot) DO NOTHING RETURNING slot),
	idx AS (INSERT INTO {p}cosid_owner AS o (namespace, owner, slots)
		SELECT $1, CAST($17 AS TEXT), CAST($18 AS TEXT) FROM used
		ON CONFLICT (namespace, owner) DO UPDATE SET slots = EXCLUDED.slots RETURNING 1)
	SELECT (SELECT count(*) FROM ins), (SELECT count(*) FROM used), (SELECT ok FROM claim)`

// namespaceCreateOne is NamespaceCreateOne. The insert comes first, so
// that its lock on the namespace table is its first, as in the
// transaction it replaces (a purge holds that table first too). Its
// reads and the ones after it share one snapshot: a slot seen there
// with no namespace row seen beside it was there while the row was not.
const namespaceCreateOne = `WITH ins AS (INSERT INTO {p}cosid_namespace (name, slot_limit, tolerance_ms)
		SELECT $1, $2, $3 WHERE NOT EXISTS (SELECT 1 FROM {p}cosid_slot WHERE namespace = $1)
		AND NOT EXISTS (SELECT 1 FROM {p}cosid_slot_used WHERE namespace = $1)
		ON CONFLICT (name) DO NOTHING RETURNING 1)
	SELECT (SELECT count(*) FROM ins),
		(SELECT slot FROM {p}cosid_slot WHERE namespace = $1
			UNION ALL SELECT slot FROM {p}cosid_slot_used WHERE namespace = $1 LIMIT 1),
		EXISTS (SELECT 1 FROM {p}cosid_namespace WHERE name = $1)`

// SlotGapFree wraps gap, a statement whose one row (column s) is the first
// slot never used in the search order from $3 (SlotGap), so that it also
// says whether a row lies before s in that order that slotFree would
// take (at now $4, for owner $5, incarnation $6, reclaim $7), read
// without a lock. When none does, the gap is the slot to take and the
// free-slot search is not run: in a fleet starting at once on a new
// namespace that saves a round trip and a statement per acquire. A row
// freed after this read is not seen, as it would not be had the search
// run a moment earlier.
func SlotGapFree(gap string) string {
	return `SELECT g.s, EXISTS (SELECT 1 FROM {p}cosid_slot f
		WHERE f.namespace = $1 AND f.slot < $2
		AND ((f.slot >= $3 AND (f.slot < g.s OR g.s < $3)) OR (g.s < $3 AND f.slot < g.s))
		AND (f.owner = '' OR f.expires_at <= $4 OR (f.owner = $5 AND (f.incarnation = $6 OR $7)))
		AND f.fence < 9223372036854775807) AS free_before FROM (` + gap + `) g`
}

var tables = []string{
	`CREATE TABLE IF NOT EXISTS {p}cosid_meta (
		name TEXT PRIMARY KEY,
		value TEXT NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS {p}cosid_range (
		key TEXT PRIMARY KEY,
		next BIGINT NOT NULL,
		sealed BOOLEAN NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS {p}cosid_namespace (
		name TEXT PRIMARY KEY,
		slot_limit BIGINT NOT NULL,
		tolerance_ms BIGINT NOT NULL,
		sealed BOOLEAN NOT NULL DEFAULT FALSE)`,
	`CREATE TABLE IF NOT EXISTS {p}cosid_slot (
		namespace TEXT NOT NULL,
		slot BIGINT NOT NULL,
		owner TEXT NOT NULL,
		incarnation TEXT NOT NULL,
		last_owner TEXT NOT NULL,
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
		PRIMARY KEY (namespace, slot))`,
	`CREATE TABLE IF NOT EXISTS {p}cosid_owner (
		namespace TEXT NOT NULL,
		owner TEXT NOT NULL,
		slots TEXT NOT NULL,
		PRIMARY KEY (namespace, owner))`,
	slotUsedTable,
}

// slotUsedTable records each slot ever created since the last purge: a
// row that outlives its slot's row, so that a slot row deleted by hand is
// not taken as never used (Store.Acquire).
const slotUsedTable = `CREATE TABLE IF NOT EXISTS {p}cosid_slot_used (
		namespace TEXT NOT NULL,
		slot BIGINT NOT NULL,
		PRIMARY KEY (namespace, slot))`
