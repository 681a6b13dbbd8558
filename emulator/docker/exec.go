package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"reef/emulator/netns"
)

// Command returns an exec.Cmd that runs argv in node's container of lab. When the
// container's image has argv[0] (an absolute path, or a name in /bin, /usr/bin,
// /usr/local/bin, /sbin, /usr/sbin or /reef of the container), the program runs fully
// inside the container (nsenter into all its namespaces: the image's files, the lab's
// network); otherwise the machine's own program runs in the container's network
// namespace only (netns.Command), so `reef exec sw1 -- ip link` works on scratch
// images too.
func Command(ctx context.Context, lab, node string, argv ...string) (*exec.Cmd, error) {
	if len(argv) == 0 {
		return nil, errors.New("docker: exec: no command")
	}
	c, err := NewClient()
	if err != nil {
		return nil, err
	}
	st, err := c.Inspect(ctx, ContainerName(lab, node))
	if IsNotFound(err) {
		return nil, fmt.Errorf("docker: lab %q has no container for node %q", lab, node)
	}
	if err != nil {
		return nil, err
	}
	if !st.State.Running {
		return nil, fmt.Errorf("docker: container %s is %s", ContainerName(lab, node), st.State.Status)
	}
	if inImage(st.State.Pid, argv[0]) {
		args := append([]string{"nsenter", "-t", strconv.Itoa(st.State.Pid), "-m", "-u", "-i", "-n", "-p", "-r", "-w", "--"}, argv...)
		if lst, err := netns.ReadState(netns.DefaultRunDir, lab); err == nil {
			// nsenter leaves the program in our cgroups, outside the container's cpuset
			args = netns.OnNodeCPUs(lst, node, args)
		}
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		return cmd, nil
	}
	return netns.Command(ctx, lab, node, argv...)
}

// Exec runs argv in node's container (see Command) with stdio; a non-zero exit comes
// back as an *exec.ExitError.
func Exec(ctx context.Context, lab, node string, argv []string, stdio netns.Stdio) error {
	cmd, err := Command(ctx, lab, node, argv...)
	if err != nil {
		return err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdio.In, stdio.Out, stdio.Err
	return cmd.Run()
}

// inImage reports whether prog exists in the root filesystem of process pid.
func inImage(pid int, prog string) bool {
	root := "/proc/" + strconv.Itoa(pid) + "/root"
	var cands []string
	if strings.Contains(prog, "/") {
		cands = []string{prog}
	} else {
		for _, d := range []string{"/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin", "/reef"} {
			cands = append(cands, filepath.Join(d, prog))
		}
	}
	for _, p := range cands {
		if fi, err := os.Stat(filepath.Join(root, p)); err == nil && !fi.IsDir() {
			return true
		}
	}
	return false
}
