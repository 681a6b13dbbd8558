// Package all links every reef congestion-control algorithm into the binary: import it
// for its side effect, and each algorithm registers itself with package cc.
package all

import (
	_ "reef/cc/dcqcn"
	_ "reef/cc/dctcp"
	_ "reef/cc/hpcc"
	_ "reef/cc/mswift"
	_ "reef/cc/none"
	_ "reef/cc/oscar"
	_ "reef/cc/poseidon"
	_ "reef/cc/powertcp"
	_ "reef/cc/swift"
	_ "reef/cc/timely"
)
