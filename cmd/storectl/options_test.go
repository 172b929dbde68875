package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestOptionMessages: a refused option is bad usage (exit 2) naming the
// option, its value and the reason; each message says it once.
func TestOptionMessages(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing", "ids.db")
	for _, tc := range []struct {
		args []string
		code int
		say  string
	}{
		{args("inspect", "--driver", "postgres", "-o", "poolSize=3000000000"), exitUsage,
			`option "poolSize": value "3000000000": must be between 1 and 10000`},
		{args("inspect", "--driver", "postgres", "-o", "poolSize=99999999999"), exitUsage,
			`option "poolSize": value "99999999999": must be between 1 and 10000`},
		{args("inspect", "--driver", "postgres", "-o", "sslmode=bogus"), exitUsage,
			`option "sslmode": value "bogus": not one of disable, allow, prefer, require, verify-ca, verify-full`},
		{args("inspect", "--driver", "postgres", "-o", "port=99999"), exitUsage, `option "port": value "99999": must be between 1 and 65535`},
		{args("inspect", "--driver", "postgres", "-o", "host="), exitUsage, `option "host": value "": empty`},
		{args("inspect", "--driver", "zookeeper", "-o", "sessionTimeout=9223372036855"), exitUsage,
			`option "sessionTimeout": value "9223372036855": must be between 1ms and 24h`},
		{args("inspect", "--driver", "sqlite"), exitUsage, `option "path": value "": a file path is required` + "\n"},
		{args("inspect", "--driver", "sqlite", "-o", "path="+missing), exitFailed,
			filepath.Dir(missing) + ": no such file or directory"},
	} {
		r := ctl(tc.args...)
		r.want(t, tc.code, tc.say)
		if strings.Contains(r.stderr, "invalid argument") {
			t.Errorf("%q: the sentinel's text is appended: %s", tc.args, r.stderr)
		}
	}
}
