package main

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cosid-go/store"
)

// TestMigrateInterrupted: the storectl binary, signalled part-way through
// a migrate (SIGINT into SQLite, SIGTERM into etcd), finishes the key in
// hand, says how many of how many keys moved and the command to run next,
// and exits 4; no key is then sealed in the source and missing in the
// target. Following the advice as printed completes the move, and no
// value is handed out twice: every key continues in the target at or
// above its sealed value in the source, and the slot history moves too.
//
// The signal is sent once migrate has printed key k000100; the test then
// stops reading, so migrate blocks on its full output pipe well before
// the last of its 3,000 keys: the signal lands mid-migrate, with no sleep.
func TestMigrateInterrupted(t *testing.T) {
	for _, c := range []struct {
		name string
		sig  syscall.Signal
		dst  func(t *testing.T) storeSpec
	}{
		{"SIGINT-sqlite", syscall.SIGINT, func(t *testing.T) storeSpec {
			return storeSpec{driver: "sqlite", options: map[string]string{"path": filepath.Join(t.TempDir(), "dst.db")}}
		}},
		{"SIGTERM-etcd", syscall.SIGTERM, func(t *testing.T) storeSpec { return etcdSpec(t, nil) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			testMigrateInterrupted(t, c.sig, c.dst(t))
		})
	}
}

func testMigrateInterrupted(t *testing.T, sig syscall.Signal, dst storeSpec) {
	const keys = 3000
	src := storeSpec{driver: "sqlite", options: map[string]string{"path": populatedSQLite(t, keys)}}
	s := src.open(t)
	l := acquire(t, s, workers, "w-1", 3, time.Minute)
	if err := s.Slots().ReleaseUsed(t.Context(), l, l.Floor+5); err != nil {
		t.Fatal(err)
	}
	s.Close()

	mig := startMigrate(t, src, dst, 3*time.Minute, "key k000100:")
	if err := mig.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	err := mig.finish()
	if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != exitInterrupted {
		t.Fatalf("migrate after %v: %v, want exit code %d\nstdout:\n%s\nstderr:\n%s", sig, err, exitInterrupted, mig.out.String(), mig.stderr.String())
	}
	m := regexp.MustCompile(`stopped after moving (\d+) of (\d+) keys and 0 of 1 namespaces`).FindStringSubmatch(mig.stderr.String())
	if m == nil || m[2] != strconv.Itoa(keys) {
		t.Fatalf("migrate's message lacks how many of %d keys moved:\n%s", keys, mig.stderr.String())
	}
	moved, _ := strconv.Atoi(m[1])
	if printed := strings.Count(mig.out.String(), "\nkey k"); moved != printed || moved < 101 || moved >= keys {
		t.Fatalf("migrate says %d keys moved, printed %d, want between 101 and %d\n%s", moved, printed, keys-1, mig.stderr.String())
	}

	// Each key is either moved (sealed in the source, in the target at
	// the sealed value) or untouched (open in the source, absent in the
	// target): never sealed in the source and missing in the target.
	check := func(after string) (inTarget int) {
		t.Helper()
		s, d := src.open(t), dst.open(t)
		defer s.Close()
		defer d.Close()
		dstKeys := keysOf(t, d)
		for i := range keys {
			k := fmt.Sprintf("k%06d", i)
			sn, sealed, err := s.Ranges().Current(t.Context(), k)
			if err != nil {
				t.Fatal(err)
			}
			if sn != int64(10*(i+1)) {
				t.Fatalf("%s: %s is at %d in the source, want %d", after, k, sn, 10*(i+1))
			}
			_, in := slices.BinarySearch(dstKeys, k)
			if sealed != in {
				t.Fatalf("%s: %s sealed in the source %v, in the target %v", after, k, sealed, in)
			}
			if !in {
				continue
			}
			inTarget++
			if dn, _, err := d.Ranges().Current(t.Context(), k); err != nil || dn != sn {
				t.Fatalf("%s: %s is at %d in the target (%v), sealed at %d in the source", after, k, dn, err, sn)
			}
		}
		return inTarget
	}
	if n := check("after " + sig.String()); n != moved {
		t.Fatalf("%d keys are in the target, migrate said %d", n, moved)
	}

	// The advice, followed as printed.
	i := strings.Index(mig.stderr.String(), "\n  storectl migrate ")
	if i < 0 {
		t.Fatalf("no command to run next:\n%s", mig.stderr.String())
	}
	line, _, _ := strings.Cut(mig.stderr.String()[i+3:], "\n")
	rerun := exe(t, strings.Fields(line)[1:]...)
	rerun.want(t, exitOK, fmt.Sprintf("done: %d keys, 1 slot", keys), "namespace workers: sealed in source")
	if n := check("after the rerun"); n != keys {
		t.Fatalf("after the rerun %d of %d keys are in the target", n, keys)
	}
	d := dst.open(t)
	if r := next(t, d, "k000000", 1); r.Start != 10 {
		t.Fatalf("the target hands out %v of k000000, want [10,11)", r)
	}
	if _, err := src.open(t).Ranges().Next(t.Context(), "k002999", 1); !errors.Is(err, store.ErrSealed) {
		t.Fatalf("Next of k002999 in the source: %v, want ErrSealed", err)
	}
	l2 := acquire(t, d, workers, "w-2", 3, time.Minute)
	if l2.Fence <= l.Fence || l2.Floor <= l.Floor+5 {
		t.Fatalf("the target's term of slot 3 has fence %d, floor %d; the source's had fence %d and issued up to %d", l2.Fence, l2.Floor, l.Fence, l.Floor+5)
	}
}

// TestSealInterrupted: seal of 3,000 keys, SIGINT after the 100th:
// exit code 4, the keys printed are the keys sealed, the message says how
// many of how many, and its command, run as printed, seals the rest.
func TestSealInterrupted(t *testing.T) {
	const keys = 3000
	src := storeSpec{driver: "sqlite", options: map[string]string{"path": populatedSQLite(t, keys)}}
	var names []string
	for i := range keys {
		names = append(names, fmt.Sprintf("k%06d", i))
	}
	printed, stderr := interruptAt(t, with(args("seal"), src.flags(), names), "k000100:", "")
	if want := fmt.Sprintf("stopped after sealing %d of %d keys", printed, keys); !strings.Contains(stderr, want) {
		t.Fatalf("seal's message lacks %q:\n%s", want, stderr)
	}
	s := src.open(t)
	for i, k := range names {
		if _, sealed, err := s.Ranges().Current(t.Context(), k); err != nil || sealed != (i < printed) {
			t.Fatalf("%s sealed %v (%v); %d keys were printed", k, sealed, err, printed)
		}
	}
	i := strings.Index(stderr, "\n  storectl seal ")
	if i < 0 {
		t.Fatalf("no command to run next:\n%s", stderr)
	}
	line, _, _ := strings.Cut(stderr[i+3:], "\n")
	exe(t, strings.Fields(line)[1:]...).want(t, exitOK, "k002999: sealed at 30000")
	if _, sealed, err := s.Ranges().Current(t.Context(), "k002999"); err != nil || !sealed {
		t.Fatalf("k002999 after the rerun: sealed %v (%v)", sealed, err)
	}
}
