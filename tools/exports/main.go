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
	"flag"
	"fmt"
	"go/token"
	"go/types"
	"os"
	"sort"

	"github.com/rivalbench/rival/tools/internal/gopkgs"
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

// Unused returns the exported names of the package pattern names (one package of the module in
// dir) that no other package of the module uses outside tests, as "Name", "Type.Method" or
// "Type.Field", sorted.
func Unused(dir, pattern string) ([]string, error) {
	pkgs, exports, err := gopkgs.ListExport(dir, "-tags", "mage", "./...")
	if err != nil {
		return nil, err
	}
	targets, _, err := gopkgs.ListExport(dir, "-tags", "mage", pattern)
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
	imp := gopkgs.Importer(fset, exports)
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
		pkg, info, err := gopkgs.Check(fset, imp, p)
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
