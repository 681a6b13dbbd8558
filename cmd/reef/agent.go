package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"reef/emulator/netns"
	"reef/emulator/swarm"
)

func init() { commands = append(commands, agentCmd, nsexecCmd) }

// agentCmd is what a Swarm lab's task runs on each machine (emulator/swarm.Agent); users
// do not type it.
func agentCmd(o *options) *cobra.Command {
	var spec string
	c := &cobra.Command{
		Use:    "agent --spec FILE",
		Short:  "a Swarm lab's part on one machine (run by the lab's task, not by hand)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return swarm.Agent(cmd.Context(), spec, slog.Default())
		},
	}
	c.Flags().StringVar(&spec, "spec", swarm.SpecPath, "the machine's part of the lab (JSON)")
	return c
}

// nsexecCmd runs a program in a lab node's network namespace with the lab's hosts file,
// as `ip netns exec` does, for images that have no ip (the Swarm agent's).
func nsexecCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:    "nsexec NAMESPACE -- CMD [ARG...]",
		Short:  "run a program in a named network namespace (reef exec on Swarm labs uses it)",
		Hidden: true,
		Args:   cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 1 {
				return errors.New("usage: reef nsexec NAMESPACE -- CMD [ARG...]")
			}
			return nsexec(args[0], args[1:])
		},
	}
}

// nsexec enters namespace ns (network; a private mount namespace with
// /etc/netns/<ns>/hosts over /etc/hosts) and replaces reef with argv.
func nsexec(ns string, argv []string) error {
	runtime.LockOSThread() // setns and exec on the same thread
	fd, err := unix.Open(filepath.Join(netns.NetnsDir, ns), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("nsexec: namespace %s: %w", ns, err)
	}
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("nsexec: enter %s: %w", ns, err)
	}
	unix.Close(fd)
	hosts := filepath.Join(netns.DefaultEtcDir, ns, "hosts")
	if _, err := os.Stat(hosts); err == nil {
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			return fmt.Errorf("nsexec: %w", err)
		}
		if err := unix.Mount("", "/", "", unix.MS_SLAVE|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("nsexec: %w", err)
		}
		if err := unix.Mount(hosts, "/etc/hosts", "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("nsexec: hosts file: %w", err)
		}
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return fmt.Errorf("nsexec: %w", err)
	}
	return syscall.Exec(path, argv, os.Environ())
}
