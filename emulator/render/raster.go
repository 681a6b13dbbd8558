package render

import (
	"math"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgimg"
)

// strokeSegments is how many segments of a polyline one stroke hands the rasteriser at
// most (see splitStrokes).
const strokeSegments = 32

// splitStrokes is a raster canvas that strokes a long polyline as a chain of shorter
// ones. The rasteriser under vgimg (golang/freetype) keeps the cells a stroke covers in
// one sorted linked list per pixel row and walks it for every cell it adds, so a stroke
// costs its cells times the cells already in their rows: a time series that zigzags
// over the plot's height puts a cell in nearly every column of every row it crosses,
// and a 4000-point series took tens of seconds. A stroke of strokeSegments segments
// spans few columns, which keeps the lists short.
//
// A piece ends, and the next begins, in the middle of a segment, so that every joint is
// drawn whole by one piece; a dashed line's pieces start where the pattern is at that
// point of the whole line. What can differ from one stroke is anti-aliasing: each
// piece's edge pixels are blended on their own, where one stroke summed the coverage
// of its overlapping segments first (which tells only where pieces overlap), and the
// cut point is rounded to the rasteriser's grid, which tilts the two halves of its
// segment by a hundredth of a pixel.
type splitStrokes struct {
	*vgimg.Canvas
	dashes []vg.Length
	offs   vg.Length
	saved  []dashState
}

type dashState struct {
	dashes []vg.Length
	offs   vg.Length
}

// SetLineDash records the pattern so that each piece can carry it on.
func (c *splitStrokes) SetLineDash(ds []vg.Length, offs vg.Length) {
	c.dashes, c.offs = ds, offs
	c.Canvas.SetLineDash(ds, offs)
}

// Push saves the state, the recorded pattern with it.
func (c *splitStrokes) Push() {
	c.saved = append(c.saved, dashState{c.dashes, c.offs})
	c.Canvas.Push()
}

// Pop restores the state Push saved.
func (c *splitStrokes) Pop() {
	if n := len(c.saved); n > 0 {
		c.dashes, c.offs = c.saved[n-1].dashes, c.saved[n-1].offs
		c.saved = c.saved[:n-1]
	}
	c.Canvas.Pop()
}

// Stroke strokes p, a long polyline, in pieces.
func (c *splitStrokes) Stroke(p vg.Path) {
	if len(p) <= strokeSegments+1 || !polyline(p) {
		c.Canvas.Stroke(p)
		return
	}
	dot := vg.Inch / vg.Length(c.DPI())
	start, dist := p[0].Pos, vg.Length(0) // where the piece begins, how far along p that is
	piece := make(vg.Path, 0, strokeSegments+1)
	for from := 0; ; {
		// The piece runs from start through p[from+1:to] to the middle of the segment
		// p[to-1]→p[to], where the next piece takes over: the first segment at least a
		// dot long among the next strokeSegments (the halves of a shorter one may point
		// elsewhere than it on the rasteriser's grid), or the last of them. The last
		// piece runs to the end.
		to := from + strokeSegments
		for to < min(from+2*strokeSegments, len(p)-1) && length(p[to-1].Pos, p[to].Pos) < dot {
			to++
		}
		last := to >= len(p)-1
		piece = append(piece[:0], vg.PathComp{Type: vg.MoveComp, Pos: start})
		if last {
			piece = append(piece, p[from+1:]...)
		} else {
			piece = append(piece, p[from+1:to]...)
			piece = append(piece, vg.PathComp{Type: vg.LineComp, Pos: lerp(p[to-1].Pos, p[to].Pos, 0.5)})
		}
		if len(c.dashes) > 0 {
			c.Canvas.SetLineDash(c.dashes, c.offs+dist)
		}
		c.Canvas.Stroke(piece)
		if last {
			break
		}
		for i := 1; i < len(piece); i++ {
			dist += c.gridLength(piece[i-1].Pos, piece[i].Pos)
		}
		from, start = to-1, piece[len(piece)-1].Pos
	}
	if len(c.dashes) > 0 {
		c.Canvas.SetLineDash(c.dashes, c.offs)
	}
}

// polyline says whether p is one open polyline: a move, then only lines.
func polyline(p vg.Path) bool {
	if len(p) == 0 || p[0].Type != vg.MoveComp {
		return false
	}
	for _, c := range p[1:] {
		if c.Type != vg.LineComp {
			return false
		}
	}
	return true
}

func length(a, b vg.Point) vg.Length {
	return vg.Length(math.Hypot(float64(b.X-a.X), float64(b.Y-a.Y)))
}

// lerp is the point a fraction t of the way from a to b.
func lerp(a, b vg.Point, t vg.Length) vg.Point {
	return vg.Point{X: a.X + (b.X-a.X)*t, Y: a.Y + (b.Y-a.Y)*t}
}

// gridLength is the distance from a to b as the rasteriser measures it to lay out dashes: in
// dots, between the points rounded to its 1/64 dot grid (y counts from the image's top).
// Measured any other way, the rounding adds up along a line and the dashes of a piece
// drift from where the whole line had them.
func (c *splitStrokes) gridLength(a, b vg.Point) vg.Length {
	dpi := c.DPI()
	h := float64(c.Image().Bounds().Dy())
	grid := func(v float64) float64 { return math.Round(v*64) / 64 }
	dx := grid(b.X.Dots(dpi)) - grid(a.X.Dots(dpi))
	dy := grid(h-b.Y.Dots(dpi)) - grid(h-a.Y.Dots(dpi))
	return vg.Length(math.Hypot(dx, dy) / dpi * float64(vg.Inch))
}
