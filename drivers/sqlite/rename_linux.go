package sqlite

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// renameNoReplace moves a new file into place unless path exists, in one
// step: the file never has a second name, which Open would refuse.
func renameNoReplace(tmp, path string) error {
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		return linkNoReplace(tmp, path) // a file system without the flag
	}
	if err != nil {
		return &os.LinkError{Op: "rename", Old: tmp, New: path, Err: err}
	}
	return nil
}
