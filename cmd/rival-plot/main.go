// Command rival-plot draws compare's figures. It is a program of its own so that the targets
// (`go run mage.go ...`) compile without gonum/plot, its fonts and its image codecs; `compare`
// and `compare:history` build it on first use (package compare/figure, Draw).
//
//	rival-plot [-png PATH] [-svg PATH] < figure.json
//
// figure.json is a figure.Figure. Each path given receives the figure, written whole or not at
// all; when the figure cannot be drawn it says why on standard error and exits 1.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/rivalbench/rival/compare/figure"
	"github.com/rivalbench/rival/compare/figure/render"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stderr))
}

func run(args []string, stdin io.Reader, stderr io.Writer) int {
	fs := flag.NewFlagSet("rival-plot", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pngPath := fs.String("png", "", "write the figure as a PNG here")
	svgPath := fs.String("svg", "", "write the figure as an SVG here")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 0 || *pngPath == "" && *svgPath == "" {
		fmt.Fprintln(stderr, "usage: rival-plot [-png PATH] [-svg PATH] < figure.json")
		return 2
	}
	var f figure.Figure
	dec := json.NewDecoder(stdin)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		fmt.Fprintf(stderr, "rival-plot: reading the figure: %v\n", err)
		return 1
	}
	if err := render.Write(&f, *pngPath, *svgPath); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}
