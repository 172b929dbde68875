package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
)

func init() {
	register(&command{name: "import-leaf", run: runImportLeaf, usage: `Usage: storectl import-leaf --leaf DSN [--table NAME] [--tag TAG]... --leaf-stopped STORE FLAGS

Reads the segment table of Meituan Leaf (leaf_alloc: biz_tag, max_id, step)
from the MySQL database that DSN names (go-sql-driver/mysql's form,
user:password@tcp(host:3306)/leaf) and starts each biz_tag as a range key
of the store at its max_id: Leaf has handed out values below max_id only,
so the store's first range of the key starts there.

Leaf has no seal: its servers go on handing out segments from the table
until they are stopped. Stop every Leaf server first, then give
--leaf-stopped; without it, nothing is read or written (exit code 3). A
Leaf server left running hands out values the store hands out too.

A key the store has already, at max_id or above, is left as it is (a
rerun after a partial import is safe); one below max_id, or sealed, is
refused (exit code 3) and named, the other keys imported: raise it with
storectl advance. A biz_tag that is not a valid key is refused the same way.
SIGINT or SIGTERM stops it after the biz_tag in hand: it says how many it
did and what to run next (exit code 4).

  --leaf DSN        the Leaf database (required); its password is never printed
  --table NAME      the table (default leaf_alloc)
  --tag TAG         import only this biz_tag (repeats; default every row)
  --leaf-stopped    every Leaf server is stopped (required)

` + storeFlagsUsage})
}

// leafTable is a table name the import accepts: no quoting needed.
var leafTable = regexp.MustCompile(`^[A-Za-z0-9_$]{1,64}$`)

// leafRow is one row of leaf_alloc.
type leafRow struct {
	tag   string
	maxID int64
	step  int64
}

func runImportLeaf(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("import-leaf")
	var sf storeFlags
	sf.register(fs)
	dsn := fs.String("leaf", "", "the Leaf database's DSN")
	table := fs.String("table", "leaf_alloc", "the Leaf table")
	var tags optionList
	fs.Var(&tags, "tag", "import only this biz_tag (repeats)")
	stopped := fs.Bool("leaf-stopped", false, "every Leaf server is stopped")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(pos) > 0:
		return usagef("unexpected argument %q", pos[0])
	case *dsn == "":
		return usagef("--leaf DSN is required: the MySQL database of Leaf's %s table", *table)
	case !leafTable.MatchString(*table):
		return usagef("--table %q: a table name of letters, digits, '_' and '$', at most 64", *table)
	}
	if !*stopped {
		return refusedf("Leaf has no seal: stop every Leaf server (they hand out segments from %s until they stop), "+
			"then run again with --leaf-stopped; nothing was read or written", *table)
	}
	fmt.Fprintf(e.stderr, "import-leaf: every Leaf server must be stopped now: one still running hands out values the store hands out too\n")
	rows, err := readLeaf(ctx, *dsn, *table, tags)
	if err != nil {
		return err
	}
	st, desc, err := sf.open(openOrCreate)
	if err != nil {
		return err
	}
	defer st.Close()
	var refused []string
	for i, r := range rows {
		// A signal starts no further key; the one in hand finishes.
		if sig, ok := interrupted(ctx); ok {
			return interruptedf("%s: stopped after %d of %d biz_tags (those printed above, %d of them refused); "+
				"each is either imported or untouched. Keep the instances stopped: the keys not imported yet "+
				"would start at 0.\n%s", sig, i, len(rows), len(refused), rerunAdvice(e))
		}
		msg, err := importKey(context.WithoutCancel(ctx), st.Ranges(), r)
		if err != nil {
			if !errors.Is(err, errRefusedKey) {
				return fmt.Errorf("biz_tag %q: %w (the keys before it are imported; run again to go on)", r.tag, err)
			}
			refused = append(refused, fmt.Sprintf("%q: %v", r.tag, err))
			fmt.Fprintf(e.stdout, "%s: refused: %v\n", r.tag, err)
			continue
		}
		fmt.Fprintf(e.stdout, "%s: %s (Leaf max_id %d, step %d)\n", r.tag, msg, r.maxID, r.step)
	}
	fmt.Fprintf(e.stdout, "%d biz_tags read from %s, %d refused, into %s\n", len(rows), *table, len(refused), desc)
	if len(refused) > 0 {
		return refusedf("%d biz_tags refused (the others are imported): %s", len(refused), strings.Join(refused, "; "))
	}
	return nil
}

// errRefusedKey marks a key the import leaves alone, the others going on.
var errRefusedKey = errors.New("refused")

// importKey starts key r.tag at r.maxID unless the store has it at or
// above. (Current tells a missing key from one in use unless both are at
// 0, where Init at 0 is right for both.)
func importKey(ctx context.Context, rs *store.RangeStore, r leafRow) (string, error) {
	cur, sealed, err := rs.Current(ctx, r.tag)
	switch {
	case errors.Is(err, store.ErrInvalidArgument):
		return "", fmt.Errorf("%w: not a valid key: %v", errRefusedKey, err)
	case err != nil:
		return "", err
	case sealed:
		return "", fmt.Errorf("%w: the store's key is sealed at %d (it moved on to another store)", errRefusedKey, cur)
	case cur > 0 && cur >= r.maxID:
		return fmt.Sprintf("already at %d, at or above max_id; nothing changed", cur), nil
	}
	err = rs.Init(ctx, r.tag, r.maxID)
	if errors.Is(err, store.ErrConfigMismatch) {
		at := "at a lower value,"
		if cur, _, cerr := rs.Current(ctx, r.tag); cerr == nil {
			at = fmt.Sprintf("at %d,", cur)
		}
		return "", fmt.Errorf("%w: the store's key is %s below max_id %d; nothing changed (storectl advance raises it)",
			errRefusedKey, at, r.maxID)
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("initialised at %d", r.maxID), nil
}

// readLeaf reads the rows of table (those of tags, if any) in one query.
func readLeaf(ctx context.Context, dsn, table string, tags []string) ([]leafRow, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, usagef("--leaf: not a MySQL DSN (user:password@tcp(host:3306)/database)")
	}
	if cfg.DBName == "" {
		return nil, usagef("--leaf: the DSN names no database (…/database)")
	}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, usagef("--leaf: %v", err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	q := "SELECT biz_tag, max_id, step FROM `" + table + "`"
	var args []any
	if len(tags) > 0 {
		q += " WHERE biz_tag IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(tags)), ", ") + ")"
		for _, t := range tags {
			args = append(args, t)
		}
	}
	rows, err := db.QueryContext(ctx, q+" ORDER BY biz_tag", args...)
	if err != nil {
		return nil, fmt.Errorf("read Leaf's %s at %s: %w", table, cfg.Addr, err)
	}
	defer rows.Close()
	var out []leafRow
	for rows.Next() {
		var r leafRow
		if err := rows.Scan(&r.tag, &r.maxID, &r.step); err != nil {
			return nil, fmt.Errorf("read Leaf's %s: %w", table, err)
		}
		if r.maxID < 0 {
			return nil, fmt.Errorf("the Leaf table %s: biz_tag %q has max_id %d, below 0: %w; nothing imported", table, r.tag, r.maxID, driver.ErrCorrupt)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if missing := missingTags(tags, out); len(missing) > 0 {
		return nil, fmt.Errorf("no biz_tag %s in Leaf's %s; nothing imported", strings.Join(missing, ", "), table)
	}
	return out, nil
}

// missingTags lists the tags asked for that no row has.
func missingTags(tags []string, rows []leafRow) []string {
	have := map[string]bool{}
	for _, r := range rows {
		have[r.tag] = true
	}
	var out []string
	for _, t := range tags {
		if !have[t] {
			out = append(out, fmt.Sprintf("%q", t))
		}
	}
	return out
}

// optionList collects a repeated flag's values.
type optionList []string

func (o *optionList) String() string { return strings.Join(*o, ",") }

func (o *optionList) Set(s string) error {
	*o = append(*o, s)
	return nil
}
