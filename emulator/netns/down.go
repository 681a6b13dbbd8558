package netns

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"reef/emulator"
)

// Down removes lab: it stops every process running in the lab's namespaces (SIGTERM,
// then SIGKILL after 3 s), deletes the namespaces (which deletes their veths), the
// /etc/netns directories and the lab's state directory. It touches only what the lab's
// intent log names, so it also cleans up after a killed Up or daemon.
func Down(ctx context.Context, lab string) error {
	st, err := ReadState(DefaultRunDir, lab)
	if err != nil {
		return err
	}
	var errs []error
	inodes := map[uint64]string{}
	for _, n := range st.Namespaces {
		var s unix.Stat_t
		if err := unix.Stat(filepath.Join(NetnsDir, n.NS), &s); err == nil && s.Dev != 0 {
			inodes[s.Ino] = n.NS
		}
	}
	if err := killIn(ctx, inodes); err != nil {
		errs = append(errs, err)
	}
	for _, n := range st.Namespaces {
		if err := deleteNamed(n.NS); err != nil {
			errs = append(errs, err)
		}
	}
	for _, d := range st.EtcDirs {
		if filepath.Dir(d) != DefaultEtcDir || !strings.HasPrefix(filepath.Base(d), "reef-"+lab+"-") {
			errs = append(errs, fmt.Errorf("netns: state names %s, which is not a lab directory; left alone", d))
			continue
		}
		if err := os.RemoveAll(d); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		if err := os.RemoveAll(filepath.Join(DefaultRunDir, lab)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// procsIn lists the processes whose network namespace is one of inodes.
func procsIn(inodes map[uint64]string) []int {
	if len(inodes) == 0 {
		return nil
	}
	ents, _ := os.ReadDir("/proc")
	var pids []int
	self := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		link, err := os.Readlink("/proc/" + e.Name() + "/ns/net")
		if err != nil {
			continue // gone, or a zombie
		}
		// "net:[4026532281]"
		ino, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(link, "net:["), "]"), 10, 64)
		if err != nil {
			continue
		}
		if _, ok := inodes[ino]; ok {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killIn stops every process in the namespaces: SIGTERM, then SIGKILL after 3 s.
func killIn(ctx context.Context, inodes map[uint64]string) error {
	pids := procsIn(inodes)
	if len(pids) == 0 {
		return nil
	}
	for _, pid := range pids {
		_ = unix.Kill(pid, unix.SIGTERM)
	}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if len(procsIn(inodes)) == 0 {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, pid := range procsIn(inodes) {
		_ = unix.Kill(pid, unix.SIGKILL)
	}
	for range 100 {
		if len(procsIn(inodes)) == 0 {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("netns: processes %v survived SIGKILL", procsIn(inodes))
}

// LabInfo summarises one lab for `reef ls`.
type LabInfo struct {
	Name string `json:"name"`
	// Backend is the backend that brought it up (netns or docker).
	Backend  string    `json:"backend"`
	Topology string    `json:"topology,omitempty"`
	Created  time.Time `json:"created"`
	// Ready is false when Up has not finished (or was killed): reef down cleans it up.
	Ready    bool `json:"ready"`
	Hosts    int  `json:"hosts"`
	Switches int  `json:"switches"`
	// Daemons and Alive count the lab's switch daemons and how many still run.
	Daemons int `json:"daemons"`
	Alive   int `json:"alive"`
}

// List returns the labs that are up (or half up), sorted by name.
func List() ([]LabInfo, error) {
	ents, err := os.ReadDir(DefaultRunDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("netns: %w", err)
	}
	var out []LabInfo
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		st, err := ReadState(DefaultRunDir, e.Name())
		if err != nil {
			continue
		}
		li := LabInfo{Name: st.Lab, Backend: st.Backend, Topology: st.Topology, Created: st.Created, Ready: st.Ready}
		if li.Backend == "" {
			li.Backend = BackendName
		}
		for _, n := range st.Namespaces {
			if n.Switch {
				li.Switches++
			} else {
				li.Hosts++
			}
		}
		pids := map[int]bool{} // the switches of a shard share a daemon
		for _, d := range st.Daemons {
			if !pids[d.Pid] {
				pids[d.Pid] = true
				li.Daemons++
				if unix.Kill(d.Pid, 0) == nil {
					li.Alive++
				}
			}
		}
		out = append(out, li)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Stdio are the streams Exec connects to the program.
type Stdio = emulator.Stdio

// Exec runs argv in node's namespace of lab, through `ip netns exec`, so the program
// also sees the lab's /etc/hosts (host names resolve) and a sysfs of its namespace. A
// non-zero exit comes back as an *exec.ExitError.
func Exec(ctx context.Context, lab, node string, argv []string, stdio Stdio) error {
	cmd, err := Command(ctx, lab, node, argv...)
	if err != nil {
		return err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.In, stdio.Out, stdio.Err
	return cmd.Run()
}

// Command returns an exec.Cmd that runs argv in node's namespace of lab (see Exec).
func Command(ctx context.Context, lab, node string, argv ...string) (*exec.Cmd, error) {
	if len(argv) == 0 {
		return nil, errors.New("netns: exec: no command")
	}
	st, err := ReadState(DefaultRunDir, lab)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, n := range st.Namespaces {
		if n.Node == node {
			argv = OnNodeCPUs(st, node, argv)
			cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", n.NS}, argv...)...)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			return cmd, nil
		}
		names = append(names, n.Node)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("netns: lab %q has no node %q; nodes: %s", lab, node, strings.Join(names, " "))
}

// FindSwitchd returns the switchd binary Up launches: FindDaemon("switchd").
func FindSwitchd() (string, error) { return FindDaemon("switchd") }

func buildSwitchd() (string, error) { return buildDaemon("switchd") }

// FindDaemon returns the binary of one of reef's daemons (switchd, hostd): $REEF_<NAME>
// (e.g. REEF_SWITCHD) if set, else a file called name next to the running executable
// (not when that is a test binary), else one built with `go build reef/cmd/<name>` into
// $XDG_CACHE_HOME/reef (or ~/.cache/reef) from the reef module containing the working
// directory (go build's cache makes that quick when nothing changed).
func FindDaemon(name string) (string, error) {
	if p := os.Getenv("REEF_" + strings.ToUpper(name)); p != "" {
		return p, nil
	}
	if exe, err := os.Executable(); err == nil && !strings.HasSuffix(exe, ".test") {
		p := filepath.Join(filepath.Dir(exe), name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	return buildDaemon(name)
}

var buildMu sync.Mutex

func buildDaemon(name string) (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	out := filepath.Join(cache, "reef", name)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", fmt.Errorf("netns: %w", err)
	}
	tmp := fmt.Sprintf("%s.%d", out, os.Getpid())
	cmd := exec.Command("go", "build", "-o", tmp, "reef/cmd/"+name)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("netns: build %s in %s: %w\n%s", name, root, err, b)
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", fmt.Errorf("netns: %w", err)
	}
	return out, nil
}

// moduleRoot finds the reef module's directory above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(strings.TrimSpace(string(b)), "module reef\n") || err == nil && strings.Contains(string(b), "module reef\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("netns: no daemon binary: set REEF_SWITCHD (REEF_HOSTD), put the daemons next to reef, or run inside the reef module so they can be built")
		}
		dir = parent
	}
}
