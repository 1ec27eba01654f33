package gopkgs_test

import (
	"go/token"
	"go/types"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/tools/internal/gopkgs"
	"github.com/rivalbench/rival/tools/internal/gopkgs/gopkgstest"
)

// A made-up module: package a imports b and the standard library's strings; b has a test file.
func module(t *testing.T) string {
	dir := gopkgstest.Module(t)
	gopkgstest.Write(t, dir, "a/a.go", "package a\n\nimport (\n\t\"strings\"\n\n\t\"example.com/m/b\"\n)\n\n"+
		"type T struct{ N int }\n\nfunc (t T) Twice() int { return b.Double(t.N) }\n\n"+
		"func F() string { x := T{N: 1}; return strings.Repeat(\"y\", x.Twice()) }\n")
	gopkgstest.Write(t, dir, "b/b.go", "package b\n\n// Double is used by a.\nfunc Double(n int) int { return 2 * n }\n")
	gopkgstest.Write(t, dir, "b/b_test.go", "package b\n")
	return dir
}

func TestListNamesPackagesAfterTheirDependencies(t *testing.T) {
	dir := module(t)
	ps, err := gopkgs.List(dir, "./a")
	require.NoError(t, err)
	require.NotEmpty(t, ps)
	last := ps[len(ps)-1]
	assert.Equal(t, "example.com/m/a", last.ImportPath, "-deps lists the named package last")
	assert.False(t, last.DepOnly)
	assert.Equal(t, []string{"a.go"}, last.GoFiles)
	assert.Equal(t, []string{"example.com/m/b", "strings"}, last.Imports)
	assert.Empty(t, last.Export, "export data only with ListExport")
	byPath := map[string]gopkgs.Package{}
	for _, p := range ps {
		byPath[p.ImportPath] = p
	}
	require.Contains(t, byPath, "example.com/m/b")
	assert.True(t, byPath["example.com/m/b"].DepOnly)
	assert.Equal(t, []string{"b_test.go"}, byPath["example.com/m/b"].TestGoFiles)
}

func TestCheckAgainstExportData(t *testing.T) {
	dir := module(t)
	ps, exports, err := gopkgs.ListExport(dir, "./...")
	require.NoError(t, err)
	require.Contains(t, exports, "strings")
	assert.NotEmpty(t, exports["strings"])
	fset := token.NewFileSet()
	imp := gopkgs.Importer(fset, exports)
	var a gopkgs.Package
	for _, p := range ps {
		if p.ImportPath == "example.com/m/a" {
			a = p
		}
	}
	require.Equal(t, "example.com/m/a", a.ImportPath)
	pkg, info, err := gopkgs.Check(fset, imp, a)
	require.NoError(t, err)
	assert.Equal(t, "a", pkg.Name())
	used := map[string]bool{}
	for _, obj := range info.Uses {
		if obj.Pkg() != nil {
			used[obj.Pkg().Path()+"."+obj.Name()] = true
		}
	}
	assert.True(t, used["example.com/m/b.Double"], "b's Double comes from its export data")
	assert.True(t, used["strings.Repeat"])

	_, err = imp.Import("example.com/elsewhere")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no export data for example.com/elsewhere")
}

func TestListReportsBrokenPackages(t *testing.T) {
	dir := gopkgstest.Module(t)
	gopkgstest.Write(t, dir, "a.go", "package m\n\nimport \"example.com/m/missing\"\n\nvar _ = missing.X\n")
	_, err := gopkgs.List(dir, "./...")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "package example.com/m")

	// A type error: go list alone does not see it, the type checker does; with -export go reports it.
	gopkgstest.Write(t, dir, "a.go", "package m\n\nfunc f() int { return g() }\n")
	ps, err := gopkgs.List(dir, "./...")
	require.NoError(t, err)
	fset := token.NewFileSet()
	_, _, err = gopkgs.Check(fset, gopkgs.Importer(fset, nil), ps[len(ps)-1])
	require.Error(t, err)
	assert.Contains(t, err.Error(), "type-checking example.com/m")
	assert.Contains(t, err.Error(), "undefined: g")
	_, _, err = gopkgs.ListExport(dir, "./...")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "undefined: g")

	_, err = gopkgs.Go(dir, "no-such-command")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "go no-such-command")
}

func TestDeclaredAtFileLevel(t *testing.T) {
	pkg := types.NewPackage("example.com/m", "m")
	field := types.NewField(token.NoPos, pkg, "N", types.Typ[types.Int], false)
	named := types.NewNamed(types.NewTypeName(token.NoPos, pkg, "T", nil), types.NewStruct([]*types.Var{field}, nil), nil)
	pkg.Scope().Insert(named.Obj())
	recv := types.NewVar(token.NoPos, pkg, "t", named)
	method := types.NewFunc(token.NoPos, pkg, "M", types.NewSignatureType(recv, nil, nil, nil, nil, false))
	local := types.NewVar(token.NoPos, pkg, "x", types.Typ[types.Int])
	for _, tc := range []struct {
		obj  types.Object
		want bool
	}{
		{named.Obj(), true},
		{field, true},
		{method, true},
		{local, false},
	} {
		assert.Equal(t, tc.want, gopkgs.DeclaredAtFileLevel(pkg, tc.obj), tc.obj.Name())
	}
}
