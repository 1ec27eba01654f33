package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/rivalbench/rival/tools/internal/gopkgs"
)

// Unexport renames the package-level names, methods and types that names lists (in Unused's
// spelling) to their unexported spelling throughout the package in dir (its test files included)
// and returns the names it left alone with the reason. Struct fields are never renamed: a field
// without a tag may still be written by encoding/json, so those are for a person to decide.
func Unexport(dir, pattern string, names []string) (skipped []string, err error) {
	ps, exports, err := gopkgs.ListExport(dir, "-tags", "mage", "-test", pattern)
	if err != nil {
		return nil, err
	}
	targets, _, err := gopkgs.ListExport(dir, "-tags", "mage", pattern)
	if err != nil {
		return nil, err
	}
	target := targets[len(targets)-1].ImportPath // -deps lists the named package last
	var p *gopkgs.Package
	for i := range ps {
		// With -test, the package compiled with its in-package tests is "path [path.test]".
		if ps[i].ImportPath == target+" ["+target+".test]" || (p == nil && ps[i].ImportPath == target) {
			p = &ps[i]
		}
	}
	if p == nil {
		return nil, fmt.Errorf("%s: not listed", pattern)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	seen := map[string]bool{}
	for _, name := range append(append([]string{}, p.GoFiles...), p.TestGoFiles...) {
		if seen[name] { // the test variant lists its test files among its GoFiles
			continue
		}
		seen[name] = true
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	imp := gopkgs.Importer(fset, exports)
	info := &types.Info{Defs: map[*ast.Ident]types.Object{}, Uses: map[*ast.Ident]types.Object{}}
	pkg, err := (&types.Config{Importer: imp}).Check(target, fset, files, info)
	if err != nil {
		return nil, fmt.Errorf("type-checking %s with its tests: %w", p.ImportPath, err)
	}
	// Every name declared anywhere in the package, and every file's imported package names: a
	// new package-level name must shadow none of them, nor a predeclared one.
	declared := map[string]bool{}
	for id := range info.Defs {
		declared[id.Name] = true
	}
	for _, f := range files {
		for _, is := range f.Imports {
			if is.Name != nil {
				declared[is.Name.Name] = true
			} else if o, ok := info.Implicits[is]; ok {
				declared[o.Name()] = true
			}
		}
	}
	for _, n := range types.Universe.Names() {
		declared[n] = true
	}
	for _, f := range files {
		for _, is := range f.Imports {
			path := strings.Trim(is.Path.Value, `"`)
			declared[path[strings.LastIndex(path, "/")+1:]] = true
		}
	}
	byKey := map[string]types.Object{}
	for _, obj := range info.Defs {
		if obj != nil && obj.Pkg() == pkg && gopkgs.DeclaredAtFileLevel(pkg, obj) {
			byKey[key(obj)] = obj
		}
	}
	rename := map[types.Object]string{}
	for _, n := range names {
		obj, ok := byKey[n]
		switch {
		case !ok:
			skipped = append(skipped, n+": not found")
			continue
		case isField(obj):
			skipped = append(skipped, n+": a struct field (decide by hand)")
			continue
		}
		to := lower(obj.Name())
		if m, ok := obj.(*types.Func); ok && m.Signature().Recv() != nil {
			if o, _, _ := types.LookupFieldOrMethod(m.Signature().Recv().Type(), true, pkg, to); o != nil {
				skipped = append(skipped, fmt.Sprintf("%s: %s already names a field or method", n, to))
				continue
			}
		} else if declared[to] || pkg.Scope().Lookup(to) != nil {
			skipped = append(skipped, fmt.Sprintf("%s: %s is already declared in the package", n, to))
			continue
		}
		declared[to] = true
		rename[obj] = to
	}
	type edit struct {
		off  int
		old  string
		with string
	}
	edits := map[string][]edit{}
	add := func(id *ast.Ident, obj types.Object) {
		to, ok := rename[obj]
		if v, isVar := obj.(*types.Var); !ok && isVar && v.Embedded() {
			// An embedded field is named for its type: x.T and T{T: ...} follow T's new name.
			t := v.Type()
			if p, isPtr := t.(*types.Pointer); isPtr {
				t = p.Elem()
			}
			if n, isNamed := t.(*types.Named); isNamed {
				to, ok = rename[n.Obj()]
			}
		}
		if !ok {
			return
		}
		pos := fset.Position(id.Pos())
		edits[pos.Filename] = append(edits[pos.Filename], edit{pos.Offset, id.Name, to})
	}
	for id, obj := range info.Defs {
		add(id, obj)
	}
	for id, obj := range info.Uses {
		add(id, obj)
	}
	// A declaration's doc comment starts with its name.
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			var doc *ast.CommentGroup
			var id *ast.Ident
			switch d := n.(type) {
			case *ast.FuncDecl:
				doc, id = d.Doc, d.Name
			case *ast.TypeSpec:
				doc, id = d.Doc, d.Name
			case *ast.GenDecl:
				if len(d.Specs) == 1 {
					if ts, ok := d.Specs[0].(*ast.TypeSpec); ok {
						doc, id = d.Doc, ts.Name
					}
					if vs, ok := d.Specs[0].(*ast.ValueSpec); ok && len(vs.Names) == 1 {
						doc, id = d.Doc, vs.Names[0]
					}
				}
			case *ast.ValueSpec:
				if len(d.Names) == 1 {
					doc, id = d.Doc, d.Names[0]
				}
			}
			if doc == nil || id == nil {
				return true
			}
			to, ok := rename[info.Defs[id]]
			if !ok {
				return true
			}
			c := doc.List[0]
			if strings.HasPrefix(c.Text, "// "+id.Name+" ") {
				pos := fset.Position(c.Pos())
				edits[pos.Filename] = append(edits[pos.Filename], edit{pos.Offset + 3, id.Name, to})
			}
			return true
		})
	}
	for name, es := range edits {
		raw, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		sort.Slice(es, func(i, j int) bool { return es[i].off > es[j].off })
		last := -1
		for _, e := range es {
			if e.off == last {
				continue
			}
			last = e.off
			if string(raw[e.off:e.off+len(e.old)]) != e.old {
				return nil, fmt.Errorf("%s:%d: expected %s", name, e.off, e.old)
			}
			raw = append(raw[:e.off], append([]byte(e.with), raw[e.off+len(e.old):]...)...)
		}
		if err := os.WriteFile(name, raw, 0o644); err != nil {
			return nil, err
		}
	}
	sort.Strings(skipped)
	return skipped, nil
}

func isField(obj types.Object) bool {
	v, ok := obj.(*types.Var)
	return ok && v.IsField()
}

// lower unexports a Go name: its leading capitals in lower case, all but the last when a lower-case
// letter follows them (TokenizerSpec -> tokenizerSpec, EOD -> eod, NNodes -> nNodes).
func lower(name string) string {
	rs := []rune(name)
	n := 0
	for n < len(rs) && unicode.IsUpper(rs[n]) {
		n++
	}
	if n > 1 && n < len(rs) && unicode.IsLower(rs[n]) {
		n--
	}
	for i := range n {
		rs[i] = unicode.ToLower(rs[i])
	}
	if _, size := utf8.DecodeRuneInString(string(rs)); size == 0 {
		return name
	}
	return string(rs)
}
