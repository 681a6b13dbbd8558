// Command reefpause is the long-running first process of reef's Docker containers: it
// holds a container (and its network namespace) open while the controller plumbs veths
// into it and execs daemons and tools there, reaps orphaned children, and exits on
// SIGTERM or SIGINT. It sits at the bottom of the docker backend (emulator/docker):
// host containers run it as their entrypoint, switch containers' namespace holders too.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			return
		}
		for { // reap whatever was re-parented to us
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
