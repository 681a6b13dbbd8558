package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"reef/emulator"
	_ "reef/emulator/docker" // registers the backends reef down may find a lab on
	labpkg "reef/emulator/lab"
	"reef/emulator/netns"
)

func init() { commands = append(commands, downCmd) }

func downCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "down [LAB]",
		Short: "remove a lab: its daemons, namespaces, veths and files (default: the only lab up)",
		Long: `down stops every process in the lab's namespaces, deletes the namespaces (and so
their veths), the lab's /etc/netns directories and its state. It removes exactly what the
lab's state file names, so it also cleans up a lab whose "reef up" was interrupted.`,
		Args:         cobra.MaximumNArgs(1),
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			lab := ""
			if len(args) == 1 {
				lab = args[0]
			}
			return downRun(cmd.Context(), lab)
		},
	}
}

func downRun(ctx context.Context, lab string) error {
	lab, err := pickLab(lab)
	if err != nil {
		return err
	}
	be, err := emulator.OwnerOf(lab)
	if err != nil {
		return err
	}
	if err := be.Down(ctx, lab); err != nil {
		return err
	}
	// a class's lab (reef lab start) has cgroups of its own, empty now
	if err := labpkg.Unbound(lab); err != nil {
		return err
	}
	fmt.Printf("lab %s is down\n", lab)
	return nil
}

// pickLab returns lab, or the only lab that is up when lab is empty.
func pickLab(lab string) (string, error) {
	if lab != "" {
		return lab, nil
	}
	labs, err := netns.List()
	if err != nil {
		return "", err
	}
	switch len(labs) {
	case 0:
		return "", fmt.Errorf("no lab is up")
	case 1:
		return labs[0].Name, nil
	}
	names := make([]string, len(labs))
	for i, l := range labs {
		names[i] = l.Name
	}
	return "", fmt.Errorf("%d labs are up (%s); name one", len(labs), strings.Join(names, ", "))
}
