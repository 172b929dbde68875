// Package zktest starts real ZooKeeper servers for tests: single servers and
// ensembles on 127.0.0.1, one JVM per server, for each ZooKeeper version that
// scripts/install-zookeeper.sh installed. It also provides a loopback TCP
// proxy to cut client connections on purpose.
//
// It is a test helper: import it from _test.go files only. A package whose
// tests start servers calls Main (or Wrap) from its TestMain, so that a server
// still running after the tests fails the test binary and is killed.
//
// Environment:
//
//	COSID_ZK_VERSIONS  versions to test, comma separated (default "3.8,3.9")
//	COSID_ZK_SERVERS   an existing server (connect string) that StartServer
//	                   returns instead of starting one
//	ZK38_CLASSPATH...  the classpath of a version; by default read from .zk/env
//	                   at the module root, written by the install script
package zktest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/freeport"
)

const (
	envVersions = "COSID_ZK_VERSIONS"
	envServers  = "COSID_ZK_SERVERS"

	defaultVersions = "3.8,3.9"
	installHint     = "run `bash scripts/install-zookeeper.sh` at the module root"
)

// EachVersion runs f as a subtest of tb, named after the version, on a
// server of its own of each version Versions lists.
func EachVersion[T interface {
	testing.TB
	Run(name string, f func(T)) bool
}](tb T, f func(tb T, srv *Server)) {
	for _, version := range Versions() {
		tb.Run(version, func(tb T) { f(tb, StartServer(tb, version)) })
	}
}

// Versions returns the ZooKeeper versions the tests run against, from
// COSID_ZK_VERSIONS (a comma list, default "3.8,3.9").
func Versions() []string {
	raw := os.Getenv(envVersions)
	if strings.TrimSpace(raw) == "" {
		raw = defaultVersions
	}
	var out []string
	for _, v := range strings.Split(raw, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

var mainModule = regexp.MustCompile(`(?m)^module github\.com/cosid-go/store\s*$`)

var versionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)

// classpathVar names the variable holding a version's classpath: "3.9" is
// ZK39_CLASSPATH, the name the install script writes.
func classpathVar(version string) string {
	return "ZK" + strings.ReplaceAll(version, ".", "") + "_CLASSPATH"
}

// classpath finds the Java classpath of version: the environment wins, so CI
// or a developer can point at other jars; otherwise .zk/env. Every entry must
// exist, because a JVM silently skips missing jars and would then fail later
// with a far less clear error.
func classpath(version string) (string, error) {
	if !versionRE.MatchString(version) {
		return "", fmt.Errorf("zktest: bad ZooKeeper version %q (want major.minor, e.g. 3.9)", version)
	}
	key := classpathVar(version)
	cp := os.Getenv(key)
	source := "environment"
	if cp == "" {
		file, err := envFile()
		if err != nil {
			return "", err
		}
		vars, err := readEnvFile(file)
		if err != nil {
			return "", fmt.Errorf("zktest: ZooKeeper is not installed (%v); %s", err, installHint)
		}
		cp, source = vars[key], file
		if cp == "" {
			return "", fmt.Errorf("zktest: no %s in %s: ZooKeeper %s is not installed; %s", key, file, version, installHint)
		}
	}
	for _, entry := range filepath.SplitList(cp) {
		if _, err := os.Stat(entry); err != nil {
			return "", fmt.Errorf("zktest: %s (from %s) names a missing jar: %v; %s", key, source, err, installHint)
		}
	}
	return cp, nil
}

// envFile is .zk/env at the root of the main module, found by walking up
// from the working directory (go test runs each package in its own
// directory) past nested modules (otelstore, examples).
func envFile() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("zktest: %v", err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && mainModule.Match(b) {
			return filepath.Join(dir, ".zk", "env"), nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("zktest: no go.mod of github.com/cosid-go/store above the working directory")
		}
		dir = parent
	}
}

// readEnvFile parses KEY=VALUE lines; blank lines and # comments are skipped.
func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		vars[strings.TrimSpace(k)] = strings.Trim(strings.TrimSpace(v), `"'`)
	}
	return vars, sc.Err()
}

// FourLetterWord sends a four-letter command to the server at addr and
// returns its whole answer. The servers started here allow srvr, ruok, stat,
// mntr, conf and cons.
func FourLetterWord(addr, word string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(3 * time.Second)); err != nil {
		return "", err
	}
	if _, err := io.WriteString(c, word); err != nil {
		return "", err
	}
	// The server closes the connection after answering.
	b, err := io.ReadAll(c)
	return string(b), err
}

// srvrField returns the value of "Name: value" in a srvr answer, or "".
func srvrField(answer, name string) string {
	for _, line := range strings.Split(answer, "\n") {
		if v, ok := strings.CutPrefix(line, name+": "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// ServerVersion asks the server at addr for its version with srvr and
// returns the release, e.g. "3.9.3" (srvr says "3.9.3-<commit>, built on ...").
func ServerVersion(addr string) (string, error) {
	answer, err := FourLetterWord(addr, "srvr")
	if err != nil {
		return "", err
	}
	v := srvrField(answer, "Zookeeper version")
	if v == "" {
		return "", fmt.Errorf("zktest: %s: no version in srvr answer %q", addr, answer)
	}
	if i := strings.IndexAny(v, "-,"); i >= 0 {
		v = v[:i]
	}
	return v, nil
}

// freePort is freeport.Get, its error naming the helper.
func freePort() (int, error) {
	port, err := freeport.Get()
	if err != nil {
		return 0, fmt.Errorf("zktest: %w", err)
	}
	return port, nil
}
