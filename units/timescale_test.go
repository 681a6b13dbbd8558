package units

import (
	"math"
	"testing"
)

func TestTimeScale(t *testing.T) {
	for _, tc := range []struct {
		s                  TimeScale
		tau                float64
		scaled             bool
		paperT, paperR     float64 // of 100 emulator units
		emulatorT, emulatR float64 // of 100 paper units
	}{
		{0, 1, false, 100, 100, 100, 100},
		{-3, 1, false, 100, 100, 100, 100},
		{TimeScale(math.NaN()), 1, false, 100, 100, 100, 100},
		{TimeScale(math.Inf(1)), 1, false, 100, 100, 100, 100},
		{1, 1, false, 100, 100, 100, 100},
		{4, 4, true, 25, 400, 400, 25},
		{0.5, 0.5, true, 200, 50, 50, 200},
	} {
		if got := tc.s.Tau(); got != tc.tau {
			t.Errorf("TimeScale(%v).Tau() = %v; want %v", float64(tc.s), got, tc.tau)
		}
		if got := tc.s.Scaled(); got != tc.scaled {
			t.Errorf("TimeScale(%v).Scaled() = %v; want %v", float64(tc.s), got, tc.scaled)
		}
		if a, b, c, d := tc.s.PaperTime(100), tc.s.PaperRate(100), tc.s.EmulatorTime(100), tc.s.EmulatorRate(100); a != tc.paperT || b != tc.paperR || c != tc.emulatorT || d != tc.emulatR {
			t.Errorf("TimeScale(%v): paper time %v rate %v, emulator time %v rate %v; want %v %v %v %v",
				float64(tc.s), a, b, c, d, tc.paperT, tc.paperR, tc.emulatorT, tc.emulatR)
		}
	}
}
