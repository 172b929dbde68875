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
	return fileInfo{
		id:      fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, //nolint:unconvert // int32 on some platforms
		links:   uint64(st.Nlink),                                 //nolint:unconvert // uint16 on some platforms
		size:    st.Size,
		regular: st.Mode&syscall.S_IFMT == syscall.S_IFREG,
	}, nil
}
