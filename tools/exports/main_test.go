package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/tools/internal/gopkgs/gopkgstest"
)

// A made-up module: lib exports what main uses, what only lib's own test uses, what nobody uses,
// a method that satisfies fmt.Stringer, and a tagged field.
func module(t *testing.T) string {
	dir := gopkgstest.Module(t)
	gopkgstest.Write(t, dir, "main.go", "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/m/lib\"\n)\n\nfunc main() {\n\tfmt.Println(lib.Used(), lib.T{}.Shown)\n}\n")
	gopkgstest.Write(t, dir, "lib/lib.go", `package lib

// Used is used by main.
func Used() int { return OnlyTests() + 1 }

// OnlyTests is used by lib's test and by Used.
func OnlyTests() int { return 1 }

// Nobody is used by nobody.
func Nobody(onlyTests int) int { return onlyTests }

// T is used by main.
type T struct {
	Shown  int
	Hidden int
	Tagged int `+"`json:\"tagged\"`"+`
}

// String satisfies fmt.Stringer.
func (T) String() string { return "t" }

// Kind is a type only tests use.
type Kind int

// Helper is a method nobody calls.
func (T) Helper() int { return 2 }
`)
	gopkgstest.Write(t, dir, "lib/lib_test.go", "package lib\n\nimport \"testing\"\n\n// wrap embeds Kind, which only tests use: its field follows the type's new name.\ntype wrap struct{ Kind }\n\nfunc TestOnly(t *testing.T) {\n\tw := wrap{Kind: 1}\n\tif OnlyTests() != 1 || Nobody(2) != 2 || (T{}).Helper() != 2 || w.Kind != 1 {\n\t\tt.Fail()\n\t}\n}\n")
	return dir
}

func TestUnusedFindsNamesForTestsOrNobody(t *testing.T) {
	dir := module(t)
	unused, err := Unused(dir, "./lib")
	require.NoError(t, err)
	assert.Equal(t, []string{"Kind", "Nobody", "OnlyTests", "T.Helper", "T.Hidden"}, unused)
}

func TestUnexportRenamesThroughTheTests(t *testing.T) {
	dir := module(t)
	unused, err := Unused(dir, "./lib")
	require.NoError(t, err)
	skipped, err := Unexport(dir, "./lib", unused)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"OnlyTests: onlyTests is already declared in the package",
		"T.Hidden: a struct field (decide by hand)",
	}, skipped, "a new name must not be shadowed by a parameter; fields are left to a person")
	src, err := os.ReadFile(filepath.Join(dir, "lib", "lib.go"))
	require.NoError(t, err)
	assert.Contains(t, string(src), "// helper is a method nobody calls.\nfunc (T) helper() int")
	assert.Contains(t, string(src), "// nobody is used by nobody.\nfunc nobody(onlyTests int) int")
	test, err := os.ReadFile(filepath.Join(dir, "lib", "lib_test.go"))
	require.NoError(t, err)
	assert.Contains(t, string(test), "(T{}).helper() != 2")
	assert.Contains(t, string(test), "nobody(2) != 2")
	assert.Contains(t, string(test), "type wrap struct{ kind }")
	assert.Contains(t, string(test), "w := wrap{kind: 1}")
	assert.Contains(t, string(test), "w.kind != 1")
	cmd := exec.Command("go", "test", "./...")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
}

func TestLower(t *testing.T) {
	for in, want := range map[string]string{
		"TokenizerSpec": "tokenizerSpec", "EOD": "eod", "NNodes": "nNodes", "URLPath": "urlPath", "X": "x", "TP": "tp",
	} {
		assert.Equal(t, want, lower(in), in)
	}
}
