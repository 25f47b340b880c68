package status

import (
	"bytes"
	"fmt"
	"image/color"
	"maps"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/mimlstream/mimlstream/internal/featurestore"
	"github.com/mimlstream/mimlstream/internal/measure"
)

// Plots lists the names of the plots, in the order the page shows them.
var plotNames = []string{"models", "live", "throughput", "lag", "dead-letters", "refits"}

// Size of the plots; the page scales each SVG to its column, so a plot
// shown across the page is drawn wider to keep the same text size.
const (
	plotWidth     = 7 * vg.Inch
	plotHeight    = 3 * vg.Inch
	wideWidth     = 14 * vg.Inch
	wideHeight    = 3.4 * vg.Inch
	fontSans      = "Sans"
	textSize      = 9
	titleTextSize = 11
)

var (
	colorCurrent  = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colorPrevious = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	colorOther    = color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}
)

// renderPlot draws the named plot of a snapshot and its samples as SVG.
func renderPlot(name string, s Snapshot, samples []Sample) ([]byte, error) {
	var (
		p   *plot.Plot
		err error
	)
	switch name {
	case "models":
		p, err = modelsPlot(s.Models)
	case "throughput":
		p, err = throughputPlot(samples)
	case "lag":
		p, err = lagPlot(samples)
	case "dead-letters":
		p, err = deadLetterPlot(s.DeadLetters)
	case "refits":
		p, err = refitPlot(s)
	case "live":
		p, err = livePlot(s.Live)
	default:
		return nil, fmt.Errorf("no plot %q", name)
	}
	if err != nil {
		return nil, fmt.Errorf("plot %s: %w", name, err)
	}
	style(p)
	w, h := plotWidth, plotHeight
	if name == "models" || name == "live" {
		w, h = wideWidth, wideHeight
	}
	c := vgsvg.New(w, h)
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("plot %s: %w", name, err)
	}
	return buf.Bytes(), nil
}

// style sets sans-serif text of one size on every part of p (the
// defaults are serif, and a package-level default is not ours to change).
func style(p *plot.Plot) {
	p.Title.TextStyle.Font.Variant = fontSans
	p.Title.TextStyle.Font.Size = vg.Points(titleTextSize)
	p.Title.Padding = vg.Points(6)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Variant = fontSans
		a.Label.TextStyle.Font.Size = vg.Points(textSize)
		a.Tick.Label.Font.Variant = fontSans
		a.Tick.Label.Font.Size = vg.Points(textSize - 1)
	}
	p.Legend.TextStyle.Font.Variant = fontSans
	p.Legend.TextStyle.Font.Size = vg.Points(textSize - 1)
}

// plainTicks are the default ticks labelled without trailing zeros
// ("25", not "25.00"). The default label is trimmed rather than the value
// printed again: the value carries the step's rounding error, which the
// shortest exact form shows ("0.0750000000000001").
var plainTicks = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		ts[i].Label = trimZeros(ts[i].Label)
	}
	return ts
})

// trimZeros drops a decimal label's trailing zeros, and its point when
// nothing follows it.
func trimZeros(label string) string {
	if !strings.Contains(label, ".") || strings.ContainsAny(label, "eE") {
		return label
	}
	return strings.TrimSuffix(strings.TrimRight(label, "0"), ".")
}

// timeAxis shows unix seconds as UTC clock times.
func timeAxis(p *plot.Plot, format string) {
	p.X.Tick.Marker = plot.TimeTicks{Format: format}
	p.X.Label.Text = "time (UTC)"
}

// empty gives a plot without data a visible range and says why it is
// empty.
func empty(p *plot.Plot, why string) *plot.Plot {
	p.Title.Text += " (" + why + ")"
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	p.HideAxes()
	return p
}

// modelsPlot puts every stored version on a timeline (x: when it was
// stored, y: its place in storage order), labelled with its id, kind,
// input dimension and aliases; current and previous stand out in colour.
func modelsPlot(models []Model) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Model versions by storage time"
	if len(models) == 0 {
		return empty(p, "none stored"), nil
	}
	xys := make(plotter.XYs, len(models))
	labels := make([]string, len(models))
	colors := make([]color.Color, len(models))
	for i, m := range models {
		xys[i] = plotter.XY{X: float64(m.CreatedAt.Unix()), Y: float64(i + 1)}
		l := fmt.Sprintf("%s %s d%d", m.Version, m.Kind, m.Dim)
		if len(m.Aliases) > 0 {
			l += " [" + strings.Join(m.Aliases, ",") + "]"
		}
		labels[i] = l
		colors[i] = colorOther
		switch {
		case slices.Contains(m.Aliases, featurestore.AliasCurrent):
			colors[i] = colorCurrent
		case slices.Contains(m.Aliases, featurestore.AliasCandidate):
			colors[i] = colorCandidate
		case slices.Contains(m.Aliases, featurestore.AliasPrevious):
			colors[i] = colorPrevious
		}
	}
	line, err := plotter.NewLine(xys)
	if err != nil {
		return nil, err
	}
	line.Color = color.Gray{Y: 0xc0}
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, err
	}
	sc.GlyphStyleFunc = func(i int) draw.GlyphStyle {
		return draw.GlyphStyle{Color: colors[i], Radius: vg.Points(4), Shape: draw.CircleGlyph{}}
	}
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
	if err != nil {
		return nil, err
	}
	lb.Offset = vg.Point{X: vg.Points(6), Y: -vg.Points(3)}
	for i := range lb.TextStyle {
		lb.TextStyle[i].Font.Variant = fontSans
		lb.TextStyle[i].Font.Size = vg.Points(textSize)
	}
	p.Add(plotter.NewGrid(), line, sc, lb)
	timeAxis(p, "15:04:05")
	p.Y.Label.Text = "version (storage order)"
	p.Y.Min, p.Y.Max = 0, float64(len(models)+1)
	p.Y.Tick.Marker = integerTicks{}
	// Room on the right for the newest version's label.
	lo, hi := xys[0].X, xys[len(xys)-1].X
	span := max(hi-lo, 10)
	p.X.Min, p.X.Max = lo-span*0.05, hi+span*0.3
	return p, nil
}

func throughputPlot(samples []Sample) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Throughput of the bags topic (messages/s)"
	if len(samples) < 2 {
		return empty(p, "waiting for two polls"), nil
	}
	ann := make(plotter.XYs, 0, len(samples)-1)
	prod := make(plotter.XYs, 0, len(samples)-1)
	for _, s := range samples[1:] {
		x := unix(s.At)
		ann = append(ann, plotter.XY{X: x, Y: s.Annotated})
		prod = append(prod, plotter.XY{X: x, Y: s.Produced})
	}
	la, err := plotter.NewLine(ann)
	if err != nil {
		return nil, err
	}
	la.Color, la.Width = plotutil.Color(0), vg.Points(1.5)
	lp, err := plotter.NewLine(prod)
	if err != nil {
		return nil, err
	}
	lp.Color, lp.Dashes = plotutil.Color(1), []vg.Length{vg.Points(4), vg.Points(2)}
	p.Add(plotter.NewGrid(), la, lp)
	p.Legend.Add("annotated (committed by the group)", la)
	p.Legend.Add("produced (end offsets)", lp)
	p.Legend.Top = true
	timeAxis(p, "15:04:05")
	p.Y.Min = 0
	p.Y.Tick.Marker = plainTicks
	p.Y.Label.Text = "messages/s"
	return p, nil
}

func lagPlot(samples []Sample) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Consumer lag per partition (messages)"
	if len(samples) == 0 {
		return empty(p, "waiting for a poll"), nil
	}
	series := map[int]plotter.XYs{}
	for _, s := range samples {
		for _, l := range s.Lag {
			series[l.Partition] = append(series[l.Partition], plotter.XY{X: unix(s.At), Y: float64(l.Lag)})
		}
	}
	p.Add(plotter.NewGrid())
	for i, part := range slices.Sorted(maps.Keys(series)) {
		xys := series[part]
		if len(xys) == 1 {
			// One poll: a line needs two points.
			xys = append(xys, plotter.XY{X: xys[0].X + 1, Y: xys[0].Y})
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = plotutil.Color(i), vg.Points(1.5)
		l.Dashes = plotutil.Dashes(i / len(plotutil.DefaultColors))
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("partition %d", part), l)
	}
	p.Legend.Top = true
	timeAxis(p, "15:04:05")
	p.Y.Min = 0
	p.Y.Tick.Marker = plainTicks
	p.Y.Label.Text = "messages behind"
	return p, nil
}

func deadLetterPlot(d DeadLetters) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Dead letters by reason (%d in all)", d.Total)
	var names []string
	for _, r := range slices.Sorted(maps.Keys(d.ByReason)) {
		if d.ByReason[r] > 0 {
			names = append(names, r)
		}
	}
	if len(names) == 0 {
		return empty(p, "none"), nil
	}
	vals := make(plotter.Values, len(names))
	for i, n := range names {
		vals[i] = float64(d.ByReason[n])
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(14))
	if err != nil {
		return nil, err
	}
	bars.Horizontal = true
	bars.Color = colorCurrent
	bars.LineStyle.Width = 0
	p.Add(plotter.NewGrid(), bars)
	p.NominalY(names...)
	p.X.Min = 0
	p.X.Tick.Marker = plainTicks
	p.X.Label.Text = "messages"
	return p, nil
}

// refitPlot shows the held-out Hamming loss of each refit's candidate
// against the model it was compared with; promoted candidates are filled.
func refitPlot(s Snapshot) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Refits: held-out Hamming loss"
	if len(s.Refits) == 0 {
		return empty(p, "no refit yet"), nil
	}
	var cand, cur, promoted plotter.XYs
	for i, r := range s.Refits {
		x := float64(i + 1)
		if v, ok := r.Candidate[measure.HammingLoss]; ok {
			cand = append(cand, plotter.XY{X: x, Y: v})
			if r.Promoted {
				promoted = append(promoted, plotter.XY{X: x, Y: v})
			}
		}
		if v, ok := r.Current[measure.HammingLoss]; ok {
			cur = append(cur, plotter.XY{X: x, Y: v})
		}
	}
	p.Add(plotter.NewGrid())
	if len(cand) > 0 {
		l, sc, err := plotter.NewLinePoints(cand)
		if err != nil {
			return nil, err
		}
		l.Color, sc.Color = plotutil.Color(0), plotutil.Color(0)
		sc.Shape = draw.RingGlyph{}
		p.Add(l, sc)
		p.Legend.Add("candidate", l, sc)
	}
	if len(cur) > 0 {
		l, sc, err := plotter.NewLinePoints(cur)
		if err != nil {
			return nil, err
		}
		l.Color, sc.Color = plotutil.Color(1), plotutil.Color(1)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		sc.Shape = draw.BoxGlyph{}
		p.Add(l, sc)
		p.Legend.Add("current at the time", l, sc)
	}
	if len(promoted) > 0 {
		sc, err := plotter.NewScatter(promoted)
		if err != nil {
			return nil, err
		}
		sc.Color, sc.Shape, sc.Radius = colorCurrent, draw.CircleGlyph{}, vg.Points(4)
		p.Add(sc)
		p.Legend.Add("promoted", sc)
	}
	// Bottom right: losses are small, so the lower part is empty.
	p.Legend.Top = false
	p.X.Label.Text = "refit"
	p.X.Min, p.X.Max = 0.5, float64(len(s.Refits))+0.5
	p.X.Tick.Marker = integerTicks{}
	p.Y.Min = 0
	p.Y.Tick.Marker = plainTicks
	p.Y.Label.Text = "Hamming loss"
	return p, nil
}

// integerTicks marks whole numbers only (refit counts).
type integerTicks struct{}

func (integerTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	step := max(1, int((hi-lo)/10))
	for v := int(lo + 0.5); float64(v) <= hi; v += step {
		if float64(v) >= lo {
			ts = append(ts, plot.Tick{Value: float64(v), Label: fmt.Sprint(v)})
		}
	}
	return ts
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

var colorCandidate = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}

// aliasColor colours a version by the alias it holds (other versions get
// the palette's colours, by index).
func aliasColor(aliases []string, i int) color.Color {
	switch {
	case slices.Contains(aliases, featurestore.AliasCurrent):
		return colorCurrent
	case slices.Contains(aliases, featurestore.AliasCandidate):
		return colorCandidate
	case slices.Contains(aliases, featurestore.AliasPrevious):
		return colorPrevious
	}
	return otherColors[i%len(otherColors)]
}

// otherColors tell apart the versions no alias names, away from the alias
// colours (red, green, orange).
var otherColors = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff},
	color.RGBA{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff}, color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff},
}

// livePlot shows each version's live quality per time bucket: average
// precision (solid) and, on bags with audit instance labels, instance
// accuracy (dashed); colour by alias.
func livePlot(live []LiveVersion) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Live quality per model version (solid: average precision, dashed: instance accuracy)"
	scored := false
	for _, lv := range live {
		scored = scored || len(lv.Series) > 0
	}
	if !scored {
		return empty(p, "no labeled bag scored yet"), nil
	}
	p.Add(plotter.NewGrid())
	for i, lv := range live {
		var ap, acc plotter.XYs
		for _, pt := range lv.Series {
			x := unix(pt.Start)
			if pt.AveragePrecision != nil {
				ap = append(ap, plotter.XY{X: x, Y: *pt.AveragePrecision})
			}
			if pt.InstanceAccuracy != nil {
				acc = append(acc, plotter.XY{X: x, Y: *pt.InstanceAccuracy})
			}
		}
		c := aliasColor(lv.Aliases, i)
		name := lv.Version
		if len(lv.Aliases) > 0 {
			name += " [" + strings.Join(lv.Aliases, ",") + "]"
		}
		var legend plot.Thumbnailer
		for j, xys := range []plotter.XYs{ap, acc} {
			if len(xys) == 0 {
				continue
			}
			l, s, err := plotter.NewLinePoints(xys)
			if err != nil {
				return nil, err
			}
			l.Color, l.Width = c, vg.Points(1.5)
			s.Color, s.Radius, s.Shape = c, vg.Points(2), draw.CircleGlyph{}
			if j == 1 {
				l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
			}
			p.Add(l, s)
			if legend == nil {
				legend = l
			}
		}
		if legend != nil {
			p.Legend.Add(name, legend)
		}
	}
	// Scores below 1 leave the top free for the legend.
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.XOffs = vg.Points(6)
	timeAxis(p, "15:04:05")
	p.Y.Min, p.Y.Max = 0, 1
	p.Y.Tick.Marker = plainTicks
	p.Y.Label.Text = "on live labeled bags"
	return p, nil
}
