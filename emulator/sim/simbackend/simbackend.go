// Package simbackend registers the sim backend (emulator/sim) under the name "sim", with
// the wall clock it uses to report how long a run took and the file system its
// captures are written to. It is separate from package sim
// because sim is a pure core that never reads a clock (DESIGN.md principle 1).
package simbackend

import (
	"io"
	"os"
	"time"

	"reef/emulator"
	"reef/emulator/sim"
	"reef/units"
)

var epoch = time.Now()

func init() {
	emulator.Register(sim.Backend{
		Wall:   func() units.Time { return units.Time(time.Since(epoch)) },
		Create: func(path string) (io.WriteCloser, error) { return os.Create(path) },
	})
}
