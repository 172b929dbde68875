package sqlite

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cosid-go/store/driver"
)

// What an operator does to the files of a running store, done to stores
// in other processes: each must end with no value handed out twice, by
// refusing to open or by stopping the store that lost its file.

// opChildEnv makes the test binary a store process on the file it names,
// run by the test named in -test.run (see serveChild).
const opChildEnv = "COSID_SQLITE_OP"

// serveChild, at the top of a test, makes it a store process when the test
// binary was started by spawn: it prints "ok" once open (or "O error"),
// then answers each "next" line of stdin with "R start end" or "E error"
// (Next of key k, step 10), until stdin ends.
func serveChild() bool {
	path := os.Getenv(opChildEnv)
	if path == "" {
		return false
	}
	d, err := fromOptions(map[string]string{"path": path, "busyTimeout": "20s"})
	if err != nil {
		fmt.Printf("O %v\n", oneLine(err))
		os.Exit(0)
	}
	fmt.Println("ok")
	s := d.(*driverStore)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		start, err := s.Next(context.Background(), "k", 10)
		if err != nil {
			fmt.Printf("E %v\n", oneLine(err))
			continue
		}
		fmt.Printf("R %d %d\n", start, start+10)
	}
	s.Close()
	os.Exit(0)
	return true
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

// proc is a store process started by spawn.
type proc struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

// spawn starts a store process on path, running the calling test in it;
// it returns the process, or the error that refused the open.
func spawn(t *testing.T, path string) (*proc, string) {
	t.Helper()
	return start(t, path).ready()
}

// start starts a store process on path; ready waits for its open.
func start(t *testing.T, path string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$")
	cmd.Env = append(os.Environ(), opChildEnv+"="+path)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, cmd: cmd, in: in, lines: make(chan string, 16)}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { p.kill() })
	return p
}

// ready returns p once its store is open, or the error that refused it.
func (p *proc) ready() (*proc, string) {
	p.t.Helper()
	first := p.line()
	if msg, ok := strings.CutPrefix(first, "O "); ok {
		p.wait()
		return nil, msg
	}
	if first != "ok" {
		p.t.Fatalf("store process said %q, not ok", first)
	}
	return p, ""
}

// line reads the process's next line, within a generous bound.
func (p *proc) line() string {
	p.t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			p.t.Fatal("the store process ended without answering")
		}
		return l
	case <-time.After(60 * time.Second):
		p.t.Fatal("the store process did not answer within 60s")
	}
	return ""
}

// next asks for a range: [start, end), or the error text.
func (p *proc) next() (rng [2]int64, errText string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, "next\n"); err != nil {
		p.t.Fatal(err)
	}
	l := p.line()
	if msg, ok := strings.CutPrefix(l, "E "); ok {
		return rng, msg
	}
	var f [2]string
	if _, err := fmt.Sscanf(l, "R %s %s", &f[0], &f[1]); err != nil {
		p.t.Fatalf("store process said %q: %v", l, err)
	}
	for i := range f {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			p.t.Fatalf("store process said %q: %v", l, err)
		}
		rng[i] = n
	}
	return rng, ""
}

// close ends the process as a program would: Close, exit.
func (p *proc) close() {
	p.t.Helper()
	p.in.Close()
	p.wait()
}

func (p *proc) wait() {
	p.t.Helper()
	for range p.lines {
	}
	if err := p.cmd.Wait(); err != nil {
		p.t.Errorf("store process: %v", err)
	}
}

func (p *proc) kill() {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
	}
}

// handedOut collects ranges and fails the test on any value handed out twice.
type handedOut struct {
	t      *testing.T
	ranges [][2]int64
}

func (h *handedOut) add(who string, r [2]int64) {
	h.t.Helper()
	for _, o := range h.ranges {
		if r[0] < o[1] && o[0] < r[1] {
			h.t.Errorf("%s got %v, overlapping %v handed out before", who, r, o)
		}
	}
	h.ranges = append(h.ranges, r)
}

// mustNext takes n ranges from p, recording them.
func (h *handedOut) mustNext(who string, p *proc, n int) {
	h.t.Helper()
	for range n {
		r, e := p.next()
		if e != "" {
			h.t.Fatalf("%s: Next: %s", who, e)
		}
		h.add(who, r)
	}
}

// spawnNext starts a store process on path, wants its open to succeed, and
// takes n ranges from it.
func (h *handedOut) spawnNext(who, path string, n int) *proc {
	h.t.Helper()
	p, msg := spawn(h.t, path)
	if p == nil {
		h.t.Fatalf("%s: opening %s: %s", who, path, msg)
	}
	h.mustNext(who, p, n)
	return p
}

// wantRefused wants a store process opening path refused with an error
// saying want; what names the open in the failure. A process that opens
// anyway has its ranges checked too.
func (h *handedOut) wantRefused(who, path, want, what string) {
	h.t.Helper()
	if p, msg := spawn(h.t, path); p != nil || !strings.Contains(msg, want) {
		if p != nil {
			h.mustNext(who, p, 5)
		}
		h.t.Errorf("%s: %q; want it refused, saying %q", what, msg, want)
	}
}

// wantStopped asks p for a range twice and wants both refused with an
// error naming want.
func wantStopped(t *testing.T, who string, p *proc, h *handedOut, want string) {
	t.Helper()
	for range 2 {
		r, e := p.next()
		if e == "" {
			h.add(who, r)
			t.Errorf("%s handed out %v after its file changed; want an error saying %q", who, r, want)
			continue
		}
		if !strings.Contains(e, want) || !strings.Contains(e, driver.ErrCorrupt.Error()) {
			t.Errorf("%s: Next = %q; want an error saying %q, wrapping ErrCorrupt", who, e, want)
		}
	}
}

// copyStore copies a store consistently, as the package doc tells
// operators to: VACUUM INTO, through SQLite.
func copyStore(t *testing.T, from, to string) {
	t.Helper()
	db, err := sql.Open("sqlite", from)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("VACUUM INTO ?", to); err != nil {
		t.Fatal(err)
	}
}

// replaceWithCopy moves a copy of the store at path over it, as a restore
// does.
func replaceWithCopy(t *testing.T, path string) {
	t.Helper()
	cp := filepath.Join(filepath.Dir(path), "copy.db")
	copyStore(t, path, cp)
	if err := os.Rename(cp, path); err != nil {
		t.Fatal(err)
	}
}

// changedInUse runs a first process on a new store at ids.db, takes 5
// ranges from it and lets change alter its files as an operator would;
// change returns what a second process opening the path meanwhile must be
// refused with, and what names that open in a failure. The first process
// must then stop, saying stopped; changedInUse ends it and returns the
// path and the ranges handed out, for a process opening the path next.
func changedInUse(t *testing.T, stopped string, change func(path string, first *proc) (refusal, what string)) (string, *handedOut) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ids.db")
	h := &handedOut{t: t}
	p1 := h.spawnNext("first process", path, 5)
	refusal, what := change(path, p1)
	h.wantRefused("second process", path, refusal, what)
	wantStopped(t, "first process", p1, h, stopped)
	p1.close()
	return path, h
}

// remove removes a file an operator removes.
func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

// firstOnA runs a first process on a new store at a.db and takes 5 ranges
// from it; b is b.db beside it, the second name an operator gives the file.
func firstOnA(t *testing.T) (h *handedOut, p1 *proc, a, b string) {
	t.Helper()
	dir := t.TempDir()
	a, b = filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	h = &handedOut{t: t}
	return h, h.spawnNext("first process on a.db", a, 5), a, b
}

// A hard link to a store's file is refused by every process opening
// either name, and the store running when the link appeared stops: SQLite
// would give each name a WAL of its own, two databases over the same pages.
func TestHardLink(t *testing.T) {
	if serveChild() {
		return
	}
	h, p1, a, b := firstOnA(t)
	if err := os.Link(a, b); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{b, a} {
		name := filepath.Base(path)
		h.wantRefused("process on "+name, path, "the file has 2 hard links", "opening "+name+", hard-linked, in another process")
	}
	wantStopped(t, "first process on a.db", p1, h, "the file has 2 hard links now")
	p1.close()
}

// A file replaced under a running store (a copy moved over it, as a
// restore does): a process opening the path is refused while the first
// still has the old file open (SQLite would lay the old file's WAL over
// the copy), the running store stops, and once it ended a process opening
// the path continues from the copy: no value is handed out twice.
func TestReplacedFile(t *testing.T) {
	if serveChild() {
		return
	}
	path, h := changedInUse(t, "the file was replaced while in use", func(path string, p1 *proc) (string, string) {
		replaceWithCopy(t, path)
		return fmt.Sprintf("ids.db-shm is in use by process %d, which does not have this file open", p1.cmd.Process.Pid),
			"opening the replaced file while the first process runs"
	})
	h.spawnNext("second process", path, 5).close()
}

// A file replaced under a running store by an operator who also removed
// its -wal and -shm: a process opening the path makes new ones and runs,
// and the first process, stopped, leaves them alone when it ends (SQLite
// deletes them by name when a file's last connection closes).
func TestReplacedFileAndCompanions(t *testing.T) {
	if serveChild() {
		return
	}
	path := filepath.Join(t.TempDir(), "ids.db")
	h := &handedOut{t: t}
	p1 := h.spawnNext("first process", path, 5)
	replaceWithCopy(t, path)
	for _, c := range []string{"-wal", "-shm"} {
		remove(t, path+c)
	}
	p2 := h.spawnNext("second process", path, 5)
	wantStopped(t, "first process", p1, h, "the file was replaced while in use")
	p1.close()
	h.mustNext("second process, after the first ended", p2, 5)
	p2.close()
}

// A file deleted under a running store: the running store stops, and a
// process opening the path is refused while the deleted store's -wal and
// -shm are still there: it would take them over.
func TestDeletedFile(t *testing.T) {
	if serveChild() {
		return
	}
	changedInUse(t, "the file was deleted or moved while in use", func(path string, _ *proc) (string, string) {
		remove(t, path)
		return "the store was deleted or moved while in use", "opening the path of a deleted store in use"
	})
}

// The -shm or the -wal file deleted under a running store: the store
// stops; a process opening the file is refused while the first runs with
// the old -shm, and once it ended continues above every value (the -wal
// was copied into the file), or is refused when the -wal is gone.
func TestCompanionDeleted(t *testing.T) {
	if serveChild() {
		return
	}
	t.Run("shm", func(t *testing.T) {
		// The first stops as its -shm was deleted, or made again by the
		// second process.
		path, h := changedInUse(t, "ids.db-shm was", func(path string, p1 *proc) (string, string) {
			remove(t, path+"-shm")
			return fmt.Sprintf("process %d has this file open with another -wal and -shm", p1.cmd.Process.Pid),
				"opening the file after its -shm was deleted"
		})
		h.spawnNext("second process", path, 5).close()
	})
	t.Run("wal", func(t *testing.T) {
		changedInUse(t, "ids.db-wal was deleted while in use", func(path string, _ *proc) (string, string) {
			remove(t, path+"-wal")
			return "ids.db-shm exists and ids.db-wal does not", "opening the file after its -wal was deleted"
		})
	})
	// After a crash the -wal holds commits not yet in the file: deleting it
	// would start the store below values handed out.
	t.Run("wal after a crash", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ids.db")
		h := &handedOut{t: t}
		p1 := h.spawnNext("first process", path, 5)
		p1.kill()
		remove(t, path+"-wal")
		h.wantRefused("second process", path, "ids.db-shm exists and ids.db-wal does not: the WAL was deleted", "opening the file after a crash and its -wal deleted")
	})
}

// A store's file emptied (truncated to 0 bytes) under a running store: the
// store stops, and a process opening it is refused instead of starting a
// new store at 0.
func TestEmptiedFile(t *testing.T) {
	if serveChild() {
		return
	}
	changedInUse(t, "the file was emptied while in use", func(path string, _ *proc) (string, string) {
		if err := os.Truncate(path, 0); err != nil {
			t.Fatal(err)
		}
		return "the file exists and is empty: remove it to start a new store", "opening the emptied file"
	})
}

// Processes creating one new store at once share it: none sees a
// half-made file (refused as empty), and no value is handed out twice.
func TestCreateTogether(t *testing.T) {
	if serveChild() {
		return
	}
	path := filepath.Join(t.TempDir(), "ids.db")
	var ps []*proc
	for range 4 {
		ps = append(ps, start(t, path))
	}
	h := &handedOut{t: t}
	for i, p := range ps {
		if _, msg := p.ready(); msg != "" {
			t.Fatalf("process %d: %s", i, msg)
		}
	}
	for round := range 5 {
		for i, p := range ps {
			h.mustNext(fmt.Sprintf("process %d round %d", i, round), p, 1)
		}
	}
	for _, p := range ps {
		p.close()
	}
	left, err := filepath.Glob(filepath.Join(filepath.Dir(path), ".ids.db.new-*"))
	if err != nil || len(left) > 0 {
		t.Errorf("temporary files left behind: %v %v", left, err)
	}
}

// A file renamed under a running store, and opened by a process under its
// new name: refused while the first process has it open under the old
// one (its newest commits are in the old name's -wal); the first stops,
// and on closing copies its -wal into the file, so a process opening the
// new name afterwards continues above every value handed out.
func TestRenamedFile(t *testing.T) {
	if serveChild() {
		return
	}
	h, p1, a, b := firstOnA(t)
	if err := os.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("process %d has this file open with another -wal and -shm", p1.cmd.Process.Pid)
	h.wantRefused("second process on b.db", b, want, "opening the renamed file while the first process runs")
	wantStopped(t, "first process on a.db", p1, h, "the file was deleted or moved while in use")
	p1.close()
	p2 := h.spawnNext("second process on b.db", b, 5)
	p2.close()
}

// The store's directory moved away and a symlink to it put in its place,
// while a store runs: every name still reaches the same file, -wal and
// -shm, so the running store carries on and a process opening the path
// through the symlink shares it: no value is handed out twice.
func TestDirectoryBecomesSymlink(t *testing.T) {
	if serveChild() {
		return
	}
	root := t.TempDir()
	dir, moved := filepath.Join(root, "d"), filepath.Join(root, "d2")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "ids.db")
	h := &handedOut{t: t}
	p1 := h.spawnNext("first process", path, 3)
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, dir); err != nil {
		t.Fatal(err)
	}
	p2, msg := spawn(t, path)
	if p2 == nil {
		t.Fatalf("opening the path through the symlink: %s", msg)
	}
	for range 3 {
		h.mustNext("second process", p2, 1)
		h.mustNext("first process", p1, 1)
	}
	p1.close()
	p2.close()
}
