// Command filecycles reports reference cycles between the files of Go packages: file A refers to
// file B when A uses a package-level name, method or field that B declares. A package whose files
// form no cycle can be read file by file, each after the files it uses.
//
//	go run ./tools/filecycles ./compare
//	go run ./tools/filecycles -v ./...
//
// It prints each cycle (the files of one strongly connected component, with one name per edge
// that ties them) and exits 1 when any named package has one; -v also prints every package's
// file edges. It type-checks the packages' non-test files against the compiler's export data,
// which `go list -export` builds.
package main

import (
	"flag"
	"fmt"
	"go/token"
	"go/types"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rivalbench/rival/tools/internal/gopkgs"
)

func main() {
	verbose := flag.Bool("v", false, "print every file edge, not only the cycles")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: filecycles [-v] packages...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	graphs, err := Load(".", flag.Args()...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "filecycles:", err)
		os.Exit(2)
	}
	cyclic := 0
	for _, g := range graphs {
		if *verbose {
			g.WriteEdges(os.Stdout)
		}
		if cs := g.Cycles(); len(cs) > 0 {
			cyclic++
			g.WriteCycles(os.Stdout, cs)
		}
	}
	if cyclic > 0 {
		fmt.Printf("%d of %d packages have file-level reference cycles\n", cyclic, len(graphs))
		os.Exit(1)
	}
	fmt.Printf("no file-level reference cycles in %d packages\n", len(graphs))
}

// Graph is the file-level reference graph of one package.
type Graph struct {
	ImportPath string
	Files      []string // base names, sorted
	// Edges[a][b] is one name file a uses from file b (the first in source order).
	Edges map[string]map[string]string
}

// Load builds the graph of each package that patterns name, from the module in dir.
func Load(dir string, patterns ...string) ([]*Graph, error) {
	ps, exports, err := gopkgs.ListExport(dir, append([]string{"--"}, patterns...)...)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	imp := gopkgs.Importer(fset, exports)
	var graphs []*Graph
	for _, p := range ps {
		if p.DepOnly {
			continue
		}
		if len(p.CgoFiles) > 0 {
			return nil, fmt.Errorf("package %s uses cgo, which filecycles does not read", p.ImportPath)
		}
		g, err := build(fset, imp, p)
		if err != nil {
			return nil, err
		}
		graphs = append(graphs, g)
	}
	sort.Slice(graphs, func(i, j int) bool { return graphs[i].ImportPath < graphs[j].ImportPath })
	return graphs, nil
}

func build(fset *token.FileSet, imp types.Importer, p gopkgs.Package) (*Graph, error) {
	g := &Graph{ImportPath: p.ImportPath, Edges: map[string]map[string]string{}}
	g.Files = append(g.Files, p.GoFiles...)
	sort.Strings(g.Files)
	pkg, info, err := gopkgs.Check(fset, imp, p)
	if err != nil {
		return nil, err
	}
	type use struct {
		from, to, name string
		pos            token.Pos
	}
	var uses []use
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !gopkgs.DeclaredAtFileLevel(pkg, obj) {
			continue
		}
		from := filepath.Base(fset.Position(id.Pos()).Filename)
		to := filepath.Base(fset.Position(obj.Pos()).Filename)
		if from != to {
			uses = append(uses, use{from, to, obj.Name(), id.Pos()})
		}
	}
	sort.Slice(uses, func(i, j int) bool { return uses[i].pos < uses[j].pos })
	for _, u := range uses {
		if g.Edges[u.from] == nil {
			g.Edges[u.from] = map[string]string{}
		}
		if _, ok := g.Edges[u.from][u.to]; !ok {
			g.Edges[u.from][u.to] = u.name
		}
	}
	return g, nil
}

// Cycles returns the strongly connected components of more than one file, each sorted, in the
// order of their first file (Tarjan's algorithm).
func (g *Graph) Cycles() [][]string {
	index := map[string]int{}
	low := map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var comps [][]string
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = len(index), len(index)
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range sortedKeys(g.Edges[v]) {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var comp []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			if len(comp) > 1 {
				sort.Strings(comp)
				comps = append(comps, comp)
			}
		}
	}
	for _, f := range g.Files {
		if _, seen := index[f]; !seen {
			visit(f)
		}
	}
	sort.Slice(comps, func(i, j int) bool { return comps[i][0] < comps[j][0] })
	return comps
}

// WriteCycles prints each cycle with the edges inside it and a name that makes each edge.
func (g *Graph) WriteCycles(w io.Writer, cycles [][]string) {
	for _, c := range cycles {
		fmt.Fprintf(w, "%s: cycle of %d of %d files: %s\n", g.ImportPath, len(c), len(g.Files), strings.Join(c, " "))
		in := map[string]bool{}
		for _, f := range c {
			in[f] = true
		}
		for _, from := range c {
			for _, to := range sortedKeys(g.Edges[from]) {
				if in[to] {
					fmt.Fprintf(w, "\t%s -> %s (%s)\n", from, to, g.Edges[from][to])
				}
			}
		}
	}
}

// WriteEdges prints every file edge of the package.
func (g *Graph) WriteEdges(w io.Writer) {
	fmt.Fprintf(w, "%s: %d files\n", g.ImportPath, len(g.Files))
	for _, from := range g.Files {
		for _, to := range sortedKeys(g.Edges[from]) {
			fmt.Fprintf(w, "\t%s -> %s (%s)\n", from, to, g.Edges[from][to])
		}
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
