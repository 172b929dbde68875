package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	_ "github.com/cosid-go/store/drivers/memory"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

// backend gives the tests fresh, isolated stores of one driver. Every test
// that runs through forEachBackend runs on each backend, so a ZooKeeper
// backend is one more entry, added from a file of its own:
//
//	func init() {
//		backends = append(backends, backend{name: "zookeeper", fresh: func(t *testing.T) storeSpec {
//			return storeSpec{driver: "zookeeper", options: map[string]string{
//				"connectString": server, "root": uniqueRoot(t)}}
//		}})
//	}
type backend struct {
	name string
	// fresh returns the driver and options of a new, empty store that no
	// other test sees. Each call is another store.
	fresh func(t *testing.T) storeSpec
	// noLocks, if set, says why the driver has no locks: the tests that
	// need them skip on it (needLocks).
	noLocks string
}

// needLocks skips a test of backend b that needs locks b lacks.
func needLocks(t *testing.T, b backend) {
	t.Helper()
	if b.noLocks != "" {
		t.Skip(b.noLocks)
	}
}

var backends = []backend{{name: "memory", fresh: freshMemory}}

var seq atomic.Int64

func freshMemory(t *testing.T) storeSpec {
	return storeSpec{driver: "memory", options: map[string]string{
		"name": fmt.Sprintf("storectl/%s#%d", t.Name(), seq.Add(1)),
	}}
}

// forEachBackend runs f as a parallel subtest per backend.
func forEachBackend(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, b)
		})
	}
}

// storeSpec is one store: a driver and its options.
type storeSpec struct {
	driver  string
	options map[string]string
}

// flags selects the store with --driver and -o.
func (s storeSpec) flags() []string {
	out := []string{"--driver", s.driver}
	for _, k := range slices.Sorted(maps.Keys(s.options)) {
		out = append(out, "-o", k+"="+s.options[k])
	}
	return out
}

// spec is the store as a migrate DRIVER:KEY=VALUE,... spec.
func (s storeSpec) spec() string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(s.options)) {
		kv = append(kv, k+"="+s.options[k])
	}
	return s.driver + ":" + strings.Join(kv, ",")
}

// open opens the store through the library, as an application would, to
// set up a test and check its outcome.
func (s storeSpec) open(t testing.TB, opts ...store.Option) *store.Store {
	t.Helper()
	st, err := store.Open(s.driver, s.options, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// created makes spec's store exist, empty, and returns its identity (a
// ZooKeeper store creates its root at the first write, or when asked its
// identity).
func created(t testing.TB, spec storeSpec) string {
	t.Helper()
	id, err := spec.open(t).ID(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// result is one run of storectl.
type result struct {
	code           int
	stdout, stderr string
}

// ctl runs storectl in-process.
func ctl(args ...string) result {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// runCommand runs cmd to its end: its exit code and outputs. A command
// that does not run, or ends without an exit code (its bound passed), fails
// the test, named what.
func runCommand(t testing.TB, what string, cmd *exec.Cmd) result {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if xe, ok := errors.AsType[*exec.ExitError](err); ok {
		code = xe.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// with appends groups of arguments.
func with(groups ...[]string) []string { return slices.Concat(groups...) }

func args(a ...string) []string { return a }

// want fails the test unless the exit code is code and the outputs contain
// the given strings (stdout first, then stderr, whichever has them).
func (r result) want(t testing.TB, code int, contains ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	for _, c := range contains {
		if !strings.Contains(r.stdout, c) && !strings.Contains(r.stderr, c) {
			t.Fatalf("output lacks %q\nstdout:\n%s\nstderr:\n%s", c, r.stdout, r.stderr)
		}
	}
}

// waitPast sleeps until the local clock is past ms, with a margin for a
// server whose clock differs a little.
func waitPast(ms int64) {
	time.Sleep(time.Until(time.UnixMilli(ms + 50)))
}

func keysOf(t *testing.T, st *store.Store) []string {
	t.Helper()
	keys, err := st.Ranges().Keys(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// Test drivers: one with ranges only, and one whose server cannot be reached.
func init() {
	store.Register("test-rangesonly", func(options map[string]string) (driver.Store, error) {
		st, err := store.Open("memory", options)
		if err != nil {
			return nil, err
		}
		d := rawdriver.Of(st)
		return rangesOnly{d.(driver.RangeStore), d}, nil
	})
	store.Register("test-unreachable", func(map[string]string) (driver.Store, error) {
		return nil, errors.New("no server answered at 192.0.2.1:2181")
	})
}

type rangesOnly struct {
	driver.RangeStore
	closer driver.Store
}

func (r rangesOnly) Close() error { return r.closer.Close() }

func TestUsage(t *testing.T) {
	ctl().want(t, exitUsage, "Usage:", "Exit codes:")
	r := ctl("help")
	r.want(t, exitOK, "Exit codes:", "Registered drivers:", "memory", "DRIVER:KEY=VALUE")
	for _, c := range []string{"inspect", "seal", "init", "migrate", "purge"} {
		ctl("help", c).want(t, exitOK, "Usage: storectl "+c)
		ctl(c, "-h").want(t, exitOK, "Usage: storectl "+c)
	}
	ctl("help", "nope").want(t, exitUsage, `unknown command "nope"`)
	ctl("frobnicate").want(t, exitUsage, `unknown command "frobnicate"`, "inspect")
}

func TestBadFlags(t *testing.T) {
	m := freshMemory(t)
	m.open(t) // the commands open existing stores only
	mem := m.flags()
	for _, tc := range []struct {
		name string
		args []string
		say  string
	}{
		{"unknown flag", with(args("inspect", "--bogus"), mem), "-bogus"},
		{"option without =", args("inspect", "--driver", "memory", "-o", "name"), `option "name" is not KEY=VALUE`},
		{"option twice", args("inspect", "--driver", "memory", "-o", "name=a", "-o", "name=b"), `"name" is given twice`},
		{"unknown option", args("inspect", "--driver", "memory", "-o", "nmae=x"), `unknown option "nmae"`},
		{"unknown driver", args("inspect", "--driver", "mongo"), `unknown driver "mongo"`},
		{"no store", args("inspect"), "no store given"},
		{"driver and config", args("inspect", "--driver", "memory", "--config", "x.yaml"), "either --driver or --config"},
		{"store without config", args("inspect", "--store", "a"), "--store needs --config"},
		{"bad timeout", with(args("inspect", "--timeout", "soon"), mem), `"soon" is not a positive duration`},
		{"stray argument", with(args("inspect", "extra"), mem), `unexpected argument "extra"`},
		{"missing config", args("inspect", "--config", filepath.Join(t.TempDir(), "none.yaml")), "none.yaml"},
		{"seal without keys", with(args("seal"), mem), "no KEY given"},
		{"bad key", with(args("seal", "a//b"), mem), "empty segment"},
		{"init arity", with(args("init", "k"), mem), "want KEY VALUE"},
		{"init value", with(args("init", "k", "12x"), mem), `VALUE "12x" is not a whole number`},
		{"init negative", with(args("init"), mem, args("--", "k", "-5")), `VALUE "-5"`},
		{"init negative, no --", with(args("init", "k", "-5"), mem), `VALUE "-5" is not a whole number from 0 to`},
		{"init negative first", with(args("init", "-5", "k"), mem), `VALUE "k" is not a whole number`},
		{"init negative after flags", with(args("init"), mem, args("k", "-5")), `VALUE "-5" is not a whole number`},
		{"negative timeout", with(args("init", "k", "1", "--timeout", "-5"), mem), `"-5" is not a positive duration`},
		{"init three with a negative", with(args("init", "k", "-5", "-7"), mem), "want KEY VALUE, got 3 arguments"},
		{"purge stray", with(args("purge", "--yes", "now"), mem), `unexpected argument "now"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctl(tc.args...).want(t, exitUsage, tc.say)
		})
	}
}

func TestUnreachable(t *testing.T) {
	ctl("inspect", "--driver", "test-unreachable").want(t, exitFailed, "cannot open test-unreachable", "192.0.2.1:2181")
}

func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	a, b := freshMemory(t), freshMemory(t)
	yaml := fmt.Sprintf("cosid:\n  stores:\n    a:\n      type: memory\n      timeout: 2s\n      options:\n        name: %q\n    b:\n      type: memory\n      options:\n        name: %q\n",
		a.options["name"], b.options["name"])
	two := filepath.Join(dir, "two.yaml")
	if err := os.WriteFile(two, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	one := filepath.Join(dir, "one.json")
	if err := os.WriteFile(one, []byte(fmt.Sprintf(`{"stores": {"only": {"type": "memory", "options": {"name": %q}}}}`, b.options["name"])), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := a.open(t).Ranges().Next(t.Context(), "orders", 100); err != nil {
		t.Fatal(err)
	}
	ctl("seal", "--config", two, "--store", "a", "orders").want(t, exitOK, "orders: sealed at 100")
	ctl("inspect", "--config", two).want(t, exitUsage, "has 2 stores", "a, b")
	ctl("inspect", "--config", two, "--store", "c").want(t, exitUsage, `no store "c"`, "a, b")
	ctl("inspect", "--config", two, "--store", "a", "-o", "name=x").want(t, exitUsage, "-o applies to --driver")
	ctl("init", "--config", one, "users", "7").want(t, exitOK, "users: initialised at 7")
	ctl("migrate", "--config", two, "--adopt-sealed", "--from", "a", "--to", "b").want(t, exitOK,
		`source: "a" (memory name=`, "key orders: already sealed in source at 100; initialised in target at 100")
	if got := keysOf(t, b.open(t)); !slices.Equal(got, []string{"orders", "users"}) {
		t.Fatalf("keys of b: %v", got)
	}
}

func TestInspectUnsupported(t *testing.T) {
	spec := storeSpec{driver: "test-rangesonly", options: freshMemory(t).options}
	if _, err := spec.open(t).Ranges().Next(context.Background(), "k", 5); err != nil {
		t.Fatal(err)
	}
	r := ctl(with(args("inspect"), spec.flags())...)
	r.want(t, exitOK, "SLOTS: unsupported by this driver", "LOCKS: unsupported by this driver")
	if !strings.Contains(r.stdout, "RANGES (1 key)") {
		t.Fatalf("ranges missing:\n%s", r.stdout)
	}
	var doc map[string]any
	decodeJSON(t, ctl(with(args("inspect", "--json"), spec.flags())...), &doc)
	if doc["namespaces"] != nil || doc["locks"] != nil {
		t.Errorf("unsupported sections are not null: %v", doc)
	}
	if got := fmt.Sprint(doc["unsupported"]); got != "[slots locks]" {
		t.Errorf("unsupported %s, want [slots locks]", got)
	}
	ctl(with(args("purge", "--yes"), spec.flags())...).want(t, exitFailed, "cannot purge")
}
