package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cosid-go/store/internal/testing/pgtest"
)

// The operator procedures of docs/ are run as written: a doc marks the shell
// block of a procedure with an HTML comment on the line before its fence,
//
//	<!-- procedure: postgres-backup -->
//	```sh
//	pg_dump ...
//	```
//
// and a test reads the block from the doc, replaces the doc's example
// names (hosts, paths) with the test's, and runs each command with bash, the
// tools it names (storectl, pg_dump, etcdctl, ...) first on PATH. A comment
// line of the block ("# stop every member") is a step the test plays
// itself. So an edit of the doc that breaks the procedure fails its test.

// docsDir is the repository's docs/, seen from cmd/storectl.
const docsDir = "../../docs"

// procedure returns the lines of the shell block doc marks with
// <!-- procedure: name -->: commands (continuation lines joined) and
// comment lines, blank lines dropped.
func procedure(t *testing.T, doc, name string) []string {
	t.Helper()
	var lines []string
	cont := ""
	for l := range strings.SplitSeq(docBlock(t, doc, name), "\n") {
		l = strings.TrimSpace(l)
		if c, ok := strings.CutSuffix(l, "\\"); ok {
			cont += c
			continue
		}
		l, cont = cont+l, ""
		if l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		t.Fatalf("docs/%s: the block of procedure %s is empty", doc, name)
	}
	return lines
}

// docBlock returns the text of the fenced block doc marks with
// <!-- procedure: name --> on the line before its fence (a file the
// procedure uses, such as a stores.yaml, is marked the same way).
func docBlock(t *testing.T, doc, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(docsDir, doc))
	if err != nil {
		t.Fatal(err)
	}
	marker := "<!-- procedure: " + name + " -->"
	if n := strings.Count(string(b), marker); n != 1 {
		t.Fatalf("docs/%s has %d markers %q, want 1", doc, n, marker)
	}
	_, rest, _ := strings.Cut(string(b), marker+"\n")
	fence, rest, _ := strings.Cut(rest, "\n")
	if !strings.HasPrefix(fence, "```") {
		t.Fatalf("docs/%s: %s is followed by %q, not a fenced block", doc, marker, fence)
	}
	body, _, ok := strings.Cut(rest, "\n```")
	if !ok {
		t.Fatalf("docs/%s: the block after %s does not end", doc, marker)
	}
	return body + "\n"
}

// operator runs procedures: its bin directory, first on PATH, holds the
// tools by the names the docs use.
type operator struct {
	t     *testing.T
	bin   string
	pairs []string // doc text, test text, ...
	used  map[string]bool
}

// newOperator is an operator with storectl on its PATH, replacing in each
// command every doc text of pairs (doc, test, ...; the first that matches
// at a position wins, so put longer ones first). A pair no procedure used
// fails the test at its end: the doc changed the text it stands for.
func newOperator(t *testing.T, pairs ...string) *operator {
	t.Helper()
	if len(pairs)%2 != 0 {
		t.Fatalf("newOperator: %d replacement strings, want pairs", len(pairs))
	}
	o := &operator{t: t, bin: t.TempDir(), pairs: pairs, used: map[string]bool{}}
	o.tool("storectl", storectlBinary(t))
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		for i := 0; i < len(pairs); i += 2 {
			if !o.used[pairs[i]] {
				t.Errorf("the docs' procedures no longer contain %q, which the test replaces with %q", pairs[i], pairs[i+1])
			}
		}
	})
	return o
}

// pgTools puts pg_dump, pg_restore and psql of the PostgreSQL the tests
// run on the operator's PATH.
func (o *operator) pgTools() {
	o.t.Helper()
	bin, err := pgtest.BinDir()
	if err != nil {
		o.t.Fatal(err)
	}
	for _, tool := range []string{"pg_dump", "pg_restore", "psql"} {
		o.tool(tool, filepath.Join(bin, tool))
	}
}

// tool puts path on the operator's PATH as name (in place of the one
// there: the previous version's storectl, say).
func (o *operator) tool(name, path string) {
	o.t.Helper()
	link := filepath.Join(o.bin, name)
	if err := os.Remove(link); err != nil && !errors.Is(err, os.ErrNotExist) {
		o.t.Fatal(err)
	}
	if err := os.Symlink(path, link); err != nil {
		o.t.Fatal(err)
	}
}

// script puts a bash script on the operator's PATH as name (a tool the
// install has under another form, as zkCli.sh over the test's classpath).
func (o *operator) script(name, body string) {
	o.t.Helper()
	if err := os.WriteFile(filepath.Join(o.bin, name), []byte("#!/bin/bash\nset -eu\n"+body+"\n"), 0o755); err != nil {
		o.t.Fatal(err)
	}
}

// replace is line with the doc's names replaced by the test's.
func (o *operator) replace(line string) string {
	var b strings.Builder
	for i := 0; i < len(line); {
		matched := false
		for j := 0; j < len(o.pairs); j += 2 {
			if strings.HasPrefix(line[i:], o.pairs[j]) {
				b.WriteString(o.pairs[j+1])
				o.used[o.pairs[j]] = true
				i += len(o.pairs[j])
				matched = true
				break
			}
		}
		if !matched {
			b.WriteByte(line[i])
			i++
		}
	}
	return b.String()
}

// follow runs lines in order: step(comment) for a comment line, bash for a
// command, which must succeed. It returns each command's result by its
// line as written in the doc.
func (o *operator) follow(lines []string, step func(comment string)) map[string]result {
	o.t.Helper()
	out := map[string]result{}
	for _, l := range lines {
		if c, ok := strings.CutPrefix(l, "#"); ok {
			if step == nil {
				o.t.Fatalf("the procedure has a step %q the test does not play", l)
			}
			step(strings.TrimSpace(c))
			continue
		}
		r := o.run(o.replace(l))
		if r.code != 0 {
			o.t.Fatalf("the documented command\n  %s\nran as\n  %s\nexit code %d\nstdout:\n%s\nstderr:\n%s", l, o.replace(l), r.code, r.stdout, r.stderr)
		}
		out[l] = r
	}
	return out
}

// run runs one command line with bash, the operator's tools first on PATH.
// Its bound is generous: a loaded machine.
func (o *operator) run(line string) result {
	o.t.Helper()
	ctx, cancel := context.WithTimeout(o.t.Context(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", line)
	cmd.Env = append(os.Environ(), "PATH="+o.bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	return runCommand(o.t, fmt.Sprintf("bash -c %q", line), cmd)
}

// stepper plays a procedure's comment lines: each must be one of steps,
// and each of steps must be played once.
func stepper(t *testing.T, steps map[string]func()) func(string) {
	t.Helper()
	played := map[string]bool{}
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		for s := range steps {
			if !played[s] {
				t.Errorf("the procedure no longer has the step %q", s)
			}
		}
	})
	return func(c string) {
		f, ok := steps[c]
		if !ok {
			t.Fatalf("the procedure has a step %q the test does not play (it plays %s)", c, strings.Join(slices.Sorted(maps.Keys(steps)), "; "))
		}
		played[c] = true
		f()
	}
}

// TestEveryProcedureIsRun: every block docs/ marks as a procedure is read
// by a test of this package (its name appears quoted in a test file), so
// a procedure added to the docs without a test that runs it fails here.
func TestEveryProcedureIsRun(t *testing.T) {
	var tests strings.Builder
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		tests.Write(b)
	}
	marker := regexp.MustCompile(`<!-- procedure: ([a-z0-9][a-z0-9.-]*) -->`) // NAME in prose is no marker
	found := 0
	err = filepath.WalkDir(docsDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".md") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range marker.FindAllStringSubmatch(string(b), -1) {
			found++
			if !strings.Contains(tests.String(), `"`+m[1]+`"`) {
				t.Errorf("%s marks the procedure %q, which no test of cmd/storectl runs", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatalf("no procedure marked in %s", docsDir)
	}
}
