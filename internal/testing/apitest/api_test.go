package apitest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// driverDirs are the driver packages, from the repository root: ours, and
// examples/prefixdriver, the model a third party's driver follows.
var driverDirs = []string{"drivers/memory", "drivers/sqlite", "drivers/postgres", "drivers/zookeeper",
	"drivers/etcd", "drivers/mysql", "examples/prefixdriver"}

const storePath = "github.com/cosid-go/store"

// pkgFile is one parsed source file and what its import names stand for.
type pkgFile struct {
	f       *ast.File
	imports map[string]string // name -> import path
}

// parseDriver reads a driver package's source files, tests left out: what
// go doc shows a user.
func parseDriver(t *testing.T, dir string) []pkgFile {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "..", filepath.FromSlash(dir), "*.go"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no source of driver %s: %v", dir, err)
	}
	var out []pkgFile
	fset := token.NewFileSet()
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		pf := pkgFile{f: f, imports: map[string]string{}}
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			n := path[strings.LastIndex(path, "/")+1:]
			if v := strings.TrimPrefix(n, "v"); v != n && v != "" && strings.Trim(v, "0123456789") == "" {
				n = strings.TrimSuffix(path, "/"+n) // a major version suffix: pgx/v5 is pgx
				n = n[strings.LastIndex(n, "/")+1:]
			}
			if im.Name != nil {
				n = im.Name.Name
			}
			pf.imports[n] = path
		}
		out = append(out, pf)
	}
	return out
}

// pureTypes are the only types a function that cannot reach stored data
// may take or return besides the package's own data types: values, no
// handle (context, connection, pool, driver or store), no function, channel
// or interface through which one could come.
var pureTypes = map[string]bool{
	"string": true, "bool": true, "byte": true, "int": true, "int32": true, "int64": true, "error": true,
	"time.Duration": true, "github.com/go-zookeeper/zk.ACL": true,
}

// readsOnly are exported functions that take a handle on stored data yet
// only read it, each with why; their own tests prove it.
var readsOnly = map[string]string{
	"sqlite.Backup":         "copies a store's file into a new file (VACUUM INTO), overwriting nothing and creating no store",
	"sqlite.RestoreFile":    "copies a backup file to a path that must not exist and hands the copy to the caller's raise; it opens no store itself",
	"etcd.Options.Format":   "prints the options struct (fmt.Formatter) with its password hidden: it holds no handle",
	"etcd.Options.LogValue": "the options struct as a log/slog value, its password hidden: it holds no handle",
}

// typeName names e as package-path.Name, or the bare name for a local or
// predeclared type; "" for anything that is not a plain named type.
func (pf pkgFile) typeName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			if path := pf.imports[x.Name]; path == "time" {
				return "time." + e.Sel.Name
			} else if path != "" {
				return path + "." + e.Sel.Name
			}
		}
	}
	return ""
}

// pure reports why e is not a pure data type, or "".
func (pf pkgFile) pure(e ast.Expr, local map[string]bool) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return pf.pure(e.X, local)
	case *ast.ArrayType:
		return pf.pure(e.Elt, local)
	case *ast.Ellipsis:
		return pf.pure(e.Elt, local)
	case *ast.MapType:
		if why := pf.pure(e.Key, local); why != "" {
			return why
		}
		return pf.pure(e.Value, local)
	}
	n := pf.typeName(e)
	if pureTypes[n] || local[n] {
		return ""
	}
	return "type " + types(e, pf) + " may reach stored data"
}

func types(e ast.Expr, pf pkgFile) string {
	if n := pf.typeName(e); n != "" {
		return n
	}
	return "(not a named type)"
}

// returnsStore reports whether ft's results are (*store.Store, error).
func (pf pkgFile) returnsStore(ft *ast.FuncType) bool {
	if ft.Results == nil || len(ft.Results.List) != 2 {
		return false
	}
	star, ok := ft.Results.List[0].Type.(*ast.StarExpr)
	return ok && pf.typeName(star.X) == storePath+".Store" && pf.typeName(ft.Results.List[1].Type) == "error"
}

// TestDriverAPI: every exported function and method of the driver
// packages returns *store.Store (with an error) or takes and returns only
// values (so it cannot reach stored data); exported types are data (no
// embedded fields, whose methods would be promoted; no function, channel or
// interface fields but error); there are no exported variables; nothing
// exported names a type of an internal package. Each package has OpenStore
// and one options struct, Options.
func TestDriverAPI(t *testing.T) {
	for _, dir := range driverDirs {
		name := path.Base(dir)
		t.Run(name, func(t *testing.T) {
			files := parseDriver(t, dir)
			if pkg := files[0].f.Name.Name; pkg != name {
				t.Errorf("%s: package %s; want the directory's name, %s", dir, pkg, name)
			}
			local := dataTypes(files)
			var openStore, options bool
			for _, pf := range files {
				for _, d := range pf.f.Decls {
					switch d := d.(type) {
					case *ast.FuncDecl:
						if !d.Name.IsExported() {
							continue
						}
						what := d.Name.Name
						if d.Recv != nil {
							recv := d.Recv.List[0].Type
							if s, ok := recv.(*ast.StarExpr); ok {
								recv = s.X
							}
							if id, ok := recv.(*ast.Ident); !ok || !id.IsExported() {
								continue // a method of an unexported type: go doc shows no way to it
							}
							what = recv.(*ast.Ident).Name + "." + what
						}
						if d.Name.Name == "OpenStore" && d.Recv == nil {
							openStore = true
						}
						if pf.returnsStore(d.Type) || readsOnly[name+"."+what] != "" {
							continue
						}
						var fields []*ast.Field
						if d.Recv != nil {
							fields = append(fields, d.Recv.List...)
						}
						fields = append(fields, d.Type.Params.List...)
						if d.Type.Results != nil {
							fields = append(fields, d.Type.Results.List...)
						}
						for _, f := range fields {
							if why := pf.pure(f.Type, local); why != "" {
								t.Errorf("%s.%s neither returns *store.Store nor is a pure function: %s", name, what, why)
							}
						}
					case *ast.GenDecl:
						for _, s := range d.Specs {
							switch s := s.(type) {
							case *ast.ValueSpec:
								for _, n := range s.Names {
									if n.IsExported() && d.Tok == token.VAR {
										t.Errorf("%s.%s is an exported variable: a caller could replace it or reach through it", name, n.Name)
									}
								}
							case *ast.TypeSpec:
								if !s.Name.IsExported() {
									continue
								}
								if s.Name.Name == "Options" {
									options = true
								}
								if !local[s.Name.Name] {
									t.Errorf("%s.%s is not a struct of data: a field, exported or not, may reach stored data (or is embedded)", name, s.Name.Name)
								}
							}
						}
					}
				}
			}
			if !openStore || !options {
				t.Errorf("%s: OpenStore found %v, Options found %v; want both", name, openStore, options)
			}
			for _, pf := range files {
				ast.Inspect(pf.f, func(n ast.Node) bool {
					if d, ok := n.(*ast.FuncDecl); ok && (!d.Name.IsExported() || d.Recv != nil) {
						return false // not shown by go doc
					}
					if sel, ok := n.(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.Ident); ok && strings.Contains(pf.imports[x.Name], "/internal/") && exportedContext(pf.f, sel) {
							t.Errorf("%s: the exported API names %s.%s of %s", name, x.Name, sel.Sel.Name, pf.imports[x.Name])
						}
					}
					return true
				})
			}
		})
	}
}

// dataTypes are the package's exported struct types whose every field,
// exported or not, is pure data (or a connection's configuration): values
// of them cannot reach stored data. An embedded field disqualifies a type,
// since its methods would be promoted.
func dataTypes(files []pkgFile) map[string]bool {
	type candidate struct {
		pf pkgFile
		st *ast.StructType
	}
	cands := map[string]candidate{}
	for _, pf := range files {
		for _, d := range pf.f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.TYPE {
				for _, s := range g.Specs {
					ts := s.(*ast.TypeSpec)
					if st, ok := ts.Type.(*ast.StructType); ok && ts.Name.IsExported() {
						cands[ts.Name.Name] = candidate{pf, st}
					}
				}
			}
		}
	}
	data := map[string]bool{}
	for n := range cands {
		data[n] = true
	}
	for changed := true; changed; {
		changed = false
		for n, c := range cands {
			if !data[n] {
				continue
			}
			for _, f := range c.st.Fields.List {
				if len(f.Names) == 0 || (c.pf.pure(f.Type, data) != "" && !c.pf.config(f.Type)) {
					data[n], changed = false, true
					break
				}
			}
		}
	}
	return data
}

// config reports a field type that configures a connection the store opens
// (postgres's *pgx.ConnConfig): data handed to the driver, not a handle.
func (pf pkgFile) config(e ast.Expr) bool {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	return pf.typeName(e) == "github.com/jackc/pgx/v5.ConnConfig"
}

// exportedContext reports whether sel is inside an exported type's
// declaration or an exported function's signature.
func exportedContext(f *ast.File, sel ast.Node) bool {
	for _, d := range f.Decls {
		if sel.Pos() < d.Pos() || sel.Pos() >= d.End() {
			continue
		}
		switch d := d.(type) {
		case *ast.FuncDecl:
			return d.Recv == nil && d.Name.IsExported() && sel.Pos() < d.Type.End()
		case *ast.GenDecl:
			for _, s := range d.Specs {
				if sel.Pos() < s.Pos() || sel.Pos() >= s.End() {
					continue
				}
				switch s := s.(type) {
				case *ast.TypeSpec:
					return s.Name.IsExported()
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							return true
						}
					}
				}
			}
		}
	}
	return false
}
