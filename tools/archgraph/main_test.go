package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rivalbench/rival/tools/internal/gopkgs/gopkgstest"
)

// A made-up module with the four kinds of command: the graph holds what they reach through
// non-test imports, nothing that only a test or an unreached package imports.
func TestLoadFollowsTheCommandsImports(t *testing.T) {
	dir := gopkgstest.Module(t)
	gopkgstest.Write(t, dir, "magefile.go", "//go:build mage\n\npackage main\n\nimport _ \"example.com/m/a\"\n\nfunc main() {}\n")
	gopkgstest.Write(t, dir, "mage.go", "//go:build ignore\n\npackage main\n\nimport _ \"example.com/m/cli\"\n\nfunc main() {}\n")
	gopkgstest.Write(t, dir, "tokenizer/cmd/tokenize/main.go", "package main\n\nimport _ \"example.com/m/b\"\n\nfunc main() {}\n")
	gopkgstest.Write(t, dir, "cmd/rival-kube/main.go", "package main\n\nimport _ \"example.com/m/k\"\n\nfunc main() {}\n")
	gopkgstest.Write(t, dir, "k/k.go", "package k\n\nimport _ \"example.com/m/b\"\n")
	gopkgstest.Write(t, dir, "a/a.go", "package a\n\nimport (\n\t_ \"example.com/m/b\"\n\t_ \"example.com/m/safefile\"\n)\n")
	gopkgstest.Write(t, dir, "a/a_test.go", "package a\n\nimport _ \"example.com/m/onlytests\"\n")
	gopkgstest.Write(t, dir, "b/b.go", "package b\n\nimport _ \"example.com/m/safefile\"\n")
	gopkgstest.Write(t, dir, "cli/cli.go", "package cli\n")
	gopkgstest.Write(t, dir, "safefile/s.go", "package safefile\n")
	gopkgstest.Write(t, dir, "onlytests/o.go", "package onlytests\n")
	gopkgstest.Write(t, dir, "unreached/u.go", "package unreached\n\nimport _ \"example.com/m/a\"\n")

	g, err := Load(dir)
	require.NoError(t, err)
	assert.Equal(t, map[string][]string{
		".":                      {"a"},
		"mage.go":                {"cli"},
		"tokenizer/cmd/tokenize": {"b"},
		"cmd/rival-kube":         {"k"},
		"k":                      {"b"},
		"a":                      {"b", "safefile"},
		"b":                      {"safefile"},
		"cli":                    {},
		"safefile":               {},
	}, g.Imports)
	assert.Equal(t, [][]string{{"cli", "safefile"}, {"b", "mage.go"}, {"a", "k", "tokenizer/cmd/tokenize"}, {"cmd/rival-kube", "."}}, g.Layers())
	section := g.Section()
	assert.Contains(t, section, "  a[a] --> b\n", "the arrow to safefile is left out")
	assert.Contains(t, section, "  magefile[magefile.go] --> a\n")
	assert.Contains(t, section, "```\ncmd/rival-kube   magefile.go\na   k   tokenizer/cmd/tokenize\nb   mage.go\ncli   safefile\n```")
}

func TestRewriteReplacesOnlyTheSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "doc.md")
	require.NoError(t, os.WriteFile(path, []byte("# Title\n\n"+Begin+"\nold\n"+End+"\n\nafter\n"), 0o644))
	require.NoError(t, Rewrite(path, Begin+"\nnew\n"+End+"\n"))
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "# Title\n\n"+Begin+"\nnew\n"+End+"\n\nafter\n", string(raw))

	require.NoError(t, os.WriteFile(path, []byte("no markers\n"), 0o644))
	err = Rewrite(path, "x")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "doc.md: no line")
}

// moduleGraph loads the project's own graph once per test.
func moduleGraph(t *testing.T) *Graph {
	t.Helper()
	if testing.Short() {
		t.Skip("lists every package of the module; run without -short")
	}
	g, err := Load("../..")
	require.NoError(t, err)
	return g
}

func TestArchitectureDocIsCurrent(t *testing.T) {
	g := moduleGraph(t)
	raw, err := os.ReadFile("../../docs/architecture.md")
	require.NoError(t, err)
	doc := string(raw)
	_, rest, ok := strings.Cut(doc, Begin)
	require.True(t, ok, "docs/architecture.md has no generated section")
	section, _, ok := strings.Cut(rest, End)
	require.True(t, ok, "docs/architecture.md's generated section has no end")
	assert.Equal(t, g.Section(), Begin+section+End+"\n", "docs/architecture.md's package graph is stale: run go run ./tools/archgraph -w docs/architecture.md")

	// Every package of the graph has a row in the packages table.
	table := doc[strings.Index(doc, "## The packages"):strings.Index(doc, "## The arrows")]
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| ([^|]+)\\|").FindAllStringSubmatch(table, -1) {
		for _, n := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(m[1], -1) {
			named[n[1]] = true
			named["frameworks/"+n[1]] = true // `frameworks/mega`, `prim`, ... share a row
		}
	}
	for _, p := range g.Packages() {
		assert.True(t, named[g.Names[p]], "%s has no row in docs/architecture.md's packages table", g.Names[p])
	}
}

// The one-way rules docs/architecture.md states under the graph.
func TestOneWayRules(t *testing.T) {
	g := moduleGraph(t)
	without := func(p string) []string {
		return slices.DeleteFunc(slices.Clone(g.Imports[p]), func(q string) bool { return q == quiet })
	}
	for p, want := range map[string][]string{
		"cache": {}, "container": {"container/dockerapi"}, "container/dockerapi": {}, "hw": {}, "models": {}, "tokenizer": {}, "indexed": {}, "jsonl": {}, "english": {},
		"safefile":            {},
		"dag":                 {"cache"},
		"store":               {"cache"},
		"gptorder":            {"indexed"},
		"encode":              {"indexed", "jsonl"},
		"frameworks/core":     {"hw", "models"},
		"frameworks/logparse": {"frameworks/core"},
		"slurm":               {"frameworks/core", "hw"},
	} {
		require.Contains(t, g.Imports, p)
		assert.Equal(t, want, without(p), "%s imports more of the project than docs/architecture.md says", p)
	}
	assert.Empty(t, g.Imports["safefile"], "safefile imports nothing of the project")
	for p, imps := range g.Imports {
		if slices.Contains(imps, "tasks") {
			assert.Equal(t, ".", p, "only magefile.go imports tasks")
		}
		if strings.HasPrefix(p, "frameworks/") {
			assert.NotContains(t, imps, "frameworks", "%s imports the registry", p)
		}
	}
}
