package zookeeper

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/cosid-go/store"
	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/testing/rawdriver"
)

func TestRegistered(t *testing.T) {
	found := false
	for _, name := range store.Drivers() {
		found = found || name == "zookeeper"
	}
	if !found {
		t.Errorf("store.Drivers() = %q, want it to list zookeeper", store.Drivers())
	}
}

func TestOptionDefaults(t *testing.T) {
	cfg, err := parseOptions(nil, true)
	if err != nil {
		t.Fatal(err)
	}
	want := config{
		servers:                 []string{"localhost:2181"},
		sessionTimeout:          60 * time.Second,
		connectionTimeout:       15 * time.Second,
		blockUntilConnectedWait: 10 * time.Second,
		retry:                   retryPolicy{base: 100 * time.Millisecond, maxSleep: 500 * time.Millisecond, maxRetries: 5},
		root:                    "/cosid",
	}
	if strings.Join(cfg.servers, ",") != strings.Join(want.servers, ",") {
		t.Errorf("servers = %q, want %q", cfg.servers, want.servers)
	}
	cfg.servers = want.servers
	if cfg.sessionTimeout != want.sessionTimeout || cfg.connectionTimeout != want.connectionTimeout ||
		cfg.blockUntilConnectedWait != want.blockUntilConnectedWait || cfg.retry != want.retry || cfg.root != want.root {
		t.Errorf("defaults = %+v, want %+v", cfg, want)
	}
}

func TestOptionValues(t *testing.T) {
	cfg, err := parseOptions(map[string]string{
		"connectString":           " zk1:2182, zk2 ,[::1]:2183",
		"sessionTimeout":          "4s",
		"connectionTimeout":       "1500",
		"blockUntilConnectedWait": "0",
		"retry.baseSleepTime":     "1ms",
		"retry.maxRetries":        "0",
		"retry.maxSleep":          "2s",
		"root":                    "/apps/ids",
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cfg.servers, ","); got != "zk1:2182,zk2:2181,[::1]:2183" {
		t.Errorf("servers = %s", got)
	}
	if cfg.sessionTimeout != 4*time.Second || cfg.connectionTimeout != 1500*time.Millisecond ||
		cfg.blockUntilConnectedWait != 0 || cfg.root != "/apps/ids" ||
		cfg.retry != (retryPolicy{base: time.Millisecond, maxSleep: 2 * time.Second, maxRetries: 0}) {
		t.Errorf("parsed %+v", cfg)
	}
}

// TestOptionErrors: every refusal is ErrInvalidArgument and names what is
// wrong, so a typo is never silently ignored.
func TestOptionErrors(t *testing.T) {
	for _, c := range []struct {
		options map[string]string
		want    []string // substrings of the error
	}{
		{map[string]string{"sesionTimeout": "1s"}, []string{`"sesionTimeout"`, "known:", "sessionTimeout", "retry.maxSleep", "root"}},
		{map[string]string{"sessionTimeout": "soon"}, []string{`"sessionTimeout"`, `"soon"`}},
		{map[string]string{"connectionTimeout": "-1s"}, []string{`"connectionTimeout"`, `"-1s"`}},
		{map[string]string{"connectionTimeout": "0"}, []string{`"connectionTimeout"`, "must be between 1ms and 24h"}},
		{map[string]string{"sessionTimeout": "9223372036855"}, []string{`"sessionTimeout"`, `"9223372036855"`, "must be between 1ms and 24h"}},
		{map[string]string{"sessionTimeout": "25d"}, []string{`"sessionTimeout"`, "not a duration"}},
		{map[string]string{"sessionTimeout": "600h"}, []string{`"sessionTimeout"`, "must be between 1ms and 24h"}},
		{map[string]string{"retry.maxRetries": "99999999999"}, []string{`"retry.maxRetries"`, `"99999999999"`, "must be between 0 and 1000"}},
		{map[string]string{"sessionTimeout": "0"}, []string{`"sessionTimeout"`}},
		{map[string]string{"retry.maxRetries": "-1"}, []string{`"retry.maxRetries"`, `"-1"`}},
		{map[string]string{"retry.maxRetries": "many"}, []string{`"retry.maxRetries"`, `"many"`}},
		{map[string]string{"retry.baseSleepTime": "1 s"}, []string{`"retry.baseSleepTime"`, `"1 s"`}},
		{map[string]string{"connectString": ""}, []string{`"connectString"`, "no server"}},
		{map[string]string{"connectString": "zk1:2181/app"}, []string{`"connectString"`, "chroot", "root"}},
		{map[string]string{"connectString": "zk1:port"}, []string{`"connectString"`, "port"}},
		{map[string]string{"connectString": "zk1:70000"}, []string{`"connectString"`, "port"}},
		{map[string]string{"connectString": "::1"}, []string{`"connectString"`, "host:port"}},
		{map[string]string{"root": "cosid"}, []string{`"root"`, "absolute"}},
		{map[string]string{"root": "/"}, []string{`"root"`}},
		{map[string]string{"root": "/cosid/"}, []string{`"root"`, "end with"}},
		{map[string]string{"root": "/a//b"}, []string{`"root"`, "empty segment"}},
		{map[string]string{"root": "/a/../b"}, []string{`"root"`, `".."`}},
		{map[string]string{"root": "/a\x01"}, []string{`"root"`, "U+0001"}},
		{map[string]string{"root": "/\U0001F600"}, []string{`"root"`, "U+1F600"}},
	} {
		_, err := openWith(c.options)
		if err == nil {
			t.Errorf("openWith(%q) succeeded, want an error", c.options)
			continue
		}
		if !errors.Is(err, driver.ErrInvalidArgument) {
			t.Errorf("openWith(%q): %v, want ErrInvalidArgument", c.options, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("openWith(%q): error %q does not mention %s", c.options, err, w)
			}
		}
	}
}

// TestNewOptions: New takes root and the retry options; the connection
// options are refused, since they would configure nothing.
func TestNewOptions(t *testing.T) {
	if _, err := newOnConn(nil, nil); !errors.Is(err, driver.ErrInvalidArgument) {
		t.Errorf("New(nil): %v, want ErrInvalidArgument", err)
	}
	// A connection to nowhere: New must not use it to check options.
	conn := deadConn(t)
	for _, k := range connectionOptions {
		_, err := newOnConn(conn, map[string]string{k: "1s"})
		if !errors.Is(err, driver.ErrInvalidArgument) || !strings.Contains(err.Error(), k) || !strings.Contains(err.Error(), "New") {
			t.Errorf("New with %s: %v, want ErrInvalidArgument naming it and saying it does not apply to New", k, err)
		}
	}
	_, err := newOnConn(conn, map[string]string{"rot": "/x"})
	if !errors.Is(err, driver.ErrInvalidArgument) || !strings.Contains(err.Error(), `"rot"`) {
		t.Errorf("New with a typo: %v", err)
	}
	s, err := newOnConn(conn, map[string]string{"root": "/x", "retry.maxRetries": "1"})
	if err != nil {
		t.Fatal(err)
	}
	if s.root != "/x" || s.retry.maxRetries != 1 {
		t.Errorf("New parsed root %q, retries %d", s.root, s.retry.maxRetries)
	}
	s.Close()
	// sessionTimeout describes the caller's connection, for locks.
	s, err = newOnConn(conn, map[string]string{"sessionTimeout": "3s"})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.sessionTimeout(); got != 3*time.Second {
		t.Errorf("New's sessionTimeout read as %v, want 3s", got)
	}
	s.Close()
	for _, bad := range []string{"0", "soon"} {
		_, err = newOnConn(conn, map[string]string{"sessionTimeout": bad})
		if !errors.Is(err, driver.ErrInvalidArgument) || !strings.Contains(err.Error(), "sessionTimeout") {
			t.Errorf("New with sessionTimeout %q: %v, want ErrInvalidArgument naming it", bad, err)
		}
	}
}

// TestOpenDeadServer: Open fails within blockUntilConnectedWait with an
// error naming the servers.
func TestOpenDeadServer(t *testing.T) {
	addr := deadAddr(t)
	const wait = 2 * time.Second
	began := time.Now()
	_, err := openWith(map[string]string{
		"connectString":           addr,
		"blockUntilConnectedWait": wait.String(),
		"connectionTimeout":       "200ms",
	})
	took := time.Since(began)
	if err == nil {
		t.Fatal("Open of a dead server succeeded")
	}
	if !strings.Contains(err.Error(), addr) {
		t.Errorf("error %q does not name the server %s", err, addr)
	}
	// Well below the default of 10s, with room for a loaded machine.
	if took < wait || took > 8*time.Second {
		t.Errorf("Open took %v, want about blockUntilConnectedWait (%v)", took, wait)
	}
	t.Log(err)
}

// TestOpenSilentServer: a server that accepts connections but never
// answers the handshake is given up on after connectionTimeout, and Open's
// error says so.
func TestOpenSilentServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	defer func() {
		ln.Close()
		for c := range accepted {
			c.Close()
		}
	}()
	began := time.Now()
	_, err = openWith(map[string]string{
		"connectString":           ln.Addr().String(),
		"blockUntilConnectedWait": "1s",
		"connectionTimeout":       "300ms",
		"sessionTimeout":          "60s", // go-zookeeper alone would wait 400s for the answer
	})
	took := time.Since(began)
	if err == nil {
		t.Fatal("Open of a silent server succeeded")
	}
	if !strings.Contains(err.Error(), "handshake") || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Errorf("error %q does not say that %s did not answer the handshake", err, ln.Addr())
	}
	if took > 20*time.Second { // far from 400s, with room for a loaded machine
		t.Errorf("Open (and its Close) took %v", took)
	}
	t.Log(err)
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// deadConn is a go-zookeeper connection to deadAddr, closed when the test
// ends: a connection to nowhere, which what takes it must not use to
// check options.
func deadConn(t *testing.T) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect([]string{deadAddr(t)}, time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

func TestRetrySleep(t *testing.T) {
	p := retryPolicy{base: 100 * time.Millisecond, maxSleep: 500 * time.Millisecond, maxRetries: 5}
	want := []time.Duration{100, 200, 400, 500, 500, 500}
	for n, w := range want {
		if got := p.sleep(n); got != w*time.Millisecond {
			t.Errorf("sleep(%d) = %v, want %v", n, got, w*time.Millisecond)
		}
	}
	if got := (retryPolicy{base: time.Hour, maxSleep: time.Second}).sleep(0); got != time.Second {
		t.Errorf("a base above maxSleep gave %v, want maxSleep", got)
	}
	if got := (retryPolicy{base: time.Second, maxSleep: time.Hour}).sleep(200); got != time.Hour {
		t.Errorf("sleep(200) = %v, want maxSleep (no overflow)", got)
	}
}

// TestOpenContextDeadlineSaidOnce: Open ended by its context names the
// context's error once (it was said in the text and again after it).
func TestOpenContextDeadlineSaidOnce(t *testing.T) {
	addr := deadAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := store.OpenContext(ctx, "zookeeper", map[string]string{"connectString": addr, "connectionTimeout": "200ms"})
	if err == nil {
		t.Fatal("Open of a dead server succeeded")
	}
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, driver.ErrUnavailable) ||
		strings.Count(err.Error(), "context deadline exceeded") != 1 || !strings.Contains(err.Error(), addr) {
		t.Errorf("Open ended by its context: %v; want ErrUnavailable and DeadlineExceeded, said once, naming %s", err, addr)
	}
}

// TestOpenStoreOptions: OpenStore's Options say what New's option map says,
// checked alike, and give a checked store.
func TestOpenStoreOptions(t *testing.T) {
	if _, err := OpenStore(nil, nil); !errors.Is(err, driver.ErrInvalidArgument) {
		t.Errorf("OpenStore(nil conn): %v, want ErrInvalidArgument", err)
	}
	conn := deadConn(t)
	st, err := OpenStore(conn, &Options{Root: "/x", SessionTimeout: 3 * time.Second, RetryMaxRetries: -1,
		RetryBaseSleepTime: time.Millisecond, ACL: zk.AuthACL(zk.PermAll)}, store.WithTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	s := rawdriver.Of(st).(*driverStore)
	if s.root != "/x" || s.retry.maxRetries != 0 || s.retry.base != time.Millisecond || s.sessionTimeout() != 3*time.Second ||
		len(s.acl) != 1 || s.acl[0].Scheme != "auth" || st.Timeout() != time.Second {
		t.Errorf("OpenStore made root %q, retries %d, base %v, session timeout %v, acl %v, timeout %v",
			s.root, s.retry.maxRetries, s.retry.base, s.sessionTimeout(), s.acl, st.Timeout())
	}
	if _, err := st.Ranges().Next(t.Context(), "k", -100); !errors.Is(err, store.ErrInvalidArgument) {
		t.Errorf("Next with step -100 on OpenStore's store: %v, want ErrInvalidArgument from the portable layer", err)
	}
	st.Close()
	st, err = OpenStore(conn, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s := rawdriver.Of(st).(*driverStore); s.root != defaultRoot || s.retry.maxRetries != defaultRetryMaxRetries || s.acl[0].Scheme != "world" {
		t.Errorf("OpenStore(nil options) made root %q, retries %d, acl %v", s.root, s.retry.maxRetries, s.acl)
	}
	st.Close()
	for name, o := range map[string]Options{
		"Root":               {Root: "x"},
		"SessionTimeout":     {SessionTimeout: -time.Second},
		"RetryMaxSleep":      {RetryMaxSleep: -time.Second},
		"ACL":                {ACL: []zk.ACL{}},
		"ACL[0]":             {ACL: []zk.ACL{{Scheme: "world", ID: "anyone"}}},
		"RetryBaseSleepTime": {RetryBaseSleepTime: -1},
	} {
		_, err := OpenStore(conn, &o)
		if !errors.Is(err, driver.ErrInvalidArgument) || !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(name)) {
			t.Errorf("OpenStore with a bad %s: %v, want ErrInvalidArgument naming it", name, err)
		}
	}
}
