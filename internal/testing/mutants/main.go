// Command mutants is a small mutation tester: it changes one operator or
// constant of the given Go files at a time (a < becomes <=, a + becomes -,
// && becomes ||, max becomes min, 0 becomes 1, a ! goes), builds the test
// binary of a package with the change laid over the file (go test -overlay,
// so the tree is never edited), and runs it twice: with the TCK's explore
// checks skipped ("before"), and, when that misses the mutant, with them
// ("after"). It prints each surviving mutant and the scores. -j mutants are
// judged at once. A package of a nested module is judged from its
// directory (-C); -sample judges a random sample when the whole set takes
// too long (the seed is printed, so a sample can be judged again).
//
//	go run ./internal/testing/mutants -pkg ./drivers/memory drivers/memory/*.go driver/slot.go
//	go run ./internal/testing/mutants -C drivers/etcd -pkg . -sample 40 drivers/etcd/slot_*.go
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

func main() {
	pkg := flag.String("pkg", "./drivers/memory", "the package whose tests judge the mutants")
	run := flag.String("run", "^TestTCK$", "the tests to run (-test.run)")
	skip := flag.String("before-skip", "^TestTCK$/^Explore$", "what the \"before\" run skips (-test.skip)")
	explore := flag.String("explore", "^TestTCK$/^Explore$", "the \"after\" run's extra tests (-test.run), for a mutant the \"before\" run missed")
	dir := flag.String("C", ".", "the module directory go test -c runs in (a nested module's)")
	sample := flag.Int("sample", 0, "judge only this many mutants, drawn at random (0: all)")
	seed := flag.Uint64("seed", 0, "the sample's seed (0: a fresh one, printed)")
	ownPkgs := flag.String("own-pkgs", "", "packages (comma separated, from -C) whose tests also judge a mutant the TCK missed, besides -pkg's own")
	timeout := flag.Duration("timeout", 30*time.Second, "bound on one test run (the TCK takes 2 s on memory)")
	jobs := flag.Int("j", 2, "mutants built and run at once")
	list := flag.Bool("list", false, "print the mutants' names and stop")
	only := flag.String("only", "", "a file of mutant names, one a line: judge only those (a rerun of an earlier run's misses)")
	own := flag.String("own-skip", "^(TestTCK|TestBroken.*)$", "what the run of the package's own tests, for a mutant the TCK missed, skips")
	flag.Parse()
	tmp, err := os.MkdirTemp("", "mutants")
	check(err)
	defer os.RemoveAll(tmp)

	var keep map[string]bool
	if *only != "" {
		b, err := os.ReadFile(*only)
		check(err)
		keep = map[string]bool{}
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); line != "" {
				keep[line] = true
			}
		}
	}
	// Every mutant first, in source order; the workers judge them.
	var ms []mutant
	for _, file := range flag.Args() {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		abs, err := filepath.Abs(file)
		check(err)
		for k := 0; ; k++ {
			src, what, ok := mutate(abs, k)
			if !ok {
				break
			}
			name := fmt.Sprintf("%s: %s", relative(file), what)
			if keep == nil || keep[name] {
				ms = append(ms, mutant{file: abs, src: src, name: name})
			}
		}
	}
	total := len(ms)
	if *sample > 0 && *sample < len(ms) {
		if *seed == 0 {
			*seed = rand.Uint64()
		}
		r := rand.New(rand.NewPCG(*seed, 0))
		pick := r.Perm(len(ms))[:*sample]
		slices.Sort(pick) // judged in source order
		var kept []mutant
		for _, i := range pick {
			kept = append(kept, ms[i])
		}
		ms = kept
		fmt.Printf("judging a sample of %d of %d mutants (-seed %d)\n", len(ms), total, *seed)
	}
	if *list {
		for _, m := range ms {
			fmt.Println(m.name)
		}
		return
	}
	start := time.Now()
	var mu sync.Mutex
	next := 0
	var wg sync.WaitGroup
	for w := 0; w < *jobs; w++ {
		wdir := filepath.Join(tmp, fmt.Sprint(w))
		check(os.Mkdir(wdir, 0o755))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(ms) {
					return
				}
				m := &ms[i]
				t0 := time.Now()
				m.verdict, m.why = judge(wdir, m, judgeCfg{dir: *dir, pkg: *pkg, run: *run, skip: *skip, explore: *explore,
					own: *own, ownPkgs: splitList(*ownPkgs), timeout: *timeout})
				m.took = time.Since(t0)
				mu.Lock()
				if m.verdict != notBuilt {
					fmt.Printf("%-20s %5.1fs  %s%s\n", m.verdict, m.took.Seconds(), m.name, m.why)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()

	var built, before, after, equiv int
	var survivors, others, equivs []string
	for _, m := range ms {
		if m.verdict == notBuilt {
			continue
		}
		built++
		if why, ok := equivalent[m.name]; ok && m.verdict != killedBefore && m.verdict != killedExplore {
			equiv++
			equivs = append(equivs, m.name+": "+why)
			continue
		}
		switch m.verdict {
		case killedBefore:
			before++
			after++
		case killedExplore:
			after++
		case killedOwn:
			others = append(others, m.name)
		case survived:
			survivors = append(survivors, m.name)
		}
	}
	wall := time.Since(start)
	real := built - equiv
	if len(ms) < total {
		fmt.Printf("\na sample of %d of %d mutants (-sample %d -seed %d)", len(ms), total, len(ms), *seed)
	}
	fmt.Printf("\n%d mutants, %d compile, %d equivalent (equivalent.go); of the other %d the TCK kills without Explore %d (%.0f%%), with it %d (%.0f%%)\n",
		len(ms), built, equiv, real, before, pct(before, real), after, pct(after, real))
	fmt.Printf("%s wall, %.1f s per mutant with -j %d\n", wall.Round(time.Second), wall.Seconds()/float64(max(len(ms), 1)), *jobs)
	fmt.Printf("equivalent (%d):\n  %s\n", len(equivs), strings.Join(equivs, "\n  "))
	fmt.Printf("missed by the TCK, killed by the package's own tests (%d):\n  %s\n", len(others), strings.Join(others, "\n  "))
	fmt.Printf("survivors (%d):\n  %s\n", len(survivors), strings.Join(survivors, "\n  "))
}

type verdict string

const (
	notBuilt      verdict = "does not compile"
	killedBefore  verdict = "killed before"
	killedExplore verdict = "killed by Explore"
	killedOwn     verdict = "killed by own tests"
	survived      verdict = "SURVIVED"
)

type mutant struct {
	file, name string
	src        []byte
	verdict    verdict
	why        string // the first test that failed, to tell a kill from a flaky test
	took       time.Duration
}

// judgeCfg says how a mutant is judged: the test binary of pkg, built in
// dir, runs run (skipping skip), then explore, then the package's own
// tests (all but own) and those of ownPkgs.
type judgeCfg struct {
	dir, pkg, run, skip, explore, own string
	ownPkgs                           []string
	timeout                           time.Duration
}

// judge builds the package's test binary with the mutant laid over its
// file (go test -overlay, so the tree is never edited; vet off, as a
// mutant is judged by the tests alone) and runs it: without Explore
// first, then with it when that missed the mutant, and then the package's
// other tests (a driver's typed constructor is not the TCK's business)
// and those of the -own-pkgs.
func judge(wdir string, m *mutant, c judgeCfg) (verdict, string) {
	mfile := filepath.Join(wdir, "m.go")
	check(os.WriteFile(mfile, m.src, 0o644))
	overlay := filepath.Join(wdir, "overlay.json")
	b, _ := json.Marshal(map[string]any{"Replace": map[string]string{m.file: mfile}})
	check(os.WriteFile(overlay, b, 0o644))
	bin := filepath.Join(wdir, "t.test")
	if !build(c.dir, bin, overlay, c.pkg) {
		return notBuilt, "" // an unused variable, a type error: not a mutant
	}
	at := pkgDir(c.dir, c.pkg)
	if why := fails(bin, at, c.timeout, "-test.run", c.run, "-test.skip", c.skip); why != "" {
		return killedBefore, why
	}
	if why := fails(bin, at, c.timeout, "-test.run", c.explore); why != "" {
		return killedExplore, why
	}
	if why := fails(bin, at, 3*c.timeout, "-test.skip", c.own); why != "" {
		return killedOwn, why
	}
	for _, p := range c.ownPkgs {
		if !build(c.dir, bin, overlay, p) {
			return killedOwn, "  (" + p + " does not build)"
		}
		if why := fails(bin, pkgDir(c.dir, p), 3*c.timeout); why != "" {
			return killedOwn, why
		}
	}
	return survived, ""
}

// build builds pkg's test binary, in dir, with the overlay.
func build(dir, bin, overlay, pkg string) bool {
	cmd := exec.Command("go", "test", "-c", "-vet=off", "-o", bin, "-overlay", overlay, pkg)
	cmd.Dir = dir
	return cmd.Run() == nil
}

var pkgDirs sync.Map // "dir pkg" -> the package's source directory

// pkgDir is where a package's tests run, as go test runs them: its source
// directory (the harnesses find the servers from there).
func pkgDir(dir, pkg string) string {
	if d, ok := pkgDirs.Load(dir + " " + pkg); ok {
		return d.(string)
	}
	cmd := exec.Command("go", "list", "-f", "{{.Dir}}", pkg)
	cmd.Dir = dir
	out, err := cmd.Output()
	check(err)
	d := strings.TrimSpace(string(out))
	pkgDirs.Store(dir+" "+pkg, d)
	return d
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func pct(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

func relative(file string) string {
	wd, _ := os.Getwd()
	if r, err := filepath.Rel(wd, file); err == nil {
		return r
	}
	return file
}

// fails runs the test binary and says how it failed: "" when it passed,
// else the first test that failed, or the timeout (a timeout is a kill).
func fails(bin, dir string, timeout time.Duration, args ...string) string {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	args = append([]string{"-test.count=1", "-test.timeout=" + timeout.String()}, args...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil {
		return ""
	}
	if ctx.Err() != nil || bytes.Contains(out, []byte("panic: test timed out")) {
		return "  (timed out after " + timeout.String() + ")"
	}
	// The deepest failed test says most (a parent fails with its child).
	deepest := ""
	for _, line := range strings.Split(string(out), "\n") {
		if i := strings.Index(line, "--- FAIL: "); i >= 0 {
			if name := strings.TrimSpace(line[i+len("--- FAIL: "):]); strings.Count(name, "/") > strings.Count(deepest, "/") || deepest == "" {
				deepest = name
			}
		}
	}
	if deepest != "" {
		return "  (" + deepest + ")"
	}
	if i := bytes.Index(out, []byte("panic: ")); i >= 0 {
		line, _, _ := strings.Cut(string(out[i:]), "\n")
		return "  (" + line + ")"
	}
	return "  (" + err.Error() + ")"
}

var swaps = map[token.Token]token.Token{
	token.LSS: token.LEQ, token.LEQ: token.LSS, token.GTR: token.GEQ, token.GEQ: token.GTR,
	token.EQL: token.NEQ, token.NEQ: token.EQL, token.ADD: token.SUB, token.SUB: token.ADD,
	token.LAND: token.LOR, token.LOR: token.LAND,
}

// mutate returns file with its k-th mutation applied, and what it is; ok
// is false past the last one. Mutations are counted in source order.
func mutate(file string, k int) (src []byte, what string, ok bool) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
	check(err)
	n := 0
	ast.Inspect(f, func(node ast.Node) bool {
		if ok {
			return false
		}
		hit := func(desc string, apply func()) {
			if n == k {
				pos := node.Pos()
				if b, isBin := node.(*ast.BinaryExpr); isBin {
					pos = b.OpPos // one line may hold several operators
				}
				p := fset.Position(pos)
				what = fmt.Sprintf("line %d:%d: %s", p.Line, p.Column, desc)
				apply()
				ok = true
			}
			n++
		}
		switch x := node.(type) {
		case *ast.BinaryExpr:
			if to, found := swaps[x.Op]; found {
				if x.Op == token.ADD && isString(x) {
					return true
				}
				hit(fmt.Sprintf("%s -> %s", x.Op, to), func() { x.Op = to })
			}
		case *ast.UnaryExpr:
			if x.Op == token.NOT {
				// !!x is x: the negation is gone, the types still fit.
				hit("! removed", func() { x.X = &ast.UnaryExpr{Op: token.NOT, X: x.X} })
			}
		case *ast.CallExpr:
			if id, isIdent := x.Fun.(*ast.Ident); isIdent && (id.Name == "max" || id.Name == "min") {
				to := map[string]string{"max": "min", "min": "max"}[id.Name]
				hit(id.Name+" -> "+to, func() { id.Name = to })
			}
		case *ast.BasicLit:
			if x.Kind == token.INT && (x.Value == "0" || x.Value == "1") {
				to := map[string]string{"0": "1", "1": "0"}[x.Value]
				hit(x.Value+" -> "+to, func() { x.Value = to })
			}
		}
		return true
	})
	if !ok {
		return nil, "", false
	}
	var buf bytes.Buffer
	check(printer.Fprint(&buf, fset, f))
	return buf.Bytes(), what, true
}

// isString guesses a string concatenation: either side a string literal.
func isString(x *ast.BinaryExpr) bool {
	for _, e := range []ast.Expr{x.X, x.Y} {
		if l, ok := e.(*ast.BasicLit); ok && l.Kind == token.STRING {
			return true
		}
	}
	return false
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "mutants:", err)
		os.Exit(2)
	}
}
