package workload

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/fstest"

	"reef/units"
)

func TestBuiltins(t *testing.T) {
	for _, name := range []string{"websearch", "hadoop", "cachefollower"} {
		c, err := Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		// The analytic mean must match the mean of many samples.
		r := rand.New(rand.NewPCG(1, 2))
		const n = 400_000
		var sum float64
		for i := 0; i < n; i++ {
			sum += float64(c.Sample(r))
		}
		if got, want := sum/n, c.Mean(); math.Abs(got-want)/want > 0.02 {
			t.Errorf("%s: sample mean %.0f, analytic %.0f; want within 2%%", name, got, want)
		}
		t.Logf("%s: mean %.0f B", name, c.Mean())
	}
	if _, err := Builtin("websearh"); err == nil || !strings.Contains(err.Error(), "websearch") {
		t.Errorf("unknown name: error %v, want one listing the shipped names", err)
	}
}

func TestQuantile(t *testing.T) {
	c, err := Builtin("websearch") // 0 0, 10000 15, 20000 20, …
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		u    float64
		want units.Bytes
	}{{0, 1}, {0.15, 10000}, {0.075, 5000}, {0.175, 15000}, {1, 30_000_000}} {
		if got := c.Quantile(tc.u); got != tc.want {
			t.Errorf("quantile %g = %d, want %d (linear interpolation)", tc.u, got, tc.want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"100 0.5\n50 1\n", "x.cdf:2: point (50, 1) goes backwards"},
		{"# c\n\n100 0.5 7\n", "x.cdf:3: want"},
		{"abc 1\n", "x.cdf:1: size \"abc\""},
		{"100 -1\n", "x.cdf:1: probability"},
		{"100 0.2\n200 0.9\n", "x.cdf:2: last probability is 0.9"},
		{"", "x.cdf: no points"},
	} {
		_, err := ParseCDF("x.cdf", []byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.src, err, tc.want)
		}
	}
	fsys := fstest.MapFS{"my/w.cdf": {Data: []byte("1000 0\n3000 100\n")}}
	c, err := Load(fsys, "my/w.cdf")
	if err != nil || c.Mean() != 2000 {
		t.Errorf("user file: %v, mean %v; want 2000 (percent scale)", err, c.Mean())
	}
}

func TestPoissonLoad(t *testing.T) {
	c, _ := ParseCDF("fixed", []byte("1000 1\n"))
	p := Poisson{Srcs: []int{0, 1, 2, 3}, Dsts: []int{0, 1, 2, 3}, Load: 0.5, Rate: units.Gbps, CDF: c,
		Start: units.Millisecond, Duration: 100 * units.Millisecond}
	flows, err := p.Generate(rand.New(rand.NewPCG(7, 7)))
	if err != nil {
		t.Fatal(err)
	}
	// λ = 0.5 × 1Gbps / 8000 bits = 62500 flows/s per source: 6250 in 100ms.
	per := map[int]int{}
	for i, f := range flows {
		per[f.Src]++
		if f.Src == f.Dst || f.Start < units.Millisecond || f.Start >= 101*units.Millisecond {
			t.Fatalf("flow %+v: self-directed or outside [1ms, 101ms)", f)
		}
		if i > 0 && flows[i-1].Start > f.Start {
			t.Fatalf("flows not sorted by start")
		}
	}
	for src, n := range per {
		if n < 5900 || n > 6600 {
			t.Errorf("source %d started %d flows in 100ms, want ≈ 6250 (load × rate / mean size)", src, n)
		}
	}
	if _, err := (Poisson{Srcs: []int{1}, Dsts: []int{1}, Load: 0.5, Rate: units.Gbps, CDF: c, Duration: 1}).Generate(rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("a source with no other destination was accepted")
	}
	again, _ := p.Generate(rand.New(rand.NewPCG(7, 7)))
	if len(again) != len(flows) || again[100] != flows[100] {
		t.Error("same seed, different flows")
	}
}

func TestPatterns(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	perm := Permutation(8, 1000, 0, r)
	seen := map[int]bool{}
	for _, f := range perm {
		if f.Src == f.Dst || seen[f.Dst] {
			t.Fatalf("permutation %v: self flow or repeated destination", perm)
		}
		seen[f.Dst] = true
	}
	if n := len(AllPairs(5, 1, 0)); n != 20 {
		t.Errorf("all pairs of 5 hosts: %d flows, want 20", n)
	}
	inc := Incast([]int{1, 2, 3}, 0, 64000, units.Millisecond, 2, units.Millisecond, 10*units.Microsecond, r)
	if len(inc) != 6 || inc[5].Start < 2*units.Millisecond || inc[5].Start >= 2*units.Millisecond+10*units.Microsecond {
		t.Errorf("incast %+v: want 2 rounds of 3, the second at 2ms + jitter", inc)
	}
	ll := LongLived([][2]int{{0, 1}}, 5, 10)
	if ll[0].Size != 0 || ll[0].Stop != 10 {
		t.Errorf("long-lived %+v", ll[0])
	}
	if got := IdealFCT(125_000, units.Gbps, 10*units.Microsecond); got != units.Millisecond+10*units.Microsecond {
		t.Errorf("ideal FCT %v, want 1.01ms", got)
	}
}

func FuzzParseCDF(f *testing.F) {
	f.Add([]byte("0 0\n10000 15\n20000 100\n"))
	f.Add([]byte("50 0\n53 0.5\n60 1\n"))
	f.Add([]byte("# x\n1 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCDF("f", data)
		if err != nil {
			return
		}
		lo, hi := c.sizes[0], c.sizes[len(c.sizes)-1]
		prev := units.Bytes(0)
		for u := 0.0; u <= 1; u += 1.0 / 64 {
			q := c.Quantile(u)
			if q < prev {
				t.Fatalf("quantile decreases at %g: %d < %d", u, q, prev)
			}
			prev = q
		}
		if m := c.Mean(); m < math.Min(lo, 1)*0.999 || m > math.Max(hi, 1)*1.001 {
			t.Fatalf("mean %g outside [%g, %g]", m, lo, hi)
		}
	})
}
