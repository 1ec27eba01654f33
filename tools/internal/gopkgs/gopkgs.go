// Package gopkgs is what the developer commands under tools share to read Go packages: `go list`
// run and decoded, the compiler's export data as an importer, and a package's non-test files
// parsed and type-checked against it. Reading export data that `go list -export` built, rather
// than type-checking every dependency from source, keeps a run over the whole module to seconds.
package gopkgs

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

// Package is one package as `go list -json` describes it, in the fields the tools read.
type Package struct {
	ImportPath  string
	Dir         string
	GoFiles     []string
	CgoFiles    []string
	TestGoFiles []string
	Imports     []string
	Export      string // the export data file; set only by ListExport
	DepOnly     bool   // listed only as a dependency of the named packages
	Error       *struct{ Err string }
}

// fields are the fields of Package that go list is asked for.
const fields = "-json=ImportPath,Dir,GoFiles,CgoFiles,TestGoFiles,Imports,Export,DepOnly,Error"

// Go runs the go command in dir and returns what it printed; its error holds what go printed on
// standard error.
func Go(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// List runs `go list -deps` with args (flags, then patterns) in dir and returns every package it
// printed, each named package after its dependencies. A package go list reports an error for is
// an error.
func List(dir string, args ...string) ([]Package, error) {
	return list(dir, append([]string{"list", "-deps", fields}, args...))
}

// ListExport is List with -export: go builds each package's export data, and exports maps every
// listed import path to its file, for Importer.
func ListExport(dir string, args ...string) (ps []Package, exports map[string]string, err error) {
	ps, err = list(dir, append([]string{"list", "-export", "-deps", fields}, args...))
	if err != nil {
		return nil, nil, err
	}
	exports = map[string]string{}
	for _, p := range ps {
		exports[p.ImportPath] = p.Export
	}
	return ps, exports, nil
}

func list(dir string, args []string) ([]Package, error) {
	out, err := Go(dir, args...)
	if err != nil {
		return nil, err
	}
	var ps []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p Package
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return ps, nil
		} else if err != nil {
			return nil, fmt.Errorf("reading go list's output: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("package %s: %s", p.ImportPath, p.Error.Err)
		}
		ps = append(ps, p)
	}
}

// Importer reads packages from the export data files that ListExport returned.
func Importer(fset *token.FileSet, exports map[string]string) types.Importer {
	return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s (is it in the module's build list?)", path)
		}
		return os.Open(f)
	})
}

// Check parses p's non-test files into fset and type-checks them with imp, recording in the
// returned Info what each identifier uses.
func Check(fset *token.FileSet, imp types.Importer, p Package) (*types.Package, *types.Info, error) {
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

// DeclaredAtFileLevel is true for package-level names and for the methods and struct fields of
// any type: what one file declares for others to use.
func DeclaredAtFileLevel(pkg *types.Package, obj types.Object) bool {
	if obj.Parent() == pkg.Scope() {
		return true
	}
	switch o := obj.(type) {
	case *types.Func:
		return o.Signature().Recv() != nil
	case *types.Var:
		return o.IsField()
	}
	return false
}
