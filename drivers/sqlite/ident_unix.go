//go:build unix

package sqlite

import (
	"os"
	"syscall"
)

// stat reads a file's identity, following symlinks, without opening it:
// opening and closing a database file in this process would drop the
// POSIX locks SQLite holds on it.
func stat(path string) (fileInfo, error) {
	var st syscall.Stat_t
	for {
		err := syscall.Stat(path, &st)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return fileInfo{}, &os.PathError{Op: "stat", Path: path, Err: err}
		}
		break
	}
	// The field types differ by platform (Dev is int32 on Darwin, Nlink
	// uint16): hence the conversions.
	return fileInfo{
		id:      fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)},
		links:   uint64(st.Nlink),
		size:    st.Size,
		regular: st.Mode&syscall.S_IFMT == syscall.S_IFREG,
	}, nil
}

// lockHolder returns the process id of one process holding a lock on
// [start, start+n) of the file, or 0 when none does. Only for files this
// process has no connection to: closing the descriptor it opens drops
// every POSIX lock this process holds on the file.
func lockHolder(path string, start, n int64) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: 0, Start: start, Len: n}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_GETLK, &lk); err != nil {
		return 0, &os.PathError{Op: "fcntl F_GETLK", Path: path, Err: err}
	}
	if lk.Type == syscall.F_UNLCK {
		return 0, nil
	}
	return int(lk.Pid), nil
}
