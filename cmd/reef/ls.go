package main

import (
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"reef/emulator/netns"
	"reef/emulator/swarm"
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
		daemons := fmt.Sprintf("%d/%d", l.Alive, l.Daemons)
		if m, err := swarm.ReadMarker(l.Name); err == nil { // its daemons run on its machines
			daemons = fmt.Sprintf("on %d machines", len(m.Machines))
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", l.Name, l.Backend, l.Hosts, l.Switches, daemons, state,
			l.Created.Local().Format(time.DateTime), l.Topology)
	}
	return w.Flush()
}
