// Package workload generates the flows of an experiment: flow sizes drawn from an
// empirical CDF, Poisson arrivals at a target load, long-lived flows, N-to-1 incast and
// all-to-all traffic. It is pure: generators take a seeded random source and return a
// list of Flow descriptions, which the experiment layer turns into hostd.FlowSpecs.
//
// # CDF files
//
// One point per line, "<size in bytes> <cumulative probability>", interpolated linearly
// between points. The probability column is a fraction (0–1) or a percent (0–100): a
// last value of 100 means percent. Blank lines and lines starting with # are skipped.
// The shipped distributions (websearch, hadoop, cachefollower) live in data/workloads.
package workload

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"path"
	"sort"
	"strconv"
	"strings"

	"reef/data/workloads"
	"reef/units"
)

// CDF is an empirical flow-size distribution.
type CDF struct {
	// Name is where it came from (a shipped name or a file name).
	Name  string
	sizes []float64 // bytes, non-decreasing
	probs []float64 // cumulative, non-decreasing, last = 1
}

// Builtins lists the shipped distributions by name.
func Builtins() []string {
	ents, _ := fs.ReadDir(workloads.FS, ".")
	var names []string
	for _, e := range ents {
		if n, ok := strings.CutSuffix(e.Name(), ".cdf"); ok {
			names = append(names, n)
		}
	}
	return names
}

// Builtin returns a shipped distribution ("websearch", "hadoop", "cachefollower").
func Builtin(name string) (*CDF, error) {
	b, err := workloads.FS.ReadFile(name + ".cdf")
	if err != nil {
		return nil, fmt.Errorf("workload: no shipped distribution %q; shipped: %s", name, strings.Join(Builtins(), ", "))
	}
	return ParseCDF(name+".cdf", b)
}

// Load reads a distribution: a shipped name, or a file in fsys (pass os.DirFS(".") for
// the working directory).
func Load(fsys fs.FS, name string) (*CDF, error) {
	if !strings.ContainsAny(name, "./") {
		return Builtin(name)
	}
	b, err := fs.ReadFile(fsys, path.Clean(name))
	if err != nil {
		return nil, fmt.Errorf("workload: %w", err)
	}
	return ParseCDF(name, b)
}

// ParseCDF parses a distribution; errors name the file and line.
func ParseCDF(name string, data []byte) (*CDF, error) {
	c := &CDF{Name: name}
	var lines []int
	sc := bufio.NewScanner(bytes.NewReader(data))
	ln := 0
	for sc.Scan() {
		ln++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("%s:%d: want \"<size in bytes> <cumulative probability>\", got %q", name, ln, line)
		}
		s, err := strconv.ParseFloat(f[0], 64)
		if err != nil || s < 0 || math.IsInf(s, 0) || math.IsNaN(s) {
			return nil, fmt.Errorf("%s:%d: size %q: want a number of bytes ≥ 0", name, ln, f[0])
		}
		p, err := strconv.ParseFloat(f[1], 64)
		if err != nil || p < 0 || p > 100 || math.IsNaN(p) {
			return nil, fmt.Errorf("%s:%d: probability %q: want a number in [0, 1] or a percent in [0, 100]", name, ln, f[1])
		}
		if n := len(c.sizes); n > 0 && (s < c.sizes[n-1] || p < c.probs[n-1]) {
			return nil, fmt.Errorf("%s:%d: point (%g, %g) goes backwards after (%g, %g): sizes and probabilities must not decrease",
				name, ln, s, p, c.sizes[n-1], c.probs[n-1])
		}
		c.sizes = append(c.sizes, s)
		c.probs = append(c.probs, p)
		lines = append(lines, ln)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(c.sizes) == 0 {
		return nil, fmt.Errorf("%s: no points", name)
	}
	last := c.probs[len(c.probs)-1]
	switch {
	case last == 100:
		for i := range c.probs {
			c.probs[i] /= 100
		}
	case last == 1:
	default:
		return nil, fmt.Errorf("%s:%d: last probability is %g; want 1 (fraction) or 100 (percent)", name, lines[len(lines)-1], last)
	}
	if c.sizes[len(c.sizes)-1] < 1 {
		return nil, fmt.Errorf("%s:%d: largest size is %g; want ≥ 1 byte", name, lines[len(lines)-1], c.sizes[len(c.sizes)-1])
	}
	return c, nil
}

// Quantile returns the size at cumulative probability u in [0, 1] (linear interpolation;
// at least 1 byte).
func (c *CDF) Quantile(u float64) units.Bytes {
	i := sort.SearchFloat64s(c.probs, u) // first point with prob ≥ u
	var s float64
	switch {
	case i == 0:
		s = c.sizes[0]
	case i >= len(c.probs):
		s = c.sizes[len(c.sizes)-1]
	default:
		p0, p1 := c.probs[i-1], c.probs[i]
		s0, s1 := c.sizes[i-1], c.sizes[i]
		s = s0 + (u-p0)/(p1-p0)*(s1-s0)
	}
	return max(units.Bytes(math.Round(s)), 1)
}

// Sample draws one size.
func (c *CDF) Sample(r *rand.Rand) units.Bytes { return c.Quantile(r.Float64()) }

// Mean is the distribution's mean size in bytes (of the interpolated distribution, the
// point mass at the first size included).
func (c *CDF) Mean() float64 {
	m := c.probs[0] * max(c.sizes[0], 1)
	for i := 1; i < len(c.sizes); i++ {
		m += (c.probs[i] - c.probs[i-1]) * (c.sizes[i-1] + c.sizes[i]) / 2
	}
	return m
}
