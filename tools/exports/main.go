// Command exports lists the exported names of a package that no other package of the module uses
// outside tests: names exported for tests alone, or for nobody.
//
//	go run ./tools/exports ./tasks      # list them
//	go run ./tools/exports -w ./tasks   # unexport them (not struct fields), tests included
//
// A name counts as used when another package's non-test code names it (magefile.go included,
// built with the mage tag), when it is a method that satisfies an interface of a package the
// module's code imports (dag.Task's Run, fmt.Stringer's String, ...), or when it is a struct field
// with a tag (encoding/json and its kin reach those by reflection). It exits 1 when any name is
// unused. It type-checks non-test files against the compiler's export data (`go list -export`).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	write := flag.Bool("w", false, "unexport the names no other package uses (not struct fields), in place")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: exports package")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	unused, err := Unused(".", flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "exports:", err)
		os.Exit(1)
	}
	if *write {
		skipped, err := Unexport(".", flag.Arg(0), unused)
		if err != nil {
			fmt.Fprintln(os.Stderr, "exports:", err)
			os.Exit(1)
		}
		for _, s := range skipped {
			fmt.Println("left:", s)
		}
		fmt.Printf("%d of %d names unexported\n", len(unused)-len(skipped), len(unused))
		return
	}
	for _, n := range unused {
		fmt.Println(n)
	}
	if len(unused) > 0 {
		fmt.Printf("%d exported names no other package uses\n", len(unused))
		os.Exit(1)
	}
}

type listed struct {
	ImportPath  string
	Dir         string
	GoFiles     []string
	TestGoFiles []string
	Export      string
	DepOnly     bool
	Module      *struct{ Path string }
	Error       *struct{ Err string }
}

// Unused returns the exported names of the package pattern names (one package of the module in
// dir) that no other package of the module uses outside tests, as "Name", "Type.Method" or
// "Type.Field", sorted.
func Unused(dir, pattern string) ([]string, error) {
	pkgs, exports, err := list(dir, "-tags", "mage", "./...")
	if err != nil {
		return nil, err
	}
	targets, _, err := list(dir, "-tags", "mage", pattern)
	if err != nil {
		return nil, err
	}
	var target string
	for _, p := range targets {
		if !p.DepOnly {
			target = p.ImportPath
		}
	}
	fset := token.NewFileSet()
	imp := exportImporter(fset, exports)
	used := map[string]bool{}
	var self *types.Package
	var interfaces []*types.Interface
	seenPkg := map[*types.Package]bool{}
	var collect func(p *types.Package)
	collect = func(p *types.Package) {
		if seenPkg[p] {
			return
		}
		seenPkg[p] = true
		for _, name := range p.Scope().Names() {
			if tn, ok := p.Scope().Lookup(name).(*types.TypeName); ok {
				if it, ok := tn.Type().Underlying().(*types.Interface); ok && it.NumMethods() > 0 {
					interfaces = append(interfaces, it)
				}
			}
		}
		for _, q := range p.Imports() {
			collect(q)
		}
	}
	for _, p := range pkgs {
		if p.DepOnly {
			continue
		}
		pkg, info, err := check(fset, imp, p)
		if err != nil {
			return nil, err
		}
		if p.ImportPath == target {
			self = pkg
			collect(pkg)
			continue
		}
		collect(pkg)
		for _, obj := range info.Uses {
			if obj.Pkg() != nil && obj.Pkg().Path() == target {
				used[key(obj)] = true
			}
		}
	}
	if self == nil {
		return nil, fmt.Errorf("%s: no such package in the module", pattern)
	}
	var unused []string
	note := func(obj types.Object) {
		if obj.Exported() && !used[key(obj)] {
			unused = append(unused, key(obj))
		}
	}
	for _, name := range self.Scope().Names() {
		obj := self.Scope().Lookup(name)
		note(obj)
		tn, ok := obj.(*types.TypeName)
		if !ok || !tn.Exported() {
			continue
		}
		named, ok := tn.Type().(*types.Named)
		if !ok {
			continue
		}
		for m := range named.Methods() {
			if !satisfies(named, m, interfaces) {
				note(m)
			}
		}
		if st, ok := named.Underlying().(*types.Struct); ok {
			for i := range st.NumFields() {
				if st.Tag(i) == "" && !st.Field(i).Embedded() {
					note(st.Field(i))
				}
			}
		}
	}
	sort.Strings(unused)
	return unused, nil
}

// satisfies is true when method m of t (or *t) is part of an interface that t or *t implements.
func satisfies(t *types.Named, m *types.Func, interfaces []*types.Interface) bool {
	for _, it := range interfaces {
		if it.NumMethods() == 0 {
			continue
		}
		has := false
		for i := range it.NumMethods() {
			if it.Method(i).Name() == m.Name() {
				has = true
			}
		}
		if has && (types.Implements(t, it) || types.Implements(types.NewPointer(t), it)) {
			return true
		}
	}
	return false
}

// key names an object the same way whether it was type-checked from source or read from export
// data: "Name", or "Type.Name" for methods and fields.
func key(obj types.Object) string {
	switch o := obj.(type) {
	case *types.Func:
		if recv := o.Signature().Recv(); recv != nil {
			return typeName(recv.Type()) + "." + o.Name()
		}
	case *types.Var:
		if o.IsField() {
			return fieldOwner(o) + "." + o.Name()
		}
	}
	return obj.Name()
}

func typeName(t types.Type) string {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	if n, ok := t.(*types.Named); ok {
		return n.Obj().Name()
	}
	return t.String()
}

// fieldOwner finds the named struct type of the field's package that declares it.
func fieldOwner(f *types.Var) string {
	scope := f.Pkg().Scope()
	for _, name := range scope.Names() {
		tn, ok := scope.Lookup(name).(*types.TypeName)
		if !ok {
			continue
		}
		if st, ok := tn.Type().Underlying().(*types.Struct); ok {
			for i := range st.NumFields() {
				if st.Field(i) == f || (st.Field(i).Name() == f.Name() && st.Field(i).Pos() == f.Pos()) {
					return name
				}
			}
		}
	}
	return "?"
}

// exportImporter reads packages from the compiler's export data that go list -export built.
func exportImporter(fset *token.FileSet, exports map[string]string) types.Importer {
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
}

func list(dir string, args ...string) ([]listed, map[string]string, error) {
	full := append([]string{"list", "-export", "-deps", "-json=ImportPath,Dir,GoFiles,TestGoFiles,Export,DepOnly,Module,Error"}, args...)
	cmd := exec.Command("go", full...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("go %s: %w\n%s", strings.Join(full, " "), err, stderr.String())
	}
	exports := map[string]string{}
	var ps []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return ps, exports, nil
		} else if err != nil {
			return nil, nil, fmt.Errorf("reading go list's output: %w", err)
		}
		if p.Error != nil {
			return nil, nil, fmt.Errorf("package %s: %s", p.ImportPath, p.Error.Err)
		}
		exports[p.ImportPath] = p.Export
		ps = append(ps, p)
	}
}

func check(fset *token.FileSet, imp types.Importer, p listed) (*types.Package, *types.Info, error) {
	var files []*ast.File
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, f)
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	pkg, err := (&types.Config{Importer: imp}).Check(p.ImportPath, fset, files, info)
	if err != nil {
		return nil, nil, fmt.Errorf("type-checking %s: %w", p.ImportPath, err)
	}
	return pkg, info, nil
}
