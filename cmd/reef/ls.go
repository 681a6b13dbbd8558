package main

import (
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"reef/emulator/netns"
)

func init() { commands = append(commands, lsCmd) }

func lsCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:          "ls",
		Short:        "list the labs that are up",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE:         func(*cobra.Command, []string) error { return lsRun() },
	}
}

func lsRun() error {
	labs, err := netns.List()
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "LAB\tBACKEND\tHOSTS\tSWITCHES\tSWITCH DAEMONS\tSTATE\tUP SINCE\tTOPOLOGY")
	for _, l := range labs {
		state := "up"
		switch {
		case !l.Ready:
			state = "incomplete (reef down " + l.Name + ")"
		case l.Alive < l.Daemons:
			state = "degraded"
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d/%d\t%s\t%s\t%s\n", l.Name, l.Backend, l.Hosts, l.Switches, l.Alive, l.Daemons, state,
			l.Created.Local().Format(time.DateTime), l.Topology)
	}
	return w.Flush()
}
