package main

import (
	"os"
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

// TestMistypedSecretKeyNeverPrinted: a password under a mistyped key
// (pasword, pass), which redact cannot tell from any other option, is
// refused by the driver as an unknown option; storectl's messages then name
// the store's options without their values.
func TestMistypedSecretKeyNeverPrinted(t *testing.T) {
	dir := t.TempDir()
	target := storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(dir, "t.db")}}
	exe(t, with(args("init"), target.flags(), args("orders", "1"))...).want(t, exitOK, "initialised at 1")
	for _, key := range []string{"pasword", "pass"} {
		s := storeSpec{driver: "postgres", options: map[string]string{
			"connString": "host=127.0.0.1 port=1 connect_timeout=2", key: secretWord + "9"}}
		cfg := filepath.Join(dir, key+".yaml")
		y := "stores:\n  s:\n    type: postgres\n    options:\n      connString: host=127.0.0.1\n      " + key + ": " + secretWord + "9\n"
		if err := os.WriteFile(cfg, []byte(y), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, a := range [][]string{
			with(args("inspect"), s.flags()),
			with(args("init"), s.flags(), args("orders", "1")),
			{"inspect", "--config", cfg},
			{"migrate", "--from", s.spec(), "--to", target.spec()},
			{"migrate", "--from", target.spec(), "--to", s.spec()},
			{"migrate", "--from", s.spec() + ",=x", "--to", target.spec()},
			{"migrate", "--config", cfg, "--from", "s", "--to", target.spec()},
		} {
			r := exe(t, a...)
			r.want(t, exitUsage)
			if strings.Contains(r.stdout+r.stderr, secretWord) {
				t.Errorf("storectl %v printed the value of %s:\nstdout:\n%s\nstderr:\n%s", a, key, r.stdout, r.stderr)
			}
		}
	}
}
