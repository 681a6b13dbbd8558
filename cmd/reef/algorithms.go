package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"reef/cc"
	"reef/emulator"
)

func init() { commands = append(commands, algorithmsCmd, backendsCmd) }

func algorithmsCmd(o *options) *cobra.Command {
	asJSON := false
	c := &cobra.Command{
		Use:   "algorithms [NAME...]",
		Short: "list the congestion-control algorithms this reef has, with their parameters and defaults",
		Long: `algorithms lists every algorithm registered in this binary (cc: in experiment files),
each with the parameters it takes under params: or defaults.cc_params.NAME, their kind and
default. Times and rates are in paper units (an experiment's time_scale applies to them);
sizes and numbers are not scaled. Name algorithms to list only those.`,
		SilenceUsage: true,
		RunE: func(_ *cobra.Command, args []string) error {
			return listAlgorithms(os.Stdout, args, asJSON)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON: [{name, doc, params: [{name, kind, default}]}]")
	return c
}

// algorithmInfo is one algorithm as reef algorithms --json prints it.
type algorithmInfo struct {
	Name   string     `json:"name"`
	Doc    string     `json:"doc"`
	Params []cc.Param `json:"params"`
}

func listAlgorithms(w io.Writer, names []string, asJSON bool) error {
	if len(names) == 0 {
		names = cc.Names()
	}
	infos := make([]algorithmInfo, 0, len(names))
	for _, n := range names {
		s, err := cc.Lookup(n)
		if err != nil {
			return err
		}
		infos = append(infos, algorithmInfo{Name: s.Name, Doc: s.Doc, Params: s.Parameters()})
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(infos)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for i, a := range infos {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "%s: %s\n", a.Name, a.Doc)
		if len(a.Params) == 0 {
			fmt.Fprintln(tw, "  (no parameters)")
		}
		for _, p := range a.Params {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", p.Name, p.Kind, p.Default)
		}
	}
	return tw.Flush()
}

func backendsCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:          "backends",
		Short:        "list the backends this reef can run experiments on (reef run --backend NAME)",
		Args:         cobra.NoArgs,
		SilenceUsage: true,
		RunE:         func(*cobra.Command, []string) error { return listBackends(os.Stdout) },
	}
}

func listBackends(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, b := range emulator.Backends() {
		doc := ""
		if d, ok := b.(emulator.Describer); ok {
			doc = d.Describe()
		}
		fmt.Fprintf(tw, "%s\t%s\n", b.Name(), doc)
	}
	return tw.Flush()
}
