package main

import (
	"context"
	"fmt"

	"github.com/cosid-go/store/drivers/sqlite"
)

func init() {
	register(&command{name: "backup", run: runBackup, usage: `Usage: storectl backup FILE DEST

Copies the SQLite store in FILE to the new file DEST while programs keep
using it: SQLite reads one consistent snapshot (VACUUM INTO), including the
newest commits, which are in FILE-wal and which cp would miss. DEST must not
exist. The copy is marked as a backup: it may be behind what the store hands
out after it, so it opens for tools only (storectl inspect reads it) and
hands out nothing, nor can it be a migrate source, until storectl restore
raises it past that:

  storectl restore --raise N --no-moves DEST PATH

with every program stopped (see storectl help restore).

`})
}

func runBackup(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("backup")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 2 {
		return usagef("want FILE and DEST, got %d arguments", len(rest))
	}
	if err := sqlite.Backup(ctx, rest[0], rest[1]); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "backed up %s to %s\n", rest[0], rest[1])
	return nil
}
