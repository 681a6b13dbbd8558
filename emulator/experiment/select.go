package experiment

import (
	"fmt"
	"slices"
	"strings"
)

// Select keeps only the sweep points that match every selector (reef run --only), each
// "VAR=VALUE" for a sweep variable and one of its values as written in the file; a
// variable selected more than once keeps the points with any of its values. The points
// kept are the same as in the whole sweep (same index, label, seed and plan), so a run
// of one point gives what that point gives in the full sweep. An empty list keeps all.
// Nothing is changed when a selector is malformed or names no variable or value of the
// sweep.
func (x *Experiment) Select(selectors []string) error {
	if len(selectors) == 0 {
		return nil
	}
	want := map[string][]string{}
	for _, s := range selectors {
		name, value, ok := strings.Cut(s, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || value == "" {
			return fmt.Errorf("%q: want VAR=VALUE, a sweep variable and one of its values", s)
		}
		if len(x.Sweep) == 0 {
			return fmt.Errorf("%s: %s has no sweep to select from", s, x.Path)
		}
		i := slices.IndexFunc(x.Sweep, func(v SweepVar) bool { return v.Name == name })
		if i < 0 {
			names := make([]string, len(x.Sweep))
			for j, v := range x.Sweep {
				names[j] = v.Name
			}
			return fmt.Errorf("%s: %s:%d: the sweep has no variable %q (it sweeps %s)", s, x.Path, x.Sweep[0].Line, name, strings.Join(names, ", "))
		}
		v := x.Sweep[i]
		values := make([]string, len(v.Values))
		for j, val := range v.Values {
			values[j] = fmt.Sprint(val)
		}
		if !slices.Contains(values, value) {
			return fmt.Errorf("%s: %s:%d: %q is not a value of sweep.%s (%s)", s, x.Path, v.Line, value, name, strings.Join(values, ", "))
		}
		want[name] = append(want[name], value)
	}
	var kept []*Point
	for _, pt := range x.Points {
		if pointMatches(pt, want) {
			kept = append(kept, pt)
		}
	}
	// Every value exists, so the cartesian product holds a point matching them all.
	x.Points = kept
	return nil
}

func pointMatches(pt *Point, want map[string][]string) bool {
	for name, values := range want {
		v, _ := pt.Var(name)
		if !slices.Contains(values, fmt.Sprint(v)) {
			return false
		}
	}
	return true
}
