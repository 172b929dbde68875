package apitest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestProductionImportsNoTestSupport: code a user's program compiles (every
// non-test file outside internal/testing) imports no package of
// internal/testing, which holds the tests' servers, fault schedules and
// harnesses: those stay out of users' binaries and may change at will.
func TestProductionImportsNoTestSupport(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	const support = storePath + "/internal/testing/"
	files := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "internal/testing" || (rel != "." && strings.HasPrefix(d.Name(), ".")) || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(path, support) {
				t.Errorf("%s imports %s: test support in code users compile", rel, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d source files: the walk missed the repository", files)
	}
}
