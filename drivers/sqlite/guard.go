package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync/atomic"

	"github.com/cosid-go/store/driver"
)

// fileGuard checks, before and after each statement, that the path still
// names the file the store opened, with one link, and that the -wal and
// -shm files are still the ones it opened. Otherwise another process
// opening the path would get another database (a fresh file, an old copy,
// a new WAL), and both would hand out the same values; so the store stops
// for good at the first change it sees.
//
// A value is handed out only if the check passed after its commit: the
// file was the store's from before the statement until after it. A change
// a moment after that is the operator's, and seen by the next call.
//
// The -wal and -shm keep their identity while the store lives because the
// store keeps one connection open (SQLite deletes them only when the last
// connection of any process closes).
type fileGuard struct {
	path     string // absolute, as given
	real     string // symlinks resolved: where SQLite puts -wal and -shm
	id       fileID
	wal, shm fileID
	stopped  atomic.Pointer[error]
	moved    atomic.Bool // stopped because the path no longer names the file alone
	off      atomic.Bool // benchmarks only: what the check costs
}

// arm takes the identity of the -wal and -shm files, once the store's
// connection has opened them, and checks the path names the file opened.
func (g *fileGuard) arm() error {
	fi, err := stat(g.path)
	if err != nil {
		return err
	}
	if fi.id != g.id {
		return fmt.Errorf("the file was replaced while the store opened it: %w", driver.ErrCorrupt)
	}
	w, err := stat(g.real + "-wal")
	if err != nil {
		return err
	}
	s, err := stat(g.real + "-shm")
	if err != nil {
		return err
	}
	g.wal, g.shm = w.id, s.id
	return nil
}

// check returns an error wrapping ErrCorrupt, for good, once anything
// changed; an error that is not a change (stat failing for another reason)
// is returned but not kept.
func (g *fileGuard) check() error {
	if g == nil || g.off.Load() {
		return nil
	}
	if p := g.stopped.Load(); p != nil {
		return *p
	}
	why, moved, err := g.changed()
	if err != nil {
		return fmt.Errorf("sqlite %s: cannot check the file is still the store's: %w", g.path, err)
	}
	if why == "" {
		return nil
	}
	err = fmt.Errorf("sqlite %s: %s; this store stops, and another process opening the path would not see what it wrote: %w",
		g.path, why, driver.ErrCorrupt)
	if !g.stopped.CompareAndSwap(nil, &err) {
		return *g.stopped.Load()
	}
	g.moved.Store(moved)
	return err
}

// changed says what changed, or "", and whether it is the path that no
// longer names the file alone (the file itself may live on under another
// name).
func (g *fileGuard) changed() (why string, moved bool, err error) {
	fi, err := stat(g.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "the file was deleted or moved while in use", true, nil
	case err != nil:
		return "", false, err
	case fi.id != g.id:
		return fmt.Sprintf("the path names another file now (inode %d, opened %d): the file was replaced while in use", fi.id.ino, g.id.ino), true, nil
	case fi.links != 1:
		return fmt.Sprintf("the file has %d hard links now", fi.links), true, nil
	case fi.size == 0:
		return "the file was emptied while in use", false, nil
	}
	why, err = g.companions()
	return why, false, err
}

// companions says whether the -wal or -shm changed, or "".
func (g *fileGuard) companions() (string, error) {
	for _, c := range []struct {
		suffix string
		id     fileID
	}{{"-wal", g.wal}, {"-shm", g.shm}} {
		fi, err := stat(g.real + c.suffix)
		name := filepath.Base(g.real) + c.suffix
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return name + " was deleted while in use", nil
		case err != nil:
			return "", err
		case fi.id != c.id:
			return name + " was replaced while in use", nil
		}
	}
	return "", nil
}

// strandedWAL says whether the store stopped because its file was moved
// (renamed, hard-linked, replaced or deleted) while its -wal and -shm are
// still its own: SQLite copies the -wal into the file when its last
// connection closes, but not into a file that moved, which would leave
// the newest commits behind in a -wal no other name of the file reads.
func (g *fileGuard) strandedWAL() bool {
	if g.stopped.Load() == nil || !g.moved.Load() {
		return false
	}
	why, err := g.companions()
	return err == nil && why == ""
}
