package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cosid-go/store/driver"
	"github.com/cosid-go/store/internal/sqlstore"
)

// One store is one file: SQLite knows a database by its path and names the
// -wal and -shm files after it, so two names of one file (a hard link), a
// file replaced under a running store, or a store's companions deleted
// make two databases that hand out the same values. This file finds what
// can be found before it happens and stops a store when it happens.

// fileID identifies a file on its host: device and inode.
type fileID struct{ dev, ino uint64 }

// fileInfo is what stat says of a file.
type fileInfo struct {
	id      fileID
	links   uint64
	size    int64
	regular bool
}

// checkPath refuses a path that is not a plain file path and returns it
// absolute, so a later change of working directory changes nothing.
func checkPath(path string) (string, error) {
	bad := func(why string) error {
		return &driver.OptionError{Key: "path", Value: path, Reason: why}
	}
	switch {
	case strings.TrimSpace(path) == "":
		return "", bad("a file path is required")
	case path == ":memory:":
		return "", bad("an in-memory database does not outlive the store; the memory driver serves that")
	case strings.ContainsAny(path, "?#\x00"):
		return "", bad("'?', '#' and NUL are not allowed")
	case len(path) >= 5 && strings.EqualFold(path[:5], "file:"):
		return "", bad("a file path, not a URI")
	case strings.TrimSpace(path) != path:
		return "", bad("leading or trailing white space")
	case slices.Contains(strings.Split(path, "/"), ".."):
		// The kernel takes ".." after a symlink from the symlink's target;
		// a lexical clean does not: the path would name two files.
		return "", bad(`a ".." element: after a symlink it names another directory than it seems; give the path without it`)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", bad(err.Error())
	}
	return abs, nil
}

// checkBusyTimeout refuses what SQLite's busy timeout (int milliseconds)
// cannot hold: more overflows into "do not wait", less than 1ms rounds to it.
func checkBusyTimeout(d time.Duration) error {
	if d < 0 || d > math.MaxInt32*time.Millisecond || (d > 0 && d < time.Millisecond) {
		return &driver.OptionError{Key: "busyTimeout", Value: d.String(),
			Reason: "must be 0 or from 1ms to " + driver.FormatDuration(math.MaxInt32*time.Millisecond)}
	}
	return nil
}

// dsn is the database/sql name of the file with its settings.
func dsn(path string, busyTimeout time.Duration, wal bool) string {
	q := fmt.Sprintf("?_pragma=busy_timeout(%d)", busyTimeout.Milliseconds())
	if wal {
		q += "&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=foreign_keys(ON)&_txlock=immediate"
	}
	return path + q
}

// openFile returns the identity of the store's file at path (absolute) and
// its path with symlinks resolved, creating a new store there if nothing
// is there. It refuses what is not one store in one file: not a regular
// file, hard links, an empty file, and companions that outlived their
// database.
func openFile(ctx context.Context, path string, busyTimeout time.Duration, mayCreate bool) (fileInfo, string, error) {
	fi, err := stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		if li, lerr := os.Lstat(path); lerr == nil && li.Mode()&fs.ModeSymlink != 0 {
			return fileInfo{}, "", fmt.Errorf("sqlite %s: a symlink to a missing file: point it at a store, or give the path of the new file: %w",
				path, driver.ErrConfigMismatch)
		}
		if !mayCreate {
			why := "no such file" // or no such directory: say which
			if _, derr := os.Lstat(filepath.Dir(path)); derr != nil {
				why = derr.Error()
			}
			return fileInfo{}, "", fmt.Errorf("sqlite: no store at %s: %s, and create=false creates none: %w", path, why, driver.ErrNotFound)
		}
		if err := create(ctx, path, busyTimeout); err != nil {
			return fileInfo{}, "", err
		}
		fi, err = stat(path)
	}
	if err != nil {
		return fileInfo{}, "", fmt.Errorf("sqlite %s: %w", path, err)
	}
	refuse := func(why string) error {
		return fmt.Errorf("sqlite %s: %s: %w", path, why, driver.ErrConfigMismatch)
	}
	switch {
	case !fi.regular:
		return fileInfo{}, "", refuse("not a regular file")
	case fi.links != 1:
		return fileInfo{}, "", refuse(fmt.Sprintf("the file has %d hard links: SQLite names its -wal and -shm files after the path, "+
			"so each name would be a database of its own over the same pages; remove the other links", fi.links))
	case fi.size == 0:
		return fileInfo{}, "", refuse("the file exists and is empty: remove it to start a new store")
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fileInfo{}, "", fmt.Errorf("sqlite %s: %w", path, err)
	}
	if err := walDeleted(real); err != nil {
		return fileInfo{}, "", fmt.Errorf("sqlite %s: %w", path, err)
	}
	return fi, real, nil
}

// walDeleted refuses a -shm file with no -wal beside it: SQLite creates the
// -wal first and deletes it last, so the -wal was deleted by someone else,
// and with it the commits not yet copied into the file. (Looked at twice:
// a process opening the file in between makes both appear.)
func walDeleted(real string) error {
	s1, err1 := stat(real + "-shm")
	_, errw := stat(real + "-wal")
	s2, err2 := stat(real + "-shm")
	if err1 == nil && err2 == nil && s1.id == s2.id && errors.Is(errw, fs.ErrNotExist) {
		return fmt.Errorf("%s-shm exists and %s-wal does not: the WAL was deleted, and with it any commit not yet in the file; "+
			"if no process was writing when it went, remove the -shm file to open the store: %w", filepath.Base(real), filepath.Base(real), driver.ErrCorrupt)
	}
	return nil
}

// create makes a new store at path: built under a temporary name beside
// it and moved into place only if path is still free, so no process ever
// sees a half-made store (an empty file is refused) and two processes
// creating one at once end up sharing one. A -wal or -shm file without
// its database is refused: the database was deleted or moved while in use,
// and a new file would take over its WAL.
func create(ctx context.Context, path string, busyTimeout time.Duration) error {
	dir, base := filepath.Split(path)
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("sqlite %s: %w", path, err)
	}
	for _, c := range []string{"-wal", "-shm"} {
		if _, err := stat(filepath.Join(realDir, base+c)); err == nil {
			if _, err := stat(path); errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("sqlite %s: the file does not exist and %s%s does: the store was deleted or moved while in use, "+
					"or its WAL left behind; a new store here would take it over: %w", path, base, c, driver.ErrCorrupt)
			}
			return nil // created by another process in between
		}
	}
	f, err := os.CreateTemp(dir, "."+base+".new-*")
	if err != nil {
		return fmt.Errorf("sqlite %s: create: %w", path, err)
	}
	tmp := f.Name()
	f.Close()
	defer func() {
		for _, p := range []string{tmp, tmp + "-wal", tmp + "-shm"} {
			_ = os.Remove(p)
		}
	}()
	tdb, err := sql.Open("sqlite", dsn(tmp, busyTimeout, true))
	if err != nil {
		return fmt.Errorf("sqlite %s: create: %w", path, err)
	}
	_, err = sqlstore.Open(ctx, db{q: tdb, mu: &sync.Mutex{}}, dialect)
	// Closing the last connection copies the WAL into the file and syncs it.
	if cerr := tdb.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sqlite %s: create: %w", path, err)
	}
	err = renameNoReplace(tmp, path)
	if errors.Is(err, fs.ErrExist) {
		return nil // another process created it first: open theirs
	}
	if err != nil {
		return fmt.Errorf("sqlite %s: create: %w", path, err)
	}
	// The new name must survive a power loss as its contents do: a store
	// lost that way would start again at 0.
	d, err := os.Open(realDir)
	if err != nil {
		return fmt.Errorf("sqlite %s: create: %w", path, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sqlite %s: create: sync directory: %w", path, err)
	}
	return nil
}

// Where SQLite's unix VFS takes its locks: the shared lock on the file,
// and the -shm file's "dead man switch" that every process using the -shm
// holds.
const (
	sharedFirst = 0x40000000 + 2
	sharedSize  = 510
	shmDMS      = 128
)

// inUse counts this process's stores by file, with the name the first
// opened it under and the -shm file each uses once it is open. A store is
// counted before it opens a connection and until its last one closed, so
// the driver never opens a descriptor of its own on a file this process's
// SQLite holds locks on.
var inUse = struct {
	sync.Mutex
	n    map[fileID]int
	real map[fileID]string
	shm  map[fileID]fileID
}{n: map[fileID]int{}, real: map[fileID]string{}, shm: map[fileID]fileID{}}

// claim counts a store on the file, unless the -shm file at its path
// belongs to another file (foreignShm), or this process has the file open
// under another name: SQLite shares one -shm per file within a process,
// whatever its name, but opens the -wal by name, so a store under the new
// name would read the old name's index over another -wal.
func claim(path, real string, id fileID) error {
	inUse.Lock()
	defer inUse.Unlock()
	if old, ok := inUse.real[id]; ok && old != real {
		return fmt.Errorf("sqlite %s: this process has the file open as %s: the file was renamed or moved while in use, "+
			"and its newest commits are in that name's -wal; close the stores of that name first: %w", path, old, driver.ErrCorrupt)
	}
	if err := foreignShm(real, id); err != nil {
		return fmt.Errorf("sqlite %s: %w", path, err)
	}
	inUse.n[id]++
	inUse.real[id] = real
	return nil
}

// armed records the -shm file of the file once a store opened it.
func armed(id, shm fileID) {
	inUse.Lock()
	defer inUse.Unlock()
	inUse.shm[id] = shm
}

// release uncounts a store whose connections are all closed.
func release(id fileID) {
	inUse.Lock()
	defer inUse.Unlock()
	if inUse.n[id]--; inUse.n[id] <= 0 {
		delete(inUse.n, id)
		delete(inUse.real, id)
		delete(inUse.shm, id)
	}
}

// foreignShm refuses a -shm file in use for another file: a process that
// opened the store before it was replaced (or moved) still has the old
// file open and its -shm and -wal under this path's names; SQLite would
// lay that WAL over this file. Processes are asked through the locks
// SQLite takes: one holds the -shm, none holds the file.
func foreignShm(real string, id fileID) error {
	shm := real + "-shm"
	si, err := stat(shm)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	name := filepath.Base(shm)
	for f, s := range inUse.shm {
		if s == si.id && f != id {
			return fmt.Errorf("%s belongs to another file this process has open: the file was replaced or moved while in use: %w", name, driver.ErrCorrupt)
		}
	}
	if inUse.n[id] > 0 {
		if s, ok := inUse.shm[id]; ok && s != si.id {
			return fmt.Errorf("%s was replaced while in use: %w", name, driver.ErrCorrupt)
		}
		return nil // this process has it open: its locks say nothing here
	}
	if err := walCut(real); err != nil {
		return err
	}
	pid, err := lockHolder(shm, shmDMS, 1)
	if err != nil || pid == 0 {
		return err
	}
	if held, err := lockHolder(real, sharedFirst, sharedSize); err != nil || held != 0 {
		return err
	}
	return fmt.Errorf("%s is in use by process %d, which does not have this file open: the file was replaced or moved while "+
		"that process used it, and SQLite would share its WAL with this file; stop that process first: %w", name, pid, driver.ErrCorrupt)
}

// noStranger refuses a file that a process has open under another name
// (see stranger). A process opening the file holds it a moment before its
// -shm, so what is seen is looked at again before refusing. Where the
// locks cannot be read, nothing is refused.
func noStranger(g *fileGuard) error {
	for try := 0; ; try++ {
		pid, err := stranger(g.id, g.shm)
		if err != nil || pid == 0 {
			return nil
		}
		if try == 3 {
			return fmt.Errorf("process %d has this file open with another -wal and -shm: the file was renamed, or a hard link removed, "+
				"while that process used it (its newest commits may be in the old name's -wal, which this store would not read), "+
				"or the -shm was deleted under it; stop that process first: %w", pid, driver.ErrCorrupt)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// linkNoReplace moves tmp to path unless path exists, by a hard link.
func linkNoReplace(tmp, path string) error {
	if err := os.Link(tmp, path); err != nil {
		return err
	}
	return os.Remove(tmp)
}

// walCut refuses a -wal shorter than the frames its -shm index counts as
// not yet copied into the file: the -wal was emptied or cut in place (it
// keeps its identity), and SQLite would take what is left as the whole
// WAL, dropping commits already handed out. A process writes its frames
// to the -wal before it counts them in the index, so a -wal never is
// shorter otherwise; the index is read twice around the -wal's size and
// nothing is said while it changes. Only for a -shm this process's SQLite
// does not use (closing the descriptor drops its locks).
func walCut(real string) error {
	f, err := os.Open(real + "-shm")
	if err != nil {
		return nil // gone: walDeleted's case, or foreignShm's stat says why
	}
	defer f.Close()
	// Two copies of the index header (48 bytes each), then the checkpoint
	// info, whose first field counts the frames already in the file.
	read := func() []byte {
		b := make([]byte, 100)
		if n, _ := f.ReadAt(b, 0); n < len(b) {
			return nil
		}
		return b
	}
	h := read()
	w, err := stat(real + "-wal")
	if h == nil || err != nil || !bytes.Equal(h, read()) || !bytes.Equal(h[:48], h[48:96]) {
		return nil
	}
	ne := binary.NativeEndian
	const version = 3007000
	if ne.Uint32(h[0:]) != version || h[12] == 0 { // not an initialised index
		return nil
	}
	page := int64(ne.Uint16(h[14:]))
	if page == 1 {
		page = 65536
	}
	frames, copied := ne.Uint32(h[16:]), ne.Uint32(h[96:])
	if frames <= copied {
		return nil // every frame is in the file: the -wal holds nothing else
	}
	if need := 32 + int64(frames)*(24+page); w.size < need {
		name := filepath.Base(real)
		return fmt.Errorf("%s-wal is shorter than its index says (%d bytes; %s-shm counts %d frames, %d of them not yet in the file, "+
			"%d bytes): the WAL was emptied or cut, and with it commits not yet in the file: %w",
			name, w.size, name, frames, frames-copied, need, driver.ErrCorrupt)
	}
	return nil
}
