package compare

import (
	"github.com/rivalbench/rival/compare/figure/render"
)

// writePlots draws the comparison figure as the rival-plot program does.
func (r *Report) writePlots(pngPath, svgPath string) error {
	f, err := r.Figure()
	if err != nil {
		return err
	}
	return render.Write(f, pngPath, svgPath)
}

// writeHistoryPlots draws the trend figure as the rival-plot program does.
func (r *Report) writeHistoryPlots(pngPath, svgPath string) error {
	f, err := r.HistoryFigure()
	if err != nil {
		return err
	}
	return render.Write(f, pngPath, svgPath)
}
