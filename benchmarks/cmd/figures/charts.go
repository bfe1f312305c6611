package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// series is one group member of a bar chart: a value per category, and
// the text written at the end of each bar.
type series struct {
	name   string
	values []float64
	labels []string
}

// palette is colour-blind safe (Okabe and Ito).
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255},
	color.RGBA{230, 159, 0, 255},
	color.RGBA{0, 158, 115, 255},
	color.RGBA{204, 121, 167, 255},
	color.RGBA{213, 94, 0, 255},
	color.RGBA{86, 180, 233, 255},
}

const barWidth = vg.Length(11)

// chart is a horizontal grouped bar chart: one row per category (the
// first at the top), one bar per series in each row, each bar labelled
// with its value, and dashed vertical lines at marks. Its X axis is
// linear from 0, or logarithmic when log is set.
type chart struct {
	title, xlabel string
	cats          []string
	series        []series
	marks         []mark
	log           *logAxis
	// legendRoom is the room kept at the top for the legend, in rows,
	// at the least: a pair sets both its charts' alike, so that their
	// rows line up.
	legendRoom float64
}

// mark is a vertical reference line, such as a target, named in the
// legend.
type mark struct {
	x    float64
	name string
}

// save draws the chart into a PNG file at path.
func (c chart) save(path string) error {
	p, err := c.plot(true)
	if err != nil {
		return err
	}
	return p.Save(7*vg.Inch, c.height(), path)
}

// height is the height that gives each bar of c room.
func (c chart) height() vg.Length {
	return vg.Inch + vg.Length(float64(len(c.cats))+c.legendRows())*c.rowHeight()
}

// rowHeight is the height of one category's row.
func (c chart) rowHeight() vg.Length { return vg.Length(len(c.series))*barWidth + vg.Points(10) }

// legendEntry is the height of one entry of a chart's legend.
const legendEntry = vg.Length(9)

// legendRows is the room that c keeps at the top for its legend, in
// rows: the series, when there are several, and the marks.
func (c chart) legendRows() float64 {
	n := len(c.marks)
	if len(c.series) > 1 {
		n += len(c.series)
	}
	rows := 0.0
	if n > 0 {
		rows = float64((vg.Length(n)*legendEntry + vg.Points(8)) / c.rowHeight())
	}
	return max(rows, c.legendRoom)
}

// plot builds c's plot, with the category names on its Y axis and the
// series in its legend when names is set: a chart drawn beside another
// leaves them to it.
func (c chart) plot(names bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = c.title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = c.xlabel
	p.X.Tick.Marker = plainTicks{}
	p.X.Tick.Label.Font.Size = vg.Points(10)
	p.Y.Tick.Label.Font.Size = vg.Points(11)
	cats := slices.Clone(c.cats)
	if !names {
		cats = make([]string, len(c.cats))
	}
	k := len(c.series)
	slices.Reverse(cats) // nominal axes count from the bottom
	p.NominalY(cats...)
	top := 0.0
	for i, s := range c.series {
		off := (vg.Length(k-1)/2 - vg.Length(i)) * barWidth
		if err := c.addSeries(p, s, off, palette[i%len(palette)], k > 1 && names); err != nil {
			return nil, err
		}
		top = max(top, slices.Max(s.values))
	}
	for _, m := range c.marks {
		top = max(top, m.x)
	}
	if top == 0 {
		top = 1
	}
	// Room on the right for the labels: the longest bar ends at 3/4 of
	// the axis.
	p.X.Min, p.X.Max = 0, top*1.3
	if c.log != nil {
		top = max(top, 10*c.log.floor)
		p.X.Scale, p.X.Tick.Marker = c.log, c.log
		p.X.Min, p.X.Max = c.log.floor, c.log.floor*math.Pow(top/c.log.floor, 1.3)
	}
	// Room at the top for the legend.
	p.Y.Min, p.Y.Max = -0.5, float64(len(cats))-0.5+c.legendRows()
	for _, m := range c.marks {
		// The line spans the categories' rows, not the legend's.
		l, err := plotter.NewLine(plotter.XYs{{X: m.x, Y: p.Y.Min}, {X: m.x, Y: float64(len(c.cats)) - 0.5}})
		if err != nil {
			return nil, fmt.Errorf("chart %q: %w", c.title, err)
		}
		l.Color = color.Gray{Y: 90}
		l.Width = vg.Points(1)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		p.Legend.Add(m.name, l)
	}
	p.Legend.Top, p.Legend.Left = true, false
	p.Legend.XOffs = -vg.Points(20)
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	return p, nil
}

// pair is two charts side by side over the same categories, each with its
// own axis, the category names written once, on the left.
type pair struct {
	title       string
	left, right chart
}

// save draws the pair into a PNG file at path.
func (pr pair) save(path string) error { return savePanel(pr, path) }

// size is the pair's width and height: each chart's height, and a line
// for the title.
func (pr pair) size() (vg.Length, vg.Length) {
	pr = pr.aligned()
	return 11 * vg.Inch, max(pr.left.height(), pr.right.height()) + titleHeight
}

// aligned returns pr with the legend rows of its charts alike.
func (pr pair) aligned() pair {
	n := max(pr.left.legendRows(), pr.right.legendRows())
	pr.left.legendRoom, pr.right.legendRoom = n, n
	return pr
}

// titleHeight is the room a figure's title takes above its panels.
const titleHeight = vg.Length(26)

// draw draws the pair into dc.
func (pr pair) draw(dc draw.Canvas) error {
	pr = pr.aligned()
	left, err := pr.left.plot(true)
	if err != nil {
		return err
	}
	right, err := pr.right.plot(false)
	if err != nil {
		return err
	}
	body := drawTitle(dc, left.Title.TextStyle, pr.title)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Points(12), PadLeft: vg.Points(6), PadRight: vg.Points(4)}
	cs := plot.Align([][]*plot.Plot{{left, right}}, tiles, body)
	left.Draw(cs[0][0])
	right.Draw(cs[0][1])
	return nil
}

// drawTitle writes title centred at the top of dc in sty, and returns
// the canvas below it.
func drawTitle(dc draw.Canvas, sty text.Style, title string) draw.Canvas {
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
	dc.FillText(sty, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - vg.Points(4)}, title)
	dc.Max.Y -= titleHeight
	return dc
}

// panel is a figure drawn into a canvas of its own size.
type panel interface {
	size() (w, h vg.Length)
	draw(dc draw.Canvas) error
}

// stack is panels one above the other, the first at the top, as wide
// as the widest.
type stack []panel

func (st stack) size() (vg.Length, vg.Length) {
	var w, h vg.Length
	for _, p := range st {
		pw, ph := p.size()
		w, h = max(w, pw), h+ph
	}
	return w, h
}

func (st stack) draw(dc draw.Canvas) error {
	top := dc.Max.Y
	for _, p := range st {
		_, h := p.size()
		sub := dc
		sub.Max.Y, sub.Min.Y = top, top-h
		if err := p.draw(sub); err != nil {
			return err
		}
		top -= h
	}
	return nil
}

func (st stack) save(path string) error { return savePanel(st, path) }

// savePanel draws p into a PNG file at path.
func savePanel(p panel, path string) error {
	w, h := p.size()
	c, err := draw.NewFormattedCanvas(w, h, "png")
	if err != nil {
		return err
	}
	if err := p.draw(draw.New(c)); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// logAxis is a logarithmic X axis from floor: a value at or below floor
// draws no bar. Its ticks are the powers of ten, written by label.
type logAxis struct {
	floor float64
	label func(float64) string
}

// Normalize places x on the axis from lo to hi, as plot.LogScale does,
// but for x at or below lo, which it places at lo, where a bar starts.
func (a *logAxis) Normalize(lo, hi, x float64) float64 {
	x = max(x, lo)
	return math.Log(x/lo) / math.Log(hi/lo)
}

// Ticks are a labelled tick at each power of ten from lo to hi, and
// unlabelled ones at 2 and 5 times each.
func (a *logAxis) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for p := math.Pow(10, math.Floor(math.Log10(lo))); p <= hi; p *= 10 {
		for _, m := range []float64{1, 2, 5} {
			if v := p * m; v >= lo && v <= hi {
				t := plot.Tick{Value: v}
				if m == 1 {
					t.Label = a.label(v)
				}
				out = append(out, t)
			}
		}
	}
	return out
}

// plainTicks are gonum's default ticks with their labels written in as
// few digits as they need ("250", not "250.00").
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', -1, 64)
		}
	}
	return ts
}

// addSeries adds one series' bars, offset by off, and their labels.
func (c chart) addSeries(p *plot.Plot, s series, off vg.Length, col color.Color, legend bool) error {
	vals := slices.Clone(s.values)
	slices.Reverse(vals)
	bars, err := plotter.NewBarChart(plotter.Values(vals), barWidth)
	if err != nil {
		return fmt.Errorf("chart %q: %w", c.title, err)
	}
	bars.Horizontal = true
	bars.Offset = off
	bars.Color = col
	bars.LineStyle.Width = 0
	p.Add(bars)
	if legend {
		p.Legend.Add(s.name, bars)
	}
	xys := make(plotter.XYs, len(vals))
	labels := slices.Clone(s.labels)
	slices.Reverse(labels)
	for i, v := range vals {
		xys[i] = plotter.XY{X: v, Y: float64(i)}
	}
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
	if err != nil {
		return fmt.Errorf("chart %q: %w", c.title, err)
	}
	for i := range l.TextStyle {
		l.TextStyle[i].XAlign = draw.XLeft
		l.TextStyle[i].YAlign = text.YAlignment(draw.YCenter)
		l.TextStyle[i].Font.Size = vg.Points(9)
	}
	l.Offset = vg.Point{X: vg.Points(3), Y: off}
	p.Add(l)
	return nil
}
