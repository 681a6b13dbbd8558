// Package simbackend registers the sim backend (emulator/sim) under the name "sim", with
// the wall clock it uses to report how long a run took, the file system its captures
// are written to and the goroutines that run a large lab's partitions at once (one per
// CPU the process may use). It is separate from package sim because sim is a pure
// core that never reads a clock or starts a goroutine (DESIGN.md principle 1).
package simbackend

import (
	"io"
	"os"
	"runtime"
	"time"

	"reef/emulator"
	"reef/emulator/sim"
	"reef/internal/parallel"
	"reef/units"
)

var epoch = time.Now()

func init() {
	emulator.Register(sim.Backend{
		Wall:   func() units.Time { return units.Time(time.Since(epoch)) },
		Create: func(path string) (io.WriteCloser, error) { return os.Create(path) },
		Each:   func(n int, fn func(int)) { parallel.Each(n, runtime.GOMAXPROCS(0), fn) },
	})
}
