package cpuset

import (
	"reflect"
	"strings"
	"testing"
)

func TestListParseMask(t *testing.T) {
	for _, tc := range []struct {
		cpus       []int
		list, mask string
	}{
		{[]int{0}, "0", "00000001"},
		{[]int{1}, "1", "00000002"},
		{[]int{0, 1, 2, 5, 7, 8}, "0-2,5,7-8", "000001a7"},
		{[]int{3, 33}, "3,33", "00000002,00000008"},
		{[]int{31, 32, 33}, "31-33", "00000003,80000000"},
	} {
		if got := List(tc.cpus); got != tc.list {
			t.Errorf("List(%v) = %q, want %q", tc.cpus, got, tc.list)
		}
		if got := Mask(tc.cpus); got != tc.mask {
			t.Errorf("Mask(%v) = %q, want %q", tc.cpus, got, tc.mask)
		}
		if got, err := Parse(tc.list); err != nil || !reflect.DeepEqual(got, tc.cpus) {
			t.Errorf("Parse(%q) = %v, %v; want %v", tc.list, got, err, tc.cpus)
		}
	}
	if got, err := Parse(" 5, 1-2,2 "); err != nil || !reflect.DeepEqual(got, []int{1, 2, 5}) {
		t.Errorf("Parse of an unsorted list with repeats = %v, %v", got, err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "want CPU numbers"},
		{"a", `"a" is not a CPU number`},
		{"1-", `"" is not a CPU number`},
		{"3-1", "runs backwards"},
		{"-1", `"" is not a CPU number`},
		{"1,,2", `"" is not a CPU number`},
		{"4096", `"4096" is not a CPU number (0 to 1023)`},
	} {
		if _, err := Parse(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q): %v; want an error saying %q", tc.in, err, tc.want)
		}
	}
}

// FuzzParse: whatever Parse accepts, List writes back to a list Parse reads the same.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0", "0-3,6", "1,,2", "3-1", " 7 ", "1023"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := Parse(s)
		if err != nil {
			return
		}
		back, err := Parse(List(cpus))
		if err != nil || !reflect.DeepEqual(back, cpus) {
			t.Fatalf("Parse(%q) = %v, List %q reads back %v, %v", s, cpus, List(cpus), back, err)
		}
	})
}

func TestAllowed(t *testing.T) {
	cpus, err := Allowed()
	if err != nil || len(cpus) == 0 {
		t.Fatalf("Allowed = %v, %v", cpus, err)
	}
}
