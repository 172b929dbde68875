package sqlite

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cosid-go/store/driver"
)

// TestOptionMessages pins what a user reads for a bad path or busyTimeout:
// the option, the value and the reason, said once (no sentinel's text
// appended), and nothing created.
func TestOptionMessages(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing", "ids.db")
	for _, c := range []struct {
		opts    map[string]string
		want    string
		invalid bool // ErrInvalidArgument
	}{
		{map[string]string{}, `option "path": value "": a file path is required`, true},
		{map[string]string{"path": ""}, `option "path": value "": a file path is required`, true},
		{map[string]string{"pth": "x.db"}, `unknown option "pth" (known: busyTimeout, create, path)`, true},
		{map[string]string{"path": filepath.Join(dir, "x.db"), "busyTimeout": "9999999999999999"}, `option "busyTimeout": value "9999999999999999": must be between 0s and 596h`, true},
		{map[string]string{"path": missing}, "sqlite " + missing + ": lstat " + filepath.Dir(missing) + ": no such file or directory", false},
		{map[string]string{"path": filepath.Join(file, "ids.db")}, "sqlite " + filepath.Join(file, "ids.db") + ": stat " +
			filepath.Join(file, "ids.db") + ": not a directory", false},
	} {
		_, err := fromOptions(c.opts)
		if err == nil || err.Error() != c.want || errors.Is(err, driver.ErrInvalidArgument) != c.invalid {
			t.Errorf("Open(%q):\ngot  %v\nwant %s (invalid argument: %v)", c.opts, err, c.want, c.invalid)
		}
	}
	if _, err := os.Stat(filepath.Dir(missing)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the missing directory: %v, want it still missing", err)
	}
}
