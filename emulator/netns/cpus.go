package netns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"reef/internal/cpuset"
)

// placeCPUs says where a lab's work runs: each switch daemon's (shard's) datapath
// thread on a CPU of its own, the last allowed CPUs first (it sets shards[k].CPUs;
// Lab.SwitchdArgs), and everything the hosts do on the CPUs left, which it returns:
// their daemons, the programs reef exec starts in them, and the kernel's receive work
// for their interfaces (RPS). When that would leave the hosts no CPU it places nothing
// and returns nil.
//
// Unplaced, the kernel runs a host's receive path (its TCP stack, for a kernel program)
// inside the switch daemon's sendmmsg, on the daemon's CPU, and the scheduler moves host
// work onto that CPU whenever it looks idle for a moment. Measured on a 2-core machine,
// iperf3 across fat-tree-k4's 1 Gbit/s links (one shard, alternating runs): 761–798
// Mbit/s unplaced, 879–912 placed. poseidon-multihop at backend time scale 200 kept
// fidelity ok in 31 of 36 points unplaced and 42 of 48 placed.
func placeCPUs(shards []Shard, allowed []int) (hosts []int) {
	if len(shards) == 0 || len(allowed) <= len(shards) {
		return nil
	}
	for k := range shards {
		shards[k].CPUs = []int{allowed[len(allowed)-1-k]}
	}
	return allowed[:len(allowed)-len(shards)]
}

// DescribeCPUs says where st's shards and hosts run ("shard1 on CPU 1; hosts on CPU
// 0"), or "" when the lab placed nothing.
func DescribeCPUs(st *State) string {
	if len(st.HostCPUs) == 0 {
		return ""
	}
	var parts []string
	for _, s := range st.Shards {
		if len(s.CPUs) > 0 {
			parts = append(parts, s.Name+" on "+cpuNoun(s.CPUs))
		}
	}
	return strings.Join(append(parts, "hosts on "+cpuNoun(st.HostCPUs)), "; ")
}

func cpuNoun(cpus []int) string {
	if len(cpus) == 1 {
		return "CPU " + cpuset.List(cpus)
	}
	return "CPUs " + cpuset.List(cpus)
}

// startOn starts a program (start: an exec.Cmd's Start) inside namespace nsFd from a
// thread bound to cpus (none: where this process may run), so the child and every
// thread it makes run there.
func startOn(nsFd int, cpus []int, start func() error) error {
	if len(cpus) == 0 {
		return inNetns(nsFd, start)
	}
	return inNetns(nsFd, func() error { // on a locked thread
		was, err := cpuset.Allowed()
		if err != nil {
			return fmt.Errorf("netns: %w", err)
		}
		if err := cpuset.Bind(cpus); err != nil {
			return fmt.Errorf("netns: %w", err)
		}
		err = start()
		if rerr := cpuset.Bind(was); rerr != nil {
			err = errors.Join(err, fmt.Errorf("netns: unbind: %w", rerr))
		}
		return err
	})
}

// PlaceCPUs places st's work on the machine's CPUs (see placeCPUs): it sets each
// shard's CPUs and st.HostCPUs, unless unplaced is set or another lab is up (then the
// labs share the CPUs and the scheduler balances them).
func PlaceCPUs(st *State, unplaced bool) error {
	if unplaced {
		return nil
	}
	others, err := List()
	if err != nil {
		return err
	}
	if len(others) > 0 {
		return nil
	}
	allowed, err := cpuset.Allowed()
	if err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	st.HostCPUs = placeCPUs(st.Shards, allowed)
	return nil
}

// OnNodeCPUs returns argv run through taskset on the CPUs st placed node's work on (a
// host's, off the shards' CPUs: placeCPUs), or argv itself where it placed none.
func OnNodeCPUs(st *State, node string, argv []string) []string {
	if len(st.HostCPUs) == 0 {
		return argv
	}
	for _, n := range st.Namespaces {
		if n.Node == node && !n.Switch {
			return append([]string{"taskset", "--cpu-list", cpuset.List(st.HostCPUs)}, argv...)
		}
	}
	return argv
}

// steerReceive sets RPS on every interface of namespace nsFd but lo, so the kernel's
// receive work for frames arriving on them (a host's TCP stack, for one) runs on cpus
// rather than on the CPU of whoever sent them through the veth. A namespace's devices
// show in sysfs only to a sysfs mounted inside it, so a thread of its own enters a new
// mount namespace and the network namespace, mounts sysfs there, writes, and dies.
func steerReceive(nsFd int, cpus []int) error {
	mask := cpuset.Mask(cpus)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the runtime ends the thread with the goroutine
		errc <- func() (rerr error) {
			if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
				return fmt.Errorf("unshare mounts: %w", err)
			}
			if err := unix.Mount("", "/", "", unix.MS_SLAVE|unix.MS_REC, ""); err != nil {
				return fmt.Errorf("private mounts: %w", err)
			}
			if err := unix.Setns(nsFd, unix.CLONE_NEWNET); err != nil {
				return fmt.Errorf("setns: %w", err)
			}
			if err := unix.Mount("sysfs", "/sys", "sysfs", 0, ""); err != nil {
				return fmt.Errorf("mount sysfs: %w", err)
			}
			var st unix.Statfs_t
			if err := unix.Statfs("/sys", &st); err != nil {
				return fmt.Errorf("sysfs: %w", err)
			}
			if st.Flags&unix.ST_RDONLY != 0 {
				// A namespace has one sysfs superblock, and a container's runtime
				// mounted it read-only: make it writable for this write, then read-only
				// again (the container's own mount stays read-only throughout).
				if err := unix.Mount("", "/sys", "", unix.MS_REMOUNT, ""); err != nil {
					return fmt.Errorf("remount sysfs writable: %w", err)
				}
				defer func() {
					if err := unix.Mount("", "/sys", "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil && rerr == nil {
						rerr = fmt.Errorf("remount sysfs read-only: %w", err)
					}
				}()
			}
			queues, err := filepath.Glob("/sys/class/net/*/queues/rx-*/rps_cpus")
			if err != nil {
				return err
			}
			for _, q := range queues {
				if strings.HasPrefix(q, "/sys/class/net/lo/") {
					continue
				}
				if err := os.WriteFile(q, []byte(mask), 0o644); err != nil {
					return err
				}
			}
			return nil
		}()
	}()
	if err := <-errc; err != nil {
		return fmt.Errorf("netns: steer receive work to CPUs %s: %w", cpuset.List(cpus), err)
	}
	return nil
}
