package netns

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// NetnsDir is where named network namespaces are bind-mounted, as by `ip netns add`.
const NetnsDir = "/run/netns"

var (
	rootOnce sync.Once
	rootFd   int
	rootErr  error
)

// rootNetns returns an fd of the network namespace the process started in (the main
// thread's; reef never moves the main thread).
func rootNetns() (int, error) {
	rootOnce.Do(func() {
		rootFd, rootErr = unix.Open("/proc/self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	})
	return rootFd, rootErr
}

// inNetns runs fn on a locked OS thread that has entered the namespace nsFd and returns
// the thread to the root namespace afterwards. Sockets created by fn stay in nsFd;
// children started by fn (exec.Cmd.Start) are born in it. If the thread cannot be
// returned, it is left locked so the runtime destroys it.
func inNetns(nsFd int, fn func() error) error {
	root, err := rootNetns()
	if err != nil {
		return fmt.Errorf("netns: open own namespace: %w", err)
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(nsFd, unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns: setns: %w", err)
			return
		}
		ferr := fn()
		if err := unix.Setns(root, unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("netns: return to own namespace: %w", err))
			return // thread stays locked and dies with the goroutine
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// ensureNetnsDir makes NetnsDir a shared mount point, as iproute2 does, so namespaces
// mounted there are visible to `ip netns` in other mount namespaces.
func ensureNetnsDir() error {
	if err := os.MkdirAll(NetnsDir, 0o755); err != nil {
		return fmt.Errorf("netns: %w", err)
	}
	err := unix.Mount("", NetnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	if errors.Is(err, unix.EINVAL) {
		if err := unix.Mount(NetnsDir, NetnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("netns: bind %s: %w", NetnsDir, err)
		}
		err = unix.Mount("", NetnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
	}
	if err != nil {
		return fmt.Errorf("netns: make %s shared: %w", NetnsDir, err)
	}
	return nil
}

// nsHandle is an open namespace: its fd (keeps it pinned while open), a netlink handle
// and an AF_INET socket for ethtool ioctls, both created inside it.
type nsHandle struct {
	name  string
	fd    int
	nl    *netlink.Handle
	ethFd int
}

func (h *nsHandle) close() {
	if h.nl != nil {
		h.nl.Close()
	}
	if h.ethFd > 0 {
		unix.Close(h.ethFd)
	}
	if h.fd > 0 {
		unix.Close(h.fd)
	}
}

// createNamed creates the named network namespace name (failing if it exists), disables
// IPv6 in it, sets sysctls, brings loopback up and returns it open.
func createNamed(name string, sysctls map[string]string) (*nsHandle, error) {
	path := filepath.Join(NetnsDir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return nil, fmt.Errorf("netns: create %s: %w", name, err)
	}
	f.Close()
	h := &nsHandle{name: name}
	root, err := rootNetns()
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := func() error {
			if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
				return fmt.Errorf("unshare: %w", err)
			}
			self := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
			if err := unix.Mount(self, path, "none", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("bind mount: %w", err)
			}
			fd, err := unix.Open(self, unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return err
			}
			h.fd = fd
			for k, v := range sysctls {
				if err := writeSysctl(k, v); err != nil {
					return err
				}
			}
			if h.nl, err = netlink.NewHandle(); err != nil {
				return fmt.Errorf("netlink: %w", err)
			}
			if h.ethFd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
				return fmt.Errorf("ethtool socket: %w", err)
			}
			lo, err := h.nl.LinkByName("lo")
			if err != nil {
				return fmt.Errorf("lo: %w", err)
			}
			return h.nl.LinkSetUp(lo)
		}()
		if serr := unix.Setns(root, unix.CLONE_NEWNET); serr != nil {
			errc <- errors.Join(err, fmt.Errorf("return to own namespace: %w", serr))
			return
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	if err := <-errc; err != nil {
		h.close()
		deleteNamed(name)
		return nil, fmt.Errorf("netns: create %s: %w", name, err)
	}
	return h, nil
}

// deleteNamed unmounts and removes a named namespace; a missing one is not an error.
func deleteNamed(name string) error {
	path := filepath.Join(NetnsDir, name)
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("netns: unmount %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("netns: remove %s: %w", path, err)
	}
	return nil
}

// openNamed opens an existing named namespace's fd.
func openNamed(name string) (int, error) {
	return unix.Open(filepath.Join(NetnsDir, name), unix.O_RDONLY|unix.O_CLOEXEC, 0)
}

// writeSysctl writes a sysctl of the calling thread's network namespace
// ("net.ipv6.conf.all.disable_ipv6").
func writeSysctl(key, value string) error {
	path := "/proc/sys/" + filepathFromKey(key)
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		return fmt.Errorf("sysctl %s=%s: %w", key, value, err)
	}
	return nil
}

func filepathFromKey(key string) string {
	b := []byte(key)
	for i := range b {
		if b[i] == '.' {
			b[i] = '/'
		}
	}
	return string(b)
}

// ethtool ioctl commands and string sets (linux/ethtool.h).
const (
	ethtoolGSTRINGS  = 0x1b
	ethtoolGSSETINFO = 0x37
	ethtoolSFEATURES = 0x3b
	ethSSFeatures    = 4
	ethGStringLen    = 32
)

var (
	featOnce  sync.Once
	featNames []string
	featErr   error
)

// offloadFeature reports whether a netdev feature (by its ethtool name) is one reef
// turns off on every veth end: checksum, scatter-gather, every segmentation offload
// (TSO, GSO, UFO, tunnels, AccECN), GRO and VLAN tag offloads.
func offloadFeature(name string) bool {
	switch {
	case strings.HasPrefix(name, "tx-checksum"), strings.HasPrefix(name, "tx-scatter-gather"),
		strings.HasSuffix(name, "-segmentation"), strings.HasPrefix(name, "rx-gro"),
		name == "rx-udp-gro-forwarding", strings.HasPrefix(name, "rx-vlan"), strings.HasPrefix(name, "tx-vlan"):
		return true
	}
	return false
}

// featureNames reads the kernel's netdev feature names (the same for every device).
func featureNames(sock int) ([]string, error) {
	featOnce.Do(func() {
		info := struct {
			cmd, reserved uint32
			mask          uint64
			data          uint32
		}{cmd: ethtoolGSSETINFO, mask: 1 << ethSSFeatures}
		if err := ethtoolIoctl(sock, "lo", unsafe.Pointer(&info)); err != nil {
			featErr = fmt.Errorf("ETHTOOL_GSSET_INFO: %w", err)
			return
		}
		n := int(info.data)
		buf := make([]byte, 12+n*ethGStringLen)
		binary.NativeEndian.PutUint32(buf[0:], ethtoolGSTRINGS)
		binary.NativeEndian.PutUint32(buf[4:], ethSSFeatures)
		binary.NativeEndian.PutUint32(buf[8:], uint32(n))
		if err := ethtoolIoctl(sock, "lo", unsafe.Pointer(&buf[0])); err != nil {
			featErr = fmt.Errorf("ETHTOOL_GSTRINGS: %w", err)
			return
		}
		for i := range n {
			s := buf[12+i*ethGStringLen : 12+(i+1)*ethGStringLen]
			if j := bytes.IndexByte(s, 0); j >= 0 {
				s = s[:j]
			}
			featNames = append(featNames, string(s))
		}
	})
	return featNames, featErr
}

// offloadsOff turns the offloadFeature features off on ifname with one
// ETHTOOL_SFEATURES, through sock (an AF_INET socket in ifname's namespace). Features
// the device cannot change are left as they are.
func offloadsOff(sock int, ifname string) error {
	names, err := featureNames(sock)
	if err != nil {
		return fmt.Errorf("netns: ethtool %s: %w", ifname, err)
	}
	blocks := (len(names) + 31) / 32
	buf := make([]byte, 8+8*blocks)
	binary.NativeEndian.PutUint32(buf[0:], ethtoolSFEATURES)
	binary.NativeEndian.PutUint32(buf[4:], uint32(blocks))
	for i, n := range names {
		if offloadFeature(n) {
			off := 8 + 8*(i/32) // features[i/32].valid; requested stays 0 (off)
			binary.NativeEndian.PutUint32(buf[off:], binary.NativeEndian.Uint32(buf[off:])|1<<(i%32))
		}
	}
	if err := ethtoolIoctl(sock, ifname, unsafe.Pointer(&buf[0])); err != nil {
		return fmt.Errorf("netns: ethtool %s: ETHTOOL_SFEATURES: %w", ifname, err)
	}
	return nil
}

// ethtoolIoctl issues SIOCETHTOOL on ifname with data pointing at the command struct.
func ethtoolIoctl(sock int, ifname string, data unsafe.Pointer) error {
	var ifr struct {
		name [unix.IFNAMSIZ]byte
		data unsafe.Pointer
		_    [16]byte
	}
	copy(ifr.name[:], ifname)
	ifr.data = data
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(sock), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&ifr)))
	if errno != 0 {
		return errno
	}
	return nil
}
