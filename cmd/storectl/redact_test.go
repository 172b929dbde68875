package main

import "testing"

func TestRedactURLPassword(t *testing.T) {
	for in, want := range map[string]string{
		"connString=postgres://u:p#x@db:5432/ids":         "connString=postgres://u:***@db:5432/ids",
		"connString=postgres://u:p?x@db/ids?a=1 schema=s": "connString=postgres://u:***@db/ids?a=1 schema=s",
		`"postgres://u:pa/x@db/ids,=x": bad`:              `"postgres://u:***@db/ids,=x": bad`,
		"postgres://u:p@x@db/ids":                         "postgres://u:***@db/ids",
		"postgres://u@db/ids":                             "postgres://u@db/ids",
		"postgres://db:5432/ids and path=/x":              "postgres://db:5432/ids and path=/x",
		"password=x":                                      "password=***",
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}
