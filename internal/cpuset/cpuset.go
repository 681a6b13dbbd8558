// Package cpuset reads and writes sets of CPUs in the forms Linux uses: the list form
// of taskset, cpuset cgroups and /proc status files ("0-3,6"), and the hexadecimal
// bitmap of sysfs files such as rps_cpus. The netns and docker backends place a lab's
// daemons with it (emulator/netns), and switchd reads its --cpus flag with it.
package cpuset

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// List writes cpus (ascending, no repeats) in list form: "0-3,6".
func List(cpus []int) string {
	var b strings.Builder
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(cpus[i]))
		if j > i {
			b.WriteString("-" + strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return b.String()
}

// MaxCPU bounds the CPU numbers Parse accepts (the kernel's CPU set holds 1024).
const MaxCPU = len(unix.CPUSet{}) * 64

// Parse reads a list form ("0-3,6") into ascending CPU numbers without repeats.
func Parse(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("cpu list %q: want CPU numbers or ranges such as 0-3,6", s)
	}
	var cpus []int
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := cpuNumber(lo)
		if err != nil {
			return nil, fmt.Errorf("cpu list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = cpuNumber(hi); err != nil {
				return nil, fmt.Errorf("cpu list %q: %w", s, err)
			}
			if b < a {
				return nil, fmt.Errorf("cpu list %q: range %s runs backwards", s, part)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	slices.Sort(cpus)
	return slices.Compact(cpus), nil
}

func cpuNumber(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n >= MaxCPU {
		return 0, fmt.Errorf("%q is not a CPU number (0 to %d)", s, MaxCPU-1)
	}
	return n, nil
}

// Mask writes cpus as a sysfs CPU bitmap (rps_cpus): hexadecimal, in 32-bit groups
// separated by commas, most significant first.
func Mask(cpus []int) string {
	top := 0
	for _, c := range cpus {
		top = max(top, c)
	}
	words := make([]uint32, top/32+1)
	for _, c := range cpus {
		words[c/32] |= 1 << (c % 32)
	}
	var b strings.Builder
	for i := len(words) - 1; i >= 0; i-- {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%08x", words[i])
	}
	return b.String()
}

// set is cpus as the kernel's affinity mask.
func set(cpus []int) unix.CPUSet {
	var s unix.CPUSet
	for _, c := range cpus {
		s.Set(c)
	}
	return s
}

// Allowed are the CPUs the calling thread may run on, ascending.
func Allowed() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("cpuset: CPUs allowed: %w", err)
	}
	var cpus []int
	for c := range MaxCPU {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// Bind binds the calling thread to cpus (lock it to its goroutine first).
func Bind(cpus []int) error {
	s := set(cpus)
	if err := unix.SchedSetaffinity(0, &s); err != nil {
		return fmt.Errorf("cpuset: bind to CPUs %s: %w", List(cpus), err)
	}
	return nil
}
