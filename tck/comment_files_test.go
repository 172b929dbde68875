package tck

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCommentsNameExistingFiles fails when a comment of the repository's
// Go files (every module) names a Go file that does not exist: a comment
// that points at a file renamed since misleads the reader it was written
// for.
func TestCommentsNameExistingFiles(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	bases := map[string]bool{}
	var files []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".go") {
			bases[d.Name()] = true
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	named := regexp.MustCompile(`(?:^|[\s(,"'` + "`" + `])([\w./-]*\w\.go)\b`)
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for line := 1; sc.Scan(); line++ {
			text := sc.Text()
			i := strings.Index(text, "//")
			if i < 0 {
				continue
			}
			for _, m := range named.FindAllStringSubmatch(text[i:], -1) {
				name := m[1]
				// "_test.go" is a kind of file, not a name.
				if strings.Contains(name, "://") || strings.HasPrefix(name, "go.") || strings.HasPrefix(name, "_") {
					continue
				}
				if !strings.Contains(name, "/") && bases[name] {
					continue
				}
				if strings.Contains(name, "/") && (exists(filepath.Join(root, name)) || exists(filepath.Join(filepath.Dir(path), name)) || bases[filepath.Base(name)]) {
					continue
				}
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s:%d: a comment names %s, which does not exist", rel, line, name)
			}
		}
		f.Close()
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
