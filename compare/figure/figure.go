// Package figure describes compare's figures as data: the canvas, its title lines, how panels
// are tiled, and each panel as the steps that draw it, in order. Package compare builds a Figure
// from a report; the rival-plot program (package compare/figure/render) draws it with gonum/plot
// into a PNG and an SVG. The plotting library and its fonts are thus compiled into that program
// only, not into every target.
//
// A Figure travels as JSON. Lengths are in points (1/72 inch).
package figure

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"strings"

	"github.com/rivalbench/rival/internal/goprog"
)

// Figure is one image: Texts drawn on the whole canvas, then Panels tiled below CropTop.
type Figure struct {
	Width, Height float64 // the canvas, in points
	DPI           float64 // the PNG's resolution
	Texts         []Text
	CropTop       float64 // the band at the top, above the panels, left to Texts
	Tiles         Tiles
	Panels        []Panel
}

// Text is one line centred across the canvas, its top FromTop below the canvas's top.
type Text struct {
	FromTop, Size float64
	Text          string
}

// Tiles places panel i at column i%Cols, row i/Cols (gonum's draw.Tiles).
type Tiles struct {
	Rows, Cols                                       int
	PadX, PadY, PadTop, PadBottom, PadLeft, PadRight float64
}

// Panel is one plot: its steps are applied in order to a new plot, as adding a plotter widens
// the axes to its data and a later step may set them.
type Panel struct {
	Steps []Step
}

// Kinds of Step.
const (
	Title    = "title"    // Text, Size
	XLabel   = "xlabel"   // Text, Size
	YLabel   = "ylabel"   // Text, Size
	XTicks   = "xticks"   // Size; Ticks: "plain" (no trailing zeros, thousands separators) or Const
	YTicks   = "yticks"   // Size; Ticks
	Grid     = "grid"     // grid lines
	XMin     = "xmin"     // Value
	XMax     = "xmax"     // Value
	YMin     = "ymin"     // Value
	YMax     = "ymax"     // Value
	NominalY = "nominaly" // Labels, bottom row first (gonum's NominalY)
	HideY    = "hidey"    // the y axis is not drawn
	HideAxes = "hideaxes" // neither axis is drawn
	Legend   = "legend"   // Size; Top: the legend's place
	Bar      = "bar"      // horizontal bar of length Value in row At: Width, Offset, Colour
	XErrors  = "xerrors"  // Points with Lo and Hi as horizontal whiskers: Width (line), Cap
	YErrors  = "yerrors"  // Points with Lo and Hi as vertical whiskers: Width (line), Cap
	Labels   = "labels"   // Texts at Points: Size, XAlign, YAlign, Colour
	Box      = "box"      // horizontal box plot of Samples in row At: Width, Fill, Radius (outliers)
	Line     = "line"     // Points joined: Colour, Width, Dashes; Legend names it there
	Scatter  = "scatter"  // Points as glyphs: Glyph ("" circle, "box", "diamond"), Radius, Colour
)

// Step is one step of a panel; Kind says which fields it reads (see the kinds above). A zero
// Size, Width or Radius, and a nil Colour or alignment, keep gonum's default.
type Step struct {
	Kind   string
	Text   string   `json:",omitempty"`
	Size   float64  `json:",omitempty"`
	Value  float64  `json:",omitempty"`
	Ticks  string   `json:",omitempty"`
	Const  []Tick   // nil: ticks as Ticks says; empty: none
	Labels []string `json:",omitempty"`
	Top    bool     `json:",omitempty"`

	At, Width, Offset, Cap, Radius float64   `json:",omitempty"`
	Colour, Fill                   *RGBA     `json:",omitempty"`
	Points                         []XY      `json:",omitempty"`
	Lo, Hi, Samples, Dashes        []float64 `json:",omitempty"`
	Texts                          []string  `json:",omitempty"`
	XAlign, YAlign                 *float64  `json:",omitempty"`
	Glyph, LegendText              string    `json:",omitempty"`
}

// Tick is a labelled position on an axis.
type Tick struct {
	Value float64
	Label string
}

// XY is a point in data coordinates.
type XY struct{ X, Y float64 }

// RGBA is an opaque or translucent colour.
type RGBA struct{ R, G, B, A uint8 }

// Align is an alignment value (gonum's: -0.5 centres, 0 starts, -1 ends), for XAlign and YAlign.
func Align(v float64) *float64 { return &v }

// Check says which step of which panel holds a value JSON cannot carry (NaN, ±Inf), so a figure
// that cannot travel is refused with a name instead of a codec's message.
func (f *Figure) Check() error {
	top := []float64{f.Width, f.Height, f.DPI, f.CropTop, f.Tiles.PadX, f.Tiles.PadY, f.Tiles.PadTop, f.Tiles.PadBottom, f.Tiles.PadLeft, f.Tiles.PadRight}
	for _, t := range f.Texts {
		top = append(top, t.FromTop, t.Size)
	}
	for _, v := range top {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("figure: a size or place of the canvas is %v", v)
		}
	}
	for i, p := range f.Panels {
		for j, s := range p.Steps {
			vals := []float64{s.Size, s.Value, s.At, s.Width, s.Offset, s.Cap, s.Radius}
			vals = append(vals, s.Lo...)
			vals = append(vals, s.Hi...)
			vals = append(vals, s.Samples...)
			vals = append(vals, s.Dashes...)
			for _, p := range s.Points {
				vals = append(vals, p.X, p.Y)
			}
			for _, t := range s.Const {
				vals = append(vals, t.Value)
			}
			for _, a := range []*float64{s.XAlign, s.YAlign} {
				if a != nil {
					vals = append(vals, *a)
				}
			}
			for _, v := range vals {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return fmt.Errorf("figure: panel %d, step %d (%s): a value is %v", i+1, j+1, s.Kind, v)
				}
			}
		}
	}
	return nil
}

// Num writes x with prec decimals and thousands separators ("20,000.5"); NaN and ±Inf are a
// dash. Tick labels and the figures' value labels use it, as the report's tables do.
func Num(x float64, prec int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "—"
	}
	s := fmt.Sprintf("%.*f", prec, x)
	intPart, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	var b strings.Builder
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	out := b.String()
	if neg {
		out = "-" + out
	}
	if frac != "" {
		out += "." + frac
	}
	return out
}

// Program is rival-plot, the program that draws figures, so that gonum/plot with its fonts and
// image codecs is compiled for the two targets that draw and no other. Its first build, with the
// targets' packages already cached, took 9 CPU seconds (5 s) on the 2-core reference machine
// (docs/measurements.md).
var Program = goprog.Program{
	Package: "github.com/rivalbench/rival/cmd/rival-plot", Name: "rival-plot",
	Topic: "compare", What: "the figure drawer", Holds: "gonum/plot", FirstBuild: "5 seconds",
}

// Draw has rival-plot, built by h on first use, write f as a PNG at pngPath and an SVG at
// svgPath (an empty path skips that format), each whole or not at all.
func Draw(ctx context.Context, h *goprog.Helper, f *Figure, pngPath, svgPath string) error {
	if h == nil {
		return errors.New("figure: no program to draw with was given")
	}
	if err := f.Check(); err != nil {
		return err
	}
	in, err := json.Marshal(f)
	if err != nil {
		return fmt.Errorf("figure: %w", err)
	}
	var args []string
	if pngPath != "" {
		args = append(args, "-png", pngPath)
	}
	if svgPath != "" {
		args = append(args, "-svg", svgPath)
	}
	if len(args) == 0 {
		return nil
	}
	bin, err := h.Build(ctx)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return h.ErrorOf(ctx, err, stderr.String())
	}
	return nil
}
