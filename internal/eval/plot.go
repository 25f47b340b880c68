package eval

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	// Register the png and svg canvas formats with draw.NewFormattedCanvas.
	_ "gonum.org/v1/plot/vg/vgimg"
	_ "gonum.org/v1/plot/vg/vgsvg"
)

// PlotSweep draws a sweep as two panels side by side, like Figures 10 and 11
// of Pham et al. 2017: accuracy (mean with ±1 std bars over folds) and total
// training time against the swept fraction. format is "png" or "svg".
func PlotSweep(w io.Writer, format string, sr *SweepReport) error {
	format = strings.ToLower(strings.TrimPrefix(format, "."))
	if format != "png" && format != "svg" {
		return fmt.Errorf("plot format %q not supported (want png or svg)", format)
	}
	if len(sr.Points) == 0 {
		return fmt.Errorf("plot: sweep has no points")
	}
	pts := slices.Clone(sr.Points)
	slices.SortFunc(pts, func(a, b SweepPoint) int {
		switch {
		case a.Value < b.Value:
			return -1
		case a.Value > b.Value:
			return 1
		}
		return 0
	})
	acc := make(plotter.XYs, len(pts))
	errs := make(plotter.YErrors, len(pts))
	secs := make(plotter.XYs, len(pts))
	cpu := make(plotter.XYs, 0, len(pts))
	for i, p := range pts {
		acc[i] = plotter.XY{X: p.Value, Y: p.Accuracy.Mean}
		errs[i] = struct{ Low, High float64 }{p.Accuracy.Std, p.Accuracy.Std}
		secs[i] = plotter.XY{X: p.Value, Y: p.TrainSeconds}
		if p.TrainCPUSeconds > 0 {
			cpu = append(cpu, plotter.XY{X: p.Value, Y: p.TrainCPUSeconds})
		}
	}
	title := fmt.Sprintf("%s on %s", sr.Model, sr.Dataset)
	xlabel := fmt.Sprintf("%s fraction", sr.Param)

	pa := plot.New()
	pa.Title.Text = title
	pa.X.Label.Text = xlabel
	pa.Y.Label.Text = strings.ReplaceAll(sr.Metric, "_", " ")
	line, points, err := plotter.NewLinePoints(acc)
	if err != nil {
		return fmt.Errorf("plot accuracy: %w", err)
	}
	bars, err := plotter.NewYErrorBars(struct {
		plotter.XYs
		plotter.YErrors
	}{acc, errs})
	if err != nil {
		return fmt.Errorf("plot accuracy error bars: %w", err)
	}
	pa.Add(line, points, bars, plotter.NewGrid())

	pt := plot.New()
	pt.Title.Text = title
	pt.X.Label.Text = xlabel
	pt.Y.Label.Text = "training time per protocol run (s)"
	pt.Y.Min = 0
	line, points, err = plotter.NewLinePoints(secs)
	if err != nil {
		return fmt.Errorf("plot time: %w", err)
	}
	pt.Add(line, points, plotter.NewGrid())
	// CPU time is drawn when every point has it: it is the curve that the
	// load of other processes does not bend.
	if len(cpu) == len(pts) {
		pt.Y.Label.Text = "training time per protocol run (s): wall, CPU"
		cl, cp, err := plotter.NewLinePoints(cpu)
		if err != nil {
			return fmt.Errorf("plot CPU time: %w", err)
		}
		cl.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		cp.Shape = draw.BoxGlyph{}
		pt.Add(cl, cp)
		pt.Legend.Add("wall clock", line, points)
		pt.Legend.Add("CPU (all cores)", cl, cp)
		pt.Legend.Top = true
		// Top corner on the side where the curves are low.
		pt.Legend.Left = cpu[0].Y < cpu[len(cpu)-1].Y
	}

	c, err := draw.NewFormattedCanvas(12*vg.Inch, 4.5*vg.Inch, format)
	if err != nil {
		return err
	}
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Inch / 2, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8,
		PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	canvases := plot.Align([][]*plot.Plot{{pa, pt}}, tiles, draw.New(c))
	pa.Draw(canvases[0][0])
	pt.Draw(canvases[0][1])
	if _, err := c.WriteTo(w); err != nil {
		return fmt.Errorf("write %s plot: %w", format, err)
	}
	return nil
}
