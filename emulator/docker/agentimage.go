package docker

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// AgentImage is the image of a lab's task on each machine of a Swarm (emulator/swarm):
// reef itself (its `agent` and `nsexec` commands), the daemons, and the kernel tools a
// user runs across the fabric (busybox's sh, ping, ip, nc …; iperf3).
const AgentImage = "reef/agent:dev"

// AgentBinaries are the static programs AgentImage holds in /reef.
var AgentBinaries = []string{"reef", "switchd", "hostd", "reefpause"}

// AgentTools are the machine's programs AgentImage carries, each with the shared
// libraries it links (from ldd); a missing one is left out and named.
var AgentTools = []string{"/usr/bin/iperf3"}

// BuildAgentImage imports AgentImage into the engine c: static builds of
// AgentBinaries, the machine's static busybox (Debian's busybox-static) with its
// applets, and AgentTools with their libraries. It returns what it left out.
func BuildAgentImage(ctx context.Context, c *Client) (missing []string, err error) {
	dir, err := staticBinaries(AgentBinaries)
	if err != nil {
		return nil, err
	}
	fs := Rootfs{Files: map[string][]byte{"/etc/hosts": []byte("127.0.0.1\tlocalhost\n")}, Symlinks: map[string]string{}}
	for _, n := range AgentBinaries {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, fmt.Errorf("docker: %w", err)
		}
		fs.Files["/reef/"+n] = b
	}
	if bb, err := os.ReadFile(BusyboxPath); err == nil && isStatic(bb) {
		fs.Files["/bin/busybox"] = bb
		for _, a := range busyboxApplets {
			fs.Symlinks["/bin/"+a] = "busybox"
		}
	} else {
		missing = append(missing, BusyboxPath+" (static busybox: apt-get install busybox-static)")
	}
	for _, t := range AgentTools {
		files, err := withLibraries(t)
		if err != nil {
			missing = append(missing, fmt.Sprintf("%s (%v)", t, err))
			continue
		}
		for p, b := range files {
			fs.Files[p] = b
		}
		fs.Symlinks["/bin/"+filepath.Base(t)] = t
	}
	var buf bytes.Buffer
	if err := fs.Tar(&buf); err != nil {
		return missing, fmt.Errorf("docker: %s rootfs: %w", AgentImage, err)
	}
	changes := []string{`ENTRYPOINT ["/reef/reef"]`, "ENV PATH=/bin:/usr/bin:/reef", "LABEL reef.image=" + AgentImage}
	return missing, c.ImportImage(ctx, &buf, AgentImage, changes)
}

// withLibraries reads program path and every shared library ldd says it loads, by
// their paths on this machine (which the image keeps).
func withLibraries(path string) (map[string][]byte, error) {
	out := map[string][]byte{}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out[path] = b
	ldd, err := exec.Command("ldd", path).Output()
	if err != nil {
		return out, nil // static, or ldd absent: the program alone
	}
	sc := bufio.NewScanner(bytes.NewReader(ldd))
	for sc.Scan() {
		// "libiperf.so.0 => /lib/x86_64-linux-gnu/libiperf.so.0 (0x…)" or
		// "/lib64/ld-linux-x86-64.so.2 (0x…)"
		f := strings.Fields(sc.Text())
		lib := ""
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			lib = f[2]
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			lib = f[0]
		}
		if lib == "" {
			continue
		}
		real, err := filepath.EvalSymlinks(lib)
		if err != nil {
			return nil, fmt.Errorf("library %s: %w", lib, err)
		}
		lb, err := os.ReadFile(real)
		if err != nil {
			return nil, fmt.Errorf("library %s: %w", lib, err)
		}
		out[lib] = lb
	}
	return out, nil
}
