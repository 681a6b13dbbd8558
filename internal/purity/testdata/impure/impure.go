// Package impure does everything a core package must not; the purity test checks that
// its checker notices.
package impure

import (
	"net"
	"syscall"
	clock "time"
)

var _ = net.IPv4len
var _ = syscall.AF_INET

// Bad reads the clock, sleeps and starts a goroutine.
func Bad() {
	_ = clock.Now()
	clock.Sleep(1)
	go func() {}()
}
