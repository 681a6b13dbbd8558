package render

import (
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"

	"reef/emulator/expect"
)

// An axisUnit is a unit an axis can label its ticks in: its name and its size in the
// unit the plotted data are in.
type axisUnit struct {
	name string
	size float64
}

// A quantity is what an axis shows: the units it can be labelled in, smallest first,
// and the height an axis whose values are all equal spans (a flat zero queue delay
// reads 0–1 µs, not 0–1 s).
type quantity struct {
	units []axisUnit
	flat  float64
}

// The quantities plots show. Durations are plotted in seconds, rates in bit/s and sizes
// in bytes; an axis picks the unit its range reads best in (see chooseUnit).
var (
	durationUnits = quantity{[]axisUnit{{"ns", 1e-9}, {"µs", 1e-6}, {"ms", 1e-3}, {"s", 1}}, 1e-6}
	rateUnits     = quantity{[]axisUnit{{"bit/s", 1}, {"Kbit/s", 1e3}, {"Mbit/s", 1e6}, {"Gbit/s", 1e9}, {"Tbit/s", 1e12}}, 1e6}
	byteUnits     = quantity{[]axisUnit{{"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}}, 1e3}
	plainUnits    = quantity{[]axisUnit{{"", 1}}, 1}
)

// chooseUnit returns the largest of q's units in which extent, the largest absolute
// value an axis spans, is at least 1: its tick labels then have one to three digits
// before the point (50 ms, not 50000 µs or 0.05 s). Below the smallest unit, or for an
// empty extent, it is the smallest.
func chooseUnit(q quantity, extent float64) axisUnit {
	u := q.units[0]
	for _, c := range q.units[1:] {
		if extent >= c.size {
			u = c
		}
	}
	return u
}

// unitTicks labels an axis in one unit: ticks at 1, 2 or 5 times a power of ten of the
// unit, about five of them, each label with only the decimals its step needs, and
// unlabelled minor ticks between them.
type unitTicks struct{ u axisUnit }

// tickTarget is about how many labelled ticks an axis gets.
const tickTarget = 5

// Ticks implements plot.Ticker.
func (t unitTicks) Ticks(lo, hi float64) []plot.Tick {
	lo, hi = lo/t.u.size, hi/t.u.size
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return []plot.Tick{{Value: lo * t.u.size, Label: formatTick(lo, 0)}}
	}
	step, minors := niceStep((hi - lo) / tickTarget)
	prec := max(0, -int(math.Floor(math.Log10(step)+1e-9)))
	minor := step / float64(minors)
	var ticks []plot.Tick
	for i := math.Ceil(lo/minor - 1e-9); i*minor <= hi+minor*1e-9; i++ {
		v := i * minor
		tk := plot.Tick{Value: v * t.u.size}
		if math.Mod(i, float64(minors)) == 0 {
			tk.Label = formatTick(v, prec)
		}
		ticks = append(ticks, tk)
	}
	return ticks
}

// niceStep rounds raw up or down to the nearest 1, 2 or 5 times a power of ten, and
// says into how many minor steps that step divides.
func niceStep(raw float64) (step float64, minors int) {
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	switch n := raw / mag; {
	case n < 1.5:
		return mag, 5
	case n < 3.5:
		return 2 * mag, 4
	case n < 7.5:
		return 5 * mag, 5
	}
	return 10 * mag, 5
}

// formatTick writes v with prec decimals, and zero as "0".
func formatTick(v float64, prec int) string {
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.TrimLeft(s, "-0.") == "" {
		return "0"
	}
	return s
}

// setAxis labels a, whose range is final (every plotter added), in the unit of q its
// range reads best in: label's "{unit}" becomes the unit's name.
func setAxis(a *plot.Axis, label string, q quantity) {
	u := chooseUnit(q, math.Max(math.Abs(a.Min), math.Abs(a.Max)))
	a.Label.Text = strings.ReplaceAll(label, "{unit}", u.name)
	a.Tick.Marker = unitTicks{u}
}

// yAxis gives p's y axis, every plotter added, room for the legend (see headroom) and
// labels it in q (see setAxis).
func yAxis(p *plot.Plot, label string, q quantity) {
	headroom(p, q.flat)
	setAxis(&p.Y, label, q)
}

// expectAxis gives the factor from an expectation's base unit (expect.Dim*.Unit) to the
// unit its plot axis is in, the quantity the axis shows, and the axis label.
func expectAxis(unit string) (toData float64, q quantity, label string) {
	switch unit {
	case expect.DimTime.Unit():
		return 1e-9, durationUnits, "value ({unit})"
	case expect.DimRate.Unit():
		return 1, rateUnits, "value ({unit})"
	case expect.DimBytes.Unit():
		return 1, byteUnits, "value ({unit})"
	}
	return 1, plainUnits, "value"
}
