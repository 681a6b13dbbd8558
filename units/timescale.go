package units

import "math"

// TimeScale is an experiment's τ (DESIGN principle 4): the emulator runs the paper's
// rates divided by τ and its times multiplied by τ. It is the one conversion between
// the two: reports, comparisons and expectations read paper units through it. Any value
// that is not a positive finite number (a result written without one) means 1.
type TimeScale float64

// Tau is τ, 1 when s is not a positive finite number.
func (s TimeScale) Tau() float64 {
	t := float64(s)
	if !(t > 0) || math.IsInf(t, 0) {
		return 1
	}
	return t
}

// Scaled reports whether paper and emulator units differ (τ ≠ 1).
func (s TimeScale) Scaled() bool { return s.Tau() != 1 }

// Time applies τ to a paper time: the emulator time, × τ to the nanosecond. With Rate
// it is the one way an experiment's times and rates are scaled when it is compiled.
func (s TimeScale) Time(paper Time) Time { return paper.Scale(s.Tau()) }

// Rate applies τ to a paper rate: the emulator rate, ÷ τ to the bit/s.
func (s TimeScale) Rate(paper Rate) Rate { return Rate(math.Round(float64(paper) / s.Tau())) }

// PaperTime is an emulator time (in any unit) in paper time: ÷ τ.
func (s TimeScale) PaperTime(emu float64) float64 { return emu / s.Tau() }

// PaperRate is an emulator rate (in any unit) in paper rate: × τ.
func (s TimeScale) PaperRate(emu float64) float64 { return emu * s.Tau() }

// EmulatorTime is a paper time in emulator time: × τ.
func (s TimeScale) EmulatorTime(paper float64) float64 { return paper * s.Tau() }

// EmulatorRate is a paper rate in emulator rate: ÷ τ.
func (s TimeScale) EmulatorRate(paper float64) float64 { return paper / s.Tau() }
