package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/jackc/pgx/v5"

	"github.com/cosid-go/store/internal/testing/pgtest"
	"github.com/cosid-go/store/internal/testing/zktest"
)

// The storectl binary, built once by the first test that runs it, as an
// operator builds it: go build of this package, whose test files (which
// could register drivers) are not part of it. TestMain removes it.
var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func storectlBinary(t *testing.T) string {
	t.Helper()
	binary.once.Do(func() {
		binary.dir, binary.err = os.MkdirTemp("", "storectl-bin-")
		if binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "storectl")
		out, err := exec.Command("go", "build", "-o", binary.path, ".").CombinedOutput()
		if err != nil {
			binary.err = fmt.Errorf("go build of storectl: %v\n%s", err, out)
		}
	})
	if binary.err != nil {
		t.Fatal(binary.err)
	}
	return binary.path
}

func removeBinary() {
	for _, dir := range append([]string{binary.dir, nextVersion.dir}, versions.dirs...) {
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
}

// exe runs the built binary. Its bound is generous: a loaded machine.
func exe(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	return runCommand(t, fmt.Sprintf("storectl %v", args), exec.CommandContext(ctx, storectlBinary(t), args...))
}

var idLine = regexp.MustCompile(`(?m)^id     ([0-9a-f]{32})$`)

// TestBinary runs the built binary against every driver of the module:
// none is registered by a test file in it.
func TestBinary(t *testing.T) {
	exe(t, "help").want(t, exitOK, "Registered drivers: etcd, memory, mysql, postgres, sqlite, zookeeper\n")
	dir := t.TempDir()
	sqliteSpec := func(name string) storeSpec {
		return storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(dir, name)}}
	}
	specs := []storeSpec{
		sqliteSpec("a.db"),
		{driver: "postgres", options: map[string]string{
			"connString": pgtest.Shared(t).ConnString(),
			"schema":     fmt.Sprintf("storectl_bin_%d_%d", os.Getpid(), seq.Add(1)),
		}},
		zkSpec(t, servers.addr(t, zktest.Versions()[0]), nil),
		etcdSpec(t, nil),
	}
	for i, s := range specs {
		t.Run(s.driver, func(t *testing.T) {
			exe(t, with(args("inspect"), s.flags())...).want(t, exitFailed, "no store ")
			exe(t, with(args("init"), s.flags(), args("orders", "5"))...).want(t, exitOK, "orders: initialised at 5")
			r := exe(t, with(args("inspect"), s.flags())...)
			r.want(t, exitOK, "RANGES (1 key)")
			m := idLine.FindStringSubmatch(r.stdout)
			if m == nil {
				t.Fatalf("inspect shows no identity:\n%s", r.stdout)
			}
			if id := created(t, s); id != m[1] {
				t.Fatalf("inspect shows identity %s, the library reads %s", m[1], id)
			}
			exe(t, with(args("seal"), s.flags(), args("orders"))...).want(t, exitOK, "orders: sealed at 5")
			// Into the next driver's fresh store, which migrate creates.
			to := sqliteSpec(fmt.Sprintf("to-%d.db", i))
			// Sealed by hand and missing in the target: it may have
			// moved elsewhere, so only --adopt-sealed carries it.
			exe(t, "migrate", "--from", s.spec(), "--to", to.spec()).want(t, exitRefused,
				`key "orders": sealed in the source at 5 and missing in the target`, "--adopt-sealed", "nothing changed")
			exe(t, "migrate", "--adopt-sealed", "--from", s.spec(), "--to", to.spec()).want(t, exitOK,
				"key orders: already sealed in source at 5; initialised in target at 5")
		})
	}
	t.Run("memory", func(t *testing.T) {
		// A memory store lives in one process: init makes one, in the
		// binary's process only; inspect, in another, finds none.
		mem := storeSpec{driver: "memory", options: map[string]string{"name": "a"}}
		exe(t, with(args("init"), mem.flags(), args("orders", "5"))...).want(t, exitOK, "orders: initialised at 5")
		exe(t, with(args("inspect"), mem.flags())...).want(t, exitFailed, `no store at name "a"`)
		exe(t, "migrate", "--adopt-sealed", "--from", sqliteSpec("a.db").spec(), "--to", mem.spec()).want(t, exitOK,
			"key orders: already sealed in source at 5; initialised in target at 5")
	})
}

// zkSpec is a fresh ZooKeeper store on addr.
func zkSpec(t *testing.T, addr string, extra map[string]string) storeSpec {
	return storeSpec{driver: "zookeeper", options: zkOptions(t, addr, extra)}
}

// The read-only commands on a store that does not exist: each says so and
// creates nothing (no file, no ZooKeeper root, no PostgreSQL schema or
// table).
func TestReadOnlyCreatesNothing(t *testing.T) {
	readOnly := func(t *testing.T, s storeSpec, say string) {
		t.Helper()
		for _, cmd := range [][]string{
			args("inspect"), args("inspect", "--json"), args("acl"), args("purge"), args("purge", "--yes"),
			args("seal", "orders"), args("seal", "--create", "orders"),
		} {
			ctl(with(cmd, s.flags())...).want(t, exitFailed, say)
		}
		ctl("migrate", "--from", s.spec(), "--to", freshMemory(t).spec()).want(t, exitFailed, say)
		// And the binary, once.
		exe(t, with(args("inspect"), s.flags())...).want(t, exitFailed, say)
		// A read-only command refuses to be told to create.
		ctl(with(args("inspect"), s.flags(), args("-o", "create=true"))...).want(t, exitUsage, "never creates a store")
	}
	const noStore = "no store at "
	t.Run("memory", func(t *testing.T) { readOnly(t, freshMemory(t), noStore) })
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		for _, path := range []string{filepath.Join(dir, "ids.db"), filepath.Join(dir, "missing", "ids.db")} {
			readOnly(t, storeSpec{driver: "sqlite", options: map[string]string{"path": path}}, noStore)
		}
		// An existing empty file is refused, and stays as it was.
		empty := filepath.Join(dir, "empty.db")
		if err := os.WriteFile(empty, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		readOnly(t, storeSpec{driver: "sqlite", options: map[string]string{"path": empty}}, "is empty")
		if fi, err := os.Stat(empty); err != nil || fi.Size() != 0 {
			t.Fatalf("the empty file after the read-only commands: %v, %v", fi, err)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("the directory holds %v after the read-only commands, want only empty.db", names)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		srv := pgtest.Shared(t)
		schema := fmt.Sprintf("storectl_ro_%d_%d", os.Getpid(), seq.Add(1))
		s := storeSpec{driver: "postgres", options: map[string]string{"connString": srv.ConnString(), "schema": schema}}
		readOnly(t, s, noStore)
		conn, err := pgx.Connect(t.Context(), srv.ConnString())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		var n int
		if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM pg_namespace WHERE nspname = $1", schema).Scan(&n); err != nil || n != 0 {
			t.Fatalf("schema %s after the read-only commands: %d (%v), want none", schema, n, err)
		}
		// A schema without the tables: no store, and no table is made.
		if _, err := conn.Exec(t.Context(), "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
			t.Fatal(err)
		}
		readOnly(t, s, noStore)
		if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1", schema).Scan(&n); err != nil || n != 0 {
			t.Fatalf("schema %s after the read-only commands holds %d relations (%v), want none", schema, n, err)
		}
	})
	t.Run("zookeeper", func(t *testing.T) {
		addr := servers.addr(t, zktest.Versions()[0])
		s := zkSpec(t, addr, nil)
		readOnly(t, s, noStore)
		conn, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ok, _, err := conn.Exists(s.options["root"])
		if err != nil || ok {
			t.Fatalf("root %s after the read-only commands: exists %v (%v), want it missing", s.options["root"], ok, err)
		}
	})
	t.Run("etcd", func(t *testing.T) {
		s := etcdSpec(t, nil)
		readOnly(t, s, noStore)
		if n := etcdKeys(t, s.options["endpoints"], s.options["prefix"]); n != 0 {
			t.Fatalf("%d keys under prefix %s after the read-only commands, want none", n, s.options["prefix"])
		}
	})
}

// TestMigrateSameStore: one store under two spellings is refused, whatever
// the spelling, with nothing written: a SQLite file by another path and by
// a symbolic link, a ZooKeeper root through another host name, a
// PostgreSQL schema through a URL instead of keywords.
func TestMigrateSameStore(t *testing.T) {
	refused := func(t *testing.T, src storeSpec, others ...storeSpec) {
		t.Helper()
		st := src.open(t)
		next(t, st, "orders", 100)
		id := created(t, src)
		for _, other := range others {
			for _, r := range []result{ctl("migrate", "--from", src.spec(), "--to", other.spec()), exe(t, "migrate", "--from", other.spec(), "--to", src.spec())} {
				r.want(t, exitRefused, "are the same store (identity "+id+")", "nothing changed")
			}
		}
		if next, sealed, err := st.Ranges().Current(t.Context(), "orders"); err != nil || sealed || next != 100 {
			t.Fatalf("orders after the refused migrations: next %d, sealed %v (%v); want 100, not sealed", next, sealed, err)
		}
		if keys := keysOf(t, st); len(keys) != 1 {
			t.Fatalf("keys after the refused migrations: %v", keys)
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		path := filepath.Join(dir, "s.db")
		link := filepath.Join(dir, "link.db")
		if err := os.Symlink(path, link); err != nil {
			t.Fatal(err)
		}
		spelled := func(p string) storeSpec { return storeSpec{driver: "sqlite", options: map[string]string{"path": p}} }
		refused(t, spelled(path), spelled(path), spelled(dir+"/./s.db"), spelled(dir+"//s.db"), spelled(link))
	})
	t.Run("postgres", func(t *testing.T) {
		srv := pgtest.Shared(t)
		schema := fmt.Sprintf("storectl_same_%d_%d", os.Getpid(), seq.Add(1))
		kw := storeSpec{driver: "postgres", options: map[string]string{"connString": srv.ConnString(), "schema": schema}}
		url := storeSpec{driver: "postgres", options: map[string]string{
			"connString": "postgres://postgres@" + srv.Addr() + "/postgres?sslmode=disable", "schema": schema}}
		refused(t, kw, url)
	})
	t.Run("zookeeper", func(t *testing.T) {
		addr := servers.addr(t, zktest.Versions()[0])
		s := zkSpec(t, addr, nil)
		other := storeSpec{driver: "zookeeper", options: zkOptions(t, strings.Replace(addr, "127.0.0.1", "localhost", 1),
			map[string]string{"root": s.options["root"]})}
		refused(t, s, other)
	})
	t.Run("etcd", func(t *testing.T) {
		s := etcdSpec(t, nil)
		bare := strings.Replace(strings.TrimPrefix(s.options["endpoints"], "http://"), "127.0.0.1", "localhost", 1)
		spelled := func(endpoints string) storeSpec {
			return etcdSpec(t, map[string]string{"endpoints": endpoints, "prefix": s.options["prefix"]})
		}
		// The last spelling lists the member twice: a comma list, whose
		// pieces continue the value in a migrate spec.
		refused(t, s, spelled(bare), spelled(bare+","+s.options["endpoints"]))
	})
}

// TestIdentity: stores on one storage share an identity, another storage
// has another; it survives a purge; a store opened with create=false on a
// store without one (made before identities existed) writes none.
func TestIdentity(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		s := b.fresh(t)
		id := created(t, s)
		if again := created(t, s); again != id {
			t.Fatalf("a second store on the storage has identity %s, the first %s", again, id)
		}
		if other := created(t, b.fresh(t)); other == id {
			t.Fatalf("two storages have identity %s", id)
		}
		ctl(with(args("purge", "--yes"), s.flags())...).want(t, exitOK, "purged ")
		if again := created(t, s); again != id {
			t.Fatalf("after a purge the identity is %s, was %s", again, id)
		}
	})
}

// TestBinarySecrets: for each form a secret takes in the options, every
// output and error of the binary, over every command (a store missing,
// created, inspected, sealed, purged without --yes, migrated from, into
// itself, a spec that does not parse, an option refused, a server that
// does not answer, a config file), lacks the secret, and shows *** where
// it was.
func TestBinarySecrets(t *testing.T) {
	pg := pgtest.Shared(t)
	zkAddr := servers.addr(t, zktest.Versions()[0])
	pgStore := func(extra map[string]string) storeSpec {
		o := map[string]string{"schema": fmt.Sprintf("storectl_secret_%d_%d", os.Getpid(), seq.Add(1))}
		for k, v := range extra {
			o[k] = v
		}
		return storeSpec{driver: "postgres", options: o}
	}
	for _, tc := range []struct {
		name        string
		spec        storeSpec
		unreachable storeSpec
	}{
		{"url userinfo",
			pgStore(map[string]string{"connString": "postgres://postgres:" + secretWord + "1@" + pg.Addr() + "/postgres?sslmode=disable"}),
			pgStore(map[string]string{"connString": "postgres://postgres:" + secretWord + "1@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=2"})},
		{"password pair",
			pgStore(map[string]string{"connString": pg.ConnString() + " password=" + secretWord + "2"}),
			pgStore(map[string]string{"connString": "host=127.0.0.1 port=1 user=postgres password=" + secretWord + "2 connect_timeout=2"})},
		{"password option",
			pgStore(map[string]string{"connString": pg.ConnString(), "password": secretWord + "3"}),
			pgStore(map[string]string{"connString": "host=127.0.0.1 port=1 connect_timeout=2", "password": secretWord + "3"})},
		{"zookeeper auth",
			zkSpec(t, zkAddr, map[string]string{"auth": "digest:alice:" + secretWord + "4"}),
			zkSpec(t, "127.0.0.1:1", map[string]string{"auth": "digest:alice:" + secretWord + "4", "blockUntilConnectedWait": "2s"})},
		{"etcd password",
			etcdSpec(t, map[string]string{"endpoints": etcdWithAuth(t, "ids", secretWord+"5"), "username": "ids", "password": secretWord + "5"}),
			etcdSpec(t, map[string]string{"endpoints": "127.0.0.1:1", "username": "ids", "password": secretWord + "5", "dialTimeout": "2s"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.spec
			masked := 0
			run := func(code int, a ...string) {
				t.Helper()
				r := noSecret(t, exe(t, a...))
				r.want(t, code)
				masked += strings.Count(r.stdout+r.stderr, "***")
			}
			run(exitFailed, with(args("inspect"), s.flags())...)
			run(exitOK, with(args("init"), s.flags(), args("orders", "5"))...)
			run(exitOK, with(args("inspect"), s.flags())...)
			run(exitOK, with(args("inspect", "--json"), s.flags())...)
			run(exitOK, with(args("seal"), s.flags(), args("orders"))...)
			run(exitRefused, with(args("purge"), s.flags())...)
			if s.driver == "zookeeper" {
				run(exitOK, with(args("acl"), s.flags())...)
			} else {
				run(exitUsage, with(args("acl"), s.flags())...)
			}
			target := storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(t.TempDir(), "t.db")}}
			run(exitOK, "migrate", "--adopt-sealed", "--from", s.spec(), "--to", target.spec())
			run(exitRefused, "migrate", "--from", s.spec(), "--to", s.spec())
			run(exitUsage, "migrate", "--from", s.spec()+",=x", "--to", target.spec())
			run(exitUsage, "migrate", "--from", s.spec()+",nosuch=1", "--to", target.spec())
			run(exitUsage, "migrate", "--from", strings.TrimPrefix(s.spec(), s.driver+":"), "--to", target.spec())
			run(exitFailed, with(args("inspect"), tc.unreachable.flags())...)
			run(exitFailed, "migrate", "--from", tc.unreachable.spec(), "--to", target.spec())
			cfg := filepath.Join(t.TempDir(), "stores.yaml")
			var y strings.Builder
			y.WriteString("stores:\n  s:\n    type: " + s.driver + "\n    options:\n")
			for k, v := range s.options {
				fmt.Fprintf(&y, "      %s: %q\n", k, v)
			}
			if err := os.WriteFile(cfg, []byte(y.String()), 0o600); err != nil {
				t.Fatal(err)
			}
			run(exitOK, "inspect", "--config", cfg)
			run(exitUsage, "migrate", "--config", cfg, "--from", "s", "--to", "nosuch")
			if masked == 0 {
				t.Fatal("no output showed *** where the secret was")
			}
		})
	}
}

// TestOldStoreWithoutIdentity: a store made before identities existed is
// shown without one by inspect, which writes none; migrate from it to
// another store works, and into itself under another spelling is still
// refused: the target, opened to create, writes the identity the source
// then reads.
func TestOldStoreWithoutIdentity(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "old.db")
	old := storeSpec{driver: "sqlite", options: map[string]string{"path": path}}
	next(t, old.open(t), "orders", 10)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows := func() int {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM cosid_meta WHERE name = 'store_id'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := db.Exec("DELETE FROM cosid_meta WHERE name = 'store_id'"); err != nil {
		t.Fatal(err)
	}
	ctl(with(args("inspect"), old.flags())...).want(t, exitOK, "id     none yet", "RANGES (1 key)")
	if n := rows(); n != 0 {
		t.Fatalf("inspect wrote an identity (%d rows)", n)
	}
	same := storeSpec{driver: "sqlite", options: map[string]string{"path": dir + "/./old.db"}}
	ctl("migrate", "--from", old.spec(), "--to", same.spec()).want(t, exitRefused, "are the same store")
	if n := rows(); n != 1 {
		t.Fatalf("after migrate's target opened the file: %d identity rows, want 1", n)
	}
	if _, sealed, err := old.open(t).Ranges().Current(t.Context(), "orders"); err != nil || sealed {
		t.Fatalf("orders after the refused migration: sealed %v (%v)", sealed, err)
	}
	to := storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(dir, "new.db")}}
	ctl("migrate", "--from", old.spec(), "--to", to.spec()).want(t, exitOK, "key orders: sealed in source at 10; initialised in target at 10")
}
