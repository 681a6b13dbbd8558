package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"reef/capture"
	"reef/units"
)

func init() { commands = append(commands, traceCmd) }

func traceCmd(o *options) *cobra.Command {
	var (
		mpdUnit  string
		reefOnly bool
	)
	c := &cobra.Command{
		Use:   "trace FILE",
		Short: "print a pcapng trace one packet per line, decoding reef headers and INT",
		Long: `trace prints every packet of a pcapng (or pcap) file: time, addresses, and for reef
packets the header fields, ECN, the Poseidon MPD and the HPCC per-hop INT records.
Wireshark shows the same fields with: wireshark -X lua_script:dissector/reef.lua FILE`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return traceRun(cmd, args[0], mpdUnit, reefOnly)
		},
	}
	c.Flags().StringVar(&mpdUnit, "mpd-unit", "", "time one MPD unit stands for (e.g. 256ns); raw units when empty")
	c.Flags().BoolVar(&reefOnly, "reef-only", false, "print reef packets only")
	return c
}

func traceRun(cmd *cobra.Command, path, mpdUnit string, reefOnly bool) error {
	opt := capture.TraceOptions{ReefOnly: reefOnly}
	if mpdUnit != "" {
		u, err := units.ParseTime(mpdUnit)
		if err != nil {
			return fmt.Errorf("--mpd-unit: %w", err)
		}
		opt.MPDUnit = u
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := capture.Trace(f, cmd.OutOrStdout(), opt); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
