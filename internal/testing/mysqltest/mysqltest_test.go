package mysqltest

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

func open(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// A committed row survives a kill of the server and a restart.
func TestKillRestartKeepsCommits(t *testing.T) {
	s := Start(t)
	ctx := t.Context()
	name := s.NewDatabase(t)
	db := open(t, s.DSN(name))
	db.SetMaxIdleConns(1)
	for _, q := range []string{"CREATE TABLE t (v INT)", "INSERT INTO t VALUES (42)"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s.Kill()
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err == nil {
		t.Fatal("a killed server still answers")
	}
	s.Restart(t)
	var v int
	if err := open(t, s.DSN(name)).QueryRowContext(ctx, "SELECT v FROM t").Scan(&v); err != nil || v != 42 {
		t.Fatalf("after restart: v = %d, err = %v; want 42", v, err)
	}
}

// The shared server gives each test a database of its own, on its own
// port and socket, never the system's.
func TestSharedDatabases(t *testing.T) {
	s := Shared(t)
	a, b := s.NewDatabase(t), s.NewDatabase(t)
	if a == b {
		t.Fatalf("two databases named %q", a)
	}
	var port int
	var socket string
	if err := open(t, s.DSN(a)).QueryRowContext(t.Context(), "SELECT @@port, @@socket").Scan(&port, &socket); err != nil {
		t.Fatal(err)
	}
	if s.Addr() != "127.0.0.1:"+strconv.Itoa(port) || socket != s.Socket() {
		t.Fatalf("server at port %d, socket %s; want %s, %s", port, socket, s.Addr(), s.Socket())
	}
}

// Without the binaries, start fails saying how to install them.
func TestMissingServerSaysHowToInstall(t *testing.T) {
	t.Setenv(envBin, t.TempDir())
	_, err := start("missing")
	if err == nil || !strings.Contains(err.Error(), envBin) {
		t.Fatalf("start without binaries: %v; want an error naming %s", err, envBin)
	}
	t.Setenv(envBin, "")
	t.Setenv("PATH", t.TempDir())
	if _, _, err := bins(); err != nil && !strings.Contains(err.Error(), "install-mariadb.sh") {
		t.Fatalf("bins: %v; want the install hint", err)
	}
}
