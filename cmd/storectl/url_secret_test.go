package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestURLPasswordNeverPrinted: a PostgreSQL URL whose password holds '#',
// '?' or '/' unencoded (pgx accepts the first two and connects) is never
// printed, by any command's output or error.
func TestURLPasswordNeverPrinted(t *testing.T) {
	dir := t.TempDir()
	for _, pw := range []string{"p#" + secretWord + "1", "p?" + secretWord + "2", "pa/" + secretWord + "3"} {
		cs := "postgres://u:" + pw + "@127.0.0.1:1/db?connect_timeout=2"
		s := storeSpec{driver: "postgres", options: map[string]string{"connString": cs}}
		target := storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(dir, "t.db")}}
		for _, a := range [][]string{
			with(args("inspect"), s.flags()),
			with(args("init"), s.flags(), args("orders", "1")),
			{"migrate", "--from", s.spec(), "--to", target.spec()},
			{"migrate", "--from", s.spec() + ",=x", "--to", target.spec()},
			{"migrate", "--from", target.spec(), "--to", s.spec()},
		} {
			r := exe(t, a...)
			if strings.Contains(r.stdout+r.stderr, secretWord) {
				t.Errorf("storectl %s printed the password %q:\nstdout:\n%s\nstderr:\n%s", a[0], pw, r.stdout, r.stderr)
			}
		}
	}
}
