package main

import (
	"fmt"
	"image/color"
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
}

const barWidth = vg.Length(11)

// chart is a horizontal grouped bar chart: one row per category (the
// first at the top), one bar per series in each row, each bar labelled
// with its value, and dashed vertical lines at marks.
type chart struct {
	title, xlabel string
	cats          []string
	series        []series
	marks         []mark
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
	rows := len(c.cats)
	if len(c.series) > 1 {
		rows++ // the legend's row
	}
	return vg.Inch + vg.Length(rows)*(vg.Length(len(c.series))*barWidth+vg.Points(10))
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
	if k > 1 {
		cats = append([]string{""}, cats...) // a row at the top for the legend
	}
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
	// Room on the right for the labels.
	p.X.Min, p.X.Max = 0, top*1.3
	p.Y.Min, p.Y.Max = -0.5, float64(len(cats))-0.5
	for _, m := range c.marks {
		l, err := plotter.NewLine(plotter.XYs{{X: m.x, Y: p.Y.Min}, {X: m.x, Y: p.Y.Max}})
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
func (pr pair) save(path string) error {
	left, err := pr.left.plot(true)
	if err != nil {
		return err
	}
	right, err := pr.right.plot(false)
	if err != nil {
		return err
	}
	title := vg.Points(26)
	w, h := 11*vg.Inch, max(pr.left.height(), pr.right.height())+title
	c, err := draw.NewFormattedCanvas(w, h, "png")
	if err != nil {
		return err
	}
	dc := draw.New(c)
	sty := left.Title.TextStyle
	sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
	dc.FillText(sty, vg.Point{X: w / 2, Y: h - vg.Points(4)}, pr.title)
	body := dc
	body.Max.Y -= title
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Points(12), PadLeft: vg.Points(6), PadRight: vg.Points(4)}
	cs := plot.Align([][]*plot.Plot{{left, right}}, tiles, body)
	left.Draw(cs[0][0])
	right.Draw(cs[0][1])
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
