//go:build !unix

package sqlite

import (
	"fmt"
	"runtime"

	"github.com/cosid-go/store/driver"
)

// stat is not written for this platform: without a file's identity the
// driver cannot tell one store from another, so it refuses to open.
func stat(path string) (fileInfo, error) {
	return fileInfo{}, fmt.Errorf("sqlite %s: file identity is not implemented on %s: %w", path, runtime.GOOS, driver.ErrUnsupported)
}

func lockHolder(string, int64, int64) (int, error) { return 0, driver.ErrUnsupported }
