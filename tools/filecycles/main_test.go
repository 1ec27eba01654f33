package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/tools/internal/gopkgs/gopkgstest"
)

// Every package of the module must have no file-level cycle.
func TestModulePackagesHaveNoFileCycles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the export data of every package; run without -short")
	}
	graphs, err := Load("../..", "./...")
	require.NoError(t, err)
	require.NotEmpty(t, graphs)
	for _, g := range graphs {
		if cs := g.Cycles(); len(cs) > 0 {
			var b bytes.Buffer
			g.WriteCycles(&b, cs)
			t.Errorf("file-level reference cycle (move the names that tie the files into the file below them):\n%s", b.String())
		}
	}
}

// A made-up module: a.go and b.go use each other (through a method and a field), c.go uses a.go
// only.
func TestCyclesFindsMethodAndFieldUses(t *testing.T) {
	dir := gopkgstest.Module(t)
	gopkgstest.Write(t, dir, "a.go", "package m\n\ntype T struct{ N int }\n\nfunc (t T) Twice() int { return double(t.N) }\n")
	gopkgstest.Write(t, dir, "b.go", "package m\n\nimport \"strings\"\n\nfunc double(n int) int { return 2 * n }\n\nfunc use(t T) string { return strings.Repeat(\"x\", t.N) }\n")
	gopkgstest.Write(t, dir, "c.go", "package m\n\nfunc four() int { return T{N: 2}.Twice() }\n")
	gopkgstest.Write(t, dir, "a_test.go", "package m\n\nfunc helper() int { return four() }\n")
	graphs, err := Load(dir, "./...")
	require.NoError(t, err)
	require.Len(t, graphs, 1)
	g := graphs[0]
	assert.Equal(t, []string{"a.go", "b.go", "c.go"}, g.Files, "test files are not read")
	assert.Equal(t, map[string]map[string]string{
		"a.go": {"b.go": "double"},
		"b.go": {"a.go": "T"},
		"c.go": {"a.go": "T"},
	}, g.Edges)
	assert.Equal(t, [][]string{{"a.go", "b.go"}}, g.Cycles())

	// Without b.go's use of T the files form no cycle.
	gopkgstest.Write(t, dir, "b.go", "package m\n\nfunc double(n int) int { return 2 * n }\n")
	graphs, err = Load(dir, "./...")
	require.NoError(t, err)
	assert.Empty(t, graphs[0].Cycles())
}

func TestLoadReportsBrokenPackages(t *testing.T) {
	dir := gopkgstest.Module(t)
	gopkgstest.Write(t, dir, "a.go", "package m\n\nfunc f() int { return g() }\n")
	_, err := Load(dir, "./...")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "undefined: g")
}
