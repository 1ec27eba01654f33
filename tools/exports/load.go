package main

import (
	"bytes"
	"encoding/json"
	"errors"
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
	"strings"
)

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
