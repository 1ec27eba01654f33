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

type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	Export     string
	Standard   bool
	DepOnly    bool
	Error      *struct{ Err string }
}

// Load builds the graph of each package that patterns name, from the module in dir.
func Load(dir string, patterns ...string) ([]*Graph, error) {
	args := append([]string{"list", "-export", "-deps", "-json=ImportPath,Dir,GoFiles,CgoFiles,Export,Standard,DepOnly,Error", "--"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	exports := map[string]string{}
	var targets []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("reading go list's output: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("package %s: %s", p.ImportPath, p.Error.Err)
		}
		exports[p.ImportPath] = p.Export
		if !p.DepOnly {
			targets = append(targets, p)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s (is it in the module's build list?)", path)
		}
		return os.Open(f)
	})
	var graphs []*Graph
	for _, p := range targets {
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

func build(fset *token.FileSet, imp types.Importer, p listed) (*Graph, error) {
	g := &Graph{ImportPath: p.ImportPath, Edges: map[string]map[string]string{}}
	var files []*ast.File
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		g.Files = append(g.Files, name)
	}
	sort.Strings(g.Files)
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: imp}
	pkg, err := conf.Check(p.ImportPath, fset, files, info)
	if err != nil {
		return nil, fmt.Errorf("type-checking %s: %w", p.ImportPath, err)
	}
	type use struct {
		from, to, name string
		pos            token.Pos
	}
	var uses []use
	for id, obj := range info.Uses {
		if obj.Pkg() != pkg || !declaredAtFileLevel(pkg, obj) {
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

// declaredAtFileLevel is true for package-level names and for the methods and struct fields of
// any type: what one file declares for others to use.
func declaredAtFileLevel(pkg *types.Package, obj types.Object) bool {
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
