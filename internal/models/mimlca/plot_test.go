package mimlca

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/mimlstream/mimlstream/internal/models"
	"github.com/mimlstream/mimlstream/internal/testsupport/synth"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// TestScalingPlot fits MIMLCA (metric only, restarts=1) on MSCV2-shaped
// synthetic data at 1x, 10x and 100x and plots the CPU time of one fit
// against the number of instances on log-log axes, with the line of slope 1
// through the 1x point (linear scaling) for reference:
//
//	MIMLCA_PLOT=/tmp/mimlca_scaling.png go test -run ScalingPlot -v ./internal/models/mimlca/
func TestScalingPlot(t *testing.T) {
	out := os.Getenv("MIMLCA_PLOT")
	if out == "" {
		t.Skip("set MIMLCA_PLOT=file.png to draw the training-time curve")
	}
	var pts, ref plotter.XYs
	for _, factor := range []int{1, 10, 100} {
		ds, err := synth.MSCV2Like(factor).Generate(rand.New(rand.NewPCG(1, uint64(factor))))
		if err != nil {
			t.Fatal(err)
		}
		n := float64(ds.NumInstances())
		opt := models.FitOptions{Seed: 1, Params: models.Params{"refs": "0", "citers": "0", "restarts": "1"}}
		c0, w0 := cpuTime(), time.Now()
		if _, _, err := Fit(context.Background(), ds, opt); err != nil {
			t.Fatal(err)
		}
		cpu := (cpuTime() - c0).Seconds()
		t.Logf("x%-3d n=%-7.0f cpu %.3fs wall %.3fs cpu/instance %.1fµs", factor, n, cpu, time.Since(w0).Seconds(), cpu/n*1e6)
		pts = append(pts, plotter.XY{X: n, Y: cpu})
		if len(ref) == 0 {
			for _, f := range []float64{1, 10, 100} {
				ref = append(ref, plotter.XY{X: n * f, Y: cpu * f})
			}
		}
	}
	p := plot.New()
	p.Title.Text = "MIMLCA training (Algorithm 1) on MSCV2-shaped data"
	p.X.Label.Text = "instances"
	p.Y.Label.Text = "CPU seconds per fit"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	if err := plotutil.AddLinePoints(p, "measured", pts, "linear in n", ref); err != nil {
		t.Fatal(err)
	}
	if err := p.Save(5*vg.Inch, 4*vg.Inch, out); err != nil {
		t.Fatal(fmt.Errorf("save plot: %w", err))
	}
}
