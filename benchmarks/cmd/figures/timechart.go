package main

import (
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// timeChart is a line chart over a run's time, in seconds: one line per
// contender, a shaded stretch (the trouble), and dashed horizontal lines
// at marks. Its legend sits on the right, beside the plot, where no line
// runs under it.
type timeChart struct {
	title, xlabel, ylabel string
	lines                 []timeLine
	shade                 shade
	marks                 []mark // at Y values
}

// timeLine is one contender's series: Y at each X.
type timeLine struct {
	name string
	xys  plotter.XYs
}

// shade is a stretch of time [from, to), in seconds, named in the
// legend; an empty name draws none.
type shade struct {
	from, to float64
	name     string
}

// legendWidth is the room the legend of a timeChart takes on its right.
const legendWidth = 2.6 * vg.Inch

func (tc timeChart) size() (vg.Length, vg.Length) { return 11 * vg.Inch, 4.2 * vg.Inch }

func (tc timeChart) save(path string) error { return savePanel(tc, path) }

// draw draws the chart into dc: the title across the top, the plot on
// the left and the legend on the right.
func (tc timeChart) draw(dc draw.Canvas) error {
	p, legend, err := tc.plot()
	if err != nil {
		return err
	}
	body := drawTitle(dc, p.Title.TextStyle, tc.title)
	side := body
	body.Max.X -= legendWidth
	side.Min.X = body.Max.X + vg.Points(8)
	p.Draw(body)
	legend.Draw(side)
	return nil
}

// bounds returns the highest value the chart's axes show, a tenth above
// every line and mark, and the last time.
func (tc timeChart) bounds() (top, end float64) {
	end = tc.shade.to
	for _, l := range tc.lines {
		for _, xy := range l.xys {
			top, end = max(top, xy.Y), max(end, xy.X)
		}
	}
	for _, m := range tc.marks {
		top = max(top, m.x)
	}
	return max(top*1.1, 1), end
}

// plot builds the chart's plot, and its legend apart from it.
func (tc timeChart) plot() (*plot.Plot, plot.Legend, error) {
	p := plot.New()
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text, p.Y.Label.Text = tc.xlabel, tc.ylabel
	p.X.Tick.Marker, p.Y.Tick.Marker = plainTicks{}, plainTicks{}
	p.X.Tick.Label.Font.Size = vg.Points(10)
	p.Y.Tick.Label.Font.Size = vg.Points(10)
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.TextStyle.Font.Size = vg.Points(10)
	top, end := tc.bounds()
	// The first line is drawn last, over the others, and the thinnest:
	// where lines coincide, those under it show at its edges.
	var drawn []*plotter.Line
	for i, l := range tc.lines {
		line, err := plotter.NewLine(l.xys)
		if err != nil {
			return nil, legend, fmt.Errorf("chart %q: %w", tc.title, err)
		}
		line.Color = palette[i%len(palette)]
		line.Width = vg.Points(1.4 + 1.1*float64(i))
		drawn = append(drawn, line)
		legend.Add(l.name, line)
	}
	if tc.shade.name != "" {
		box, err := plotter.NewPolygon(plotter.XYs{{X: tc.shade.from, Y: 0}, {X: tc.shade.to, Y: 0},
			{X: tc.shade.to, Y: top}, {X: tc.shade.from, Y: top}})
		if err != nil {
			return nil, legend, fmt.Errorf("chart %q: %w", tc.title, err)
		}
		box.Color, box.LineStyle.Width = color.Gray{Y: 225}, 0
		p.Add(box)
		legend.Add(tc.shade.name, box)
	}
	p.Add(plotter.NewGrid())
	for _, m := range tc.marks {
		l, err := plotter.NewLine(plotter.XYs{{X: 0, Y: m.x}, {X: end, Y: m.x}})
		if err != nil {
			return nil, legend, fmt.Errorf("chart %q: %w", tc.title, err)
		}
		l.Color, l.Width = color.Gray{Y: 90}, vg.Points(1)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		legend.Add(m.name, l)
	}
	for _, line := range slices.Backward(drawn) {
		p.Add(line)
	}
	p.X.Min, p.X.Max = 0, end
	p.Y.Min, p.Y.Max = 0, top
	return p, legend, nil
}
