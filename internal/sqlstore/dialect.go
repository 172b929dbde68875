package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Dialect is everything the shared logic leaves to the database: its SQL
// that differs, and what its errors mean. The shared files name no
// database; each dialect lives in a package of its own (sqlitedialect,
// pgdialect), so a program linking one driver links one database library.
type Dialect struct {
	Name string
	// Prefix goes before every table name: `"myschema".` or "".
	Prefix string
	// Now is an SQL expression: the database's clock, ms since the epoch.
	Now string
	// ForUpdate ends a SELECT of slot rows that Acquire may then write,
	// so that it locks them; empty where a write transaction holds the
	// whole database anyway.
	ForUpdate string
	// ForShare ends a SELECT of the namespace row that Acquire and Renew
	// read before they write a slot, so that a SealNamespace (which writes
	// the row) waits for them and they for it; empty where a write
	// transaction holds the whole database anyway, or where SealLock
	// keeps the seal out instead.
	ForShare string
	// SealLock, if set, runs first in SealNamespace's transaction: a lock
	// on the namespace table that waits for every transaction that read
	// it (an Acquire, a Renew, a Seed reads its namespace row first, and
	// holds the table's weakest lock to its end) and keeps new ones out
	// until the seal commits, so that they read the seal. It replaces
	// ForShare's row lock, which every acquirer of a namespace took on its
	// one row: a shared write every acquire of a fleet had to make
	// (PostgreSQL records a row's many sharers in a MultiXact that grows
	// with each new one). A database's PurgeLock must then take the same
	// lock on the namespace table.
	SealLock string
	// Bytewise follows a text column where it is compared or sorted, so
	// that both go by bytes, as Go compares strings: the keyset pages of
	// ListRanges and ListLocks ask for the keys above the last one
	// listed. Empty where the column's collation is bytewise already.
	Bytewise string
	// FreeSearch ends the free-slot search, one pass per entry, in order,
	// until a pass finds nothing: with row locks, first a pass that skips
	// rows other acquirers hold, then one that takes their locks without
	// queueing (a lock it cannot have at once fails the transaction, and
	// DB.Tx tries it again), so two acquirers never wait on each other.
	// Where a write transaction is exclusive, one pass with no ending.
	FreeSearch []string
	// WritesInWith: the database runs writes in a WITH clause and
	// passes their RETURNING rows on (PostgreSQL), so that a slot's new
	// row, its record of use and its owner's index are written by one
	// statement (statements.SlotCreate) instead of three round trips,
	// each a wait for the server under a fleet's load.
	WritesInWith bool
	// ClaimSlot, where WritesInWith, is an SQL boolean of a namespace ($1)
	// and a slot ($2): it takes, without waiting, a lock held to the
	// transaction's end that every acquire creating that slot takes
	// first, and says whether it got it (PostgreSQL: an advisory lock).
	// An acquire that does not get it passes over the slot, which
	// another is creating, instead of waiting for that one's transaction
	// to end only to find the slot taken (statements.SlotCreate). Empty:
	// no such lock.
	ClaimSlot string
	// Numbered turns placeholder n into the database's form; nil keeps $n.
	Numbered func(n int) string
	// HasMeta is a query whose one boolean says whether cosid_meta exists.
	HasMeta string
	// ListTables, if set, lists every table of a database the store has to
	// itself: one with tables but no cosid_meta is someone else's and is
	// refused. Nil where the store's tables sit among others' (a schema).
	ListTables func(ctx context.Context, tx Querier) ([]string, error)
	// Setup runs before the tables are created, in the same transaction
	// (a lock against concurrent creation, a schema).
	Setup func(ctx context.Context, tx Querier) error
	// Tables are the driver's own, created after the shared ones.
	Tables []string
	// PurgeLock, if set, runs first in Purge's transaction and keeps every
	// slot write (an Acquire, Renew, Release or seed) out until it ends, so
	// that the check of live terms holds until the rows are deleted; empty
	// where a write transaction holds the whole database anyway.
	PurgeLock string
	// PurgeMore deletes the driver's own tables in Purge's transaction
	// and says what it deleted.
	PurgeMore func(ctx context.Context, tx Querier) ([]string, error)
	// Classify says what an error of the database means, from its code
	// (never its message); nil classifies every error Other.
	Classify func(error) Kind
	// Statements replaces shared statements whose syntax the database
	// lacks, by field name ("Next", or "Create[1]" for one element of a
	// list), before they are checked and rewritten (Prepare): a name that
	// is no statement fails the first open, as an empty one does.
	Statements map[string]string
}

// Kind is what a database error means to the store.
type Kind int

const (
	// Other is any error the store does not act on.
	Other Kind = iota
	// NotADatabase: the file is not a database of the dialect's kind.
	NotADatabase
	// Aborted: the database rolled the transaction back (a deadlock, a
	// lock it could not have, a serialization failure); it changed
	// nothing and may be tried again.
	Aborted
	// MissingParent: a row referred to a row that is gone (a foreign key).
	MissingParent
)

func (k Kind) String() string {
	switch k {
	case NotADatabase:
		return "not a database"
	case Aborted:
		return "aborted"
	case MissingParent:
		return "missing parent"
	}
	return "other"
}

// Kind classifies err with the dialect's Classify.
func (d Dialect) Kind(err error) Kind {
	if err == nil || d.Classify == nil {
		return Other
	}
	return d.Classify(err)
}

// check refuses a dialect missing what the shared logic needs.
func (d Dialect) check() error {
	var missing []string
	for _, f := range []struct {
		name  string
		empty bool
	}{
		{"Name", d.Name == ""},
		{"Now", d.Now == ""},
		{"HasMeta", d.HasMeta == ""},
		{"FreeSearch", len(d.FreeSearch) == 0},
	} {
		if f.empty {
			missing = append(missing, f.name)
		}
	}
	if missing != nil {
		return fmt.Errorf("sqlstore: dialect %q has no %s", d.Name, strings.Join(missing, ", "))
	}
	if d.ForUpdate != "" && d.ForShare == "" && d.SealLock == "" {
		// Row locks but nothing to keep a seal from passing an acquire.
		return fmt.Errorf("sqlstore: dialect %q locks rows (ForUpdate) but has neither ForShare nor SealLock", d.Name)
	}
	return nil
}

// Placeholder is placeholder n in the database's form.
func (d Dialect) Placeholder(n int) string {
	if d.Numbered == nil {
		return "$" + strconv.Itoa(n)
	}
	return d.Numbered(n)
}

// Rewrite returns statement q for the database: {p} becomes the table
// prefix, {now} the clock, {forupdate} the row lock, $n the dialect's
// placeholder, {forshare} the namespace row's lock, {bytewise} the
// bytewise collation. The markers are replaced in one pass: what goes in (a
// schema name in the prefix) is never searched again.
func (d Dialect) Rewrite(q string) string {
	q = strings.NewReplacer("{p}", d.Prefix, "{now}", d.Now, "{forupdate}", d.ForUpdate, "{forshare}", d.ForShare,
		"{bytewise}", d.Bytewise).Replace(q)
	if d.Numbered == nil {
		return q
	}
	var b strings.Builder
	for i := 0; i < len(q); i++ {
		if q[i] == '$' && i+1 < len(q) && q[i+1] >= '0' && q[i+1] <= '9' {
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			n, _ := strconv.Atoi(q[i+1 : j])
			b.WriteString(d.Numbered(n))
			i = j - 1
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

// marker is what a statement template may hold between braces.
var marker = regexp.MustCompile(`\{[a-z]*\}`)

// Prepare rewrites, in place, every statement of *stmts, a struct whose
// fields are strings or slices of strings, for the database (Rewrite). It
// fails naming each field left empty (but a string tagged stmt:"optional",
// which the code runs only when set) and each marker it does not know: a
// statement forgotten or mistyped fails the first open of a store, in
// every test, instead of a user's call.
func (d Dialect) Prepare(stmts any) error {
	v := reflect.ValueOf(stmts)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("sqlstore: Prepare takes a pointer to a struct of statements, not %T", stmts)
	}
	v = v.Elem()
	var errs []error
	if err := d.override(v); err != nil {
		errs = append(errs, err)
	}
	one := func(name string, s reflect.Value) {
		q := s.String()
		if strings.TrimSpace(q) == "" {
			errs = append(errs, fmt.Errorf("%s is empty", name))
		}
		for _, m := range marker.FindAllString(q, -1) {
			if m != "{p}" && m != "{now}" && m != "{forupdate}" && m != "{forshare}" && m != "{bytewise}" {
				errs = append(errs, fmt.Errorf("%s has the unknown marker %s", name, m))
			}
		}
		s.SetString(d.Rewrite(q))
	}
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Name()+"."+v.Type().Field(i).Name
		switch {
		case f.Kind() == reflect.String && f.String() == "" && v.Type().Field(i).Tag.Get("stmt") == "optional":
			// A statement the dialect has no form of.
		case f.Kind() == reflect.String:
			one(name, f)
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
			if f.Len() == 0 {
				errs = append(errs, fmt.Errorf("%s is empty", name))
			}
			for j := range f.Len() {
				one(fmt.Sprintf("%s[%d]", name, j), f.Index(j))
			}
		default:
			errs = append(errs, fmt.Errorf("%s is a %s, not a statement", name, f.Type()))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqlstore: statements for %s: %w", d.Name, err)
	}
	return nil
}

// override puts the dialect's own statements (Dialect.Statements) into
// the struct of statements v.
func (d Dialect) override(v reflect.Value) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(d.Statements)) {
		field, index := name, -1
		if i := strings.IndexByte(name, '['); i > 0 && strings.HasSuffix(name, "]") {
			n, err := strconv.Atoi(name[i+1 : len(name)-1])
			if err != nil || n < 0 {
				errs = append(errs, fmt.Errorf("the dialect's statement %q has no valid index", name))
				continue
			}
			field, index = name[:i], n
		}
		f := v.FieldByName(field)
		switch {
		case index < 0 && f.Kind() == reflect.String:
			f.SetString(d.Statements[name])
		case index >= 0 && f.Kind() == reflect.Slice && index < f.Len():
			f.Index(index).SetString(d.Statements[name])
		default:
			errs = append(errs, fmt.Errorf("the dialect replaces %q, which is no statement", name))
		}
	}
	return errors.Join(errs...)
}
