package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"

	"reef/emulator"
	"reef/emulator/experiment"
	"reef/emulator/plan"
	"reef/emulator/topo"
)

func init() { commands = append(commands, validateCmd) }

func validateCmd(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE...",
		Short: "check topology and experiment files without creating anything; every error at once",
		Long: `validate checks each file as reef up (a topology) or reef run (an experiment: a
file with a topology: key) would before creating anything: the file is loaded, every
sweep point compiled for every backend (topology, hosts, links, algorithms and their
parameters, expectations) and planned. Nothing is created or run.

Every problem is reported, each on its own line as FILE:LINE: FIELD: what was expected
(an entry the decoder rejects is dropped and the rest checked; -v adds the decoder's
source excerpt). Problems that need
the file's earlier parts to be right (a flow's hosts need a valid topology) are found
once those are fixed.

Exit status: 0 when every file is valid, 1 when one is not.`,
		Args:         cobra.MinimumNArgs(1),
		SilenceUsage: true,
		RunE: func(_ *cobra.Command, args []string) error {
			bad := 0
			for _, file := range args {
				err := validateFile(file)
				if err == nil {
					fmt.Printf("%s: ok\n", file)
					continue
				}
				bad++
				msg := err.Error()
				if !o.verbose {
					msg = withoutExcerpt(msg)
				}
				fmt.Fprintln(os.Stderr, msg)
			}
			if bad > 0 {
				return &exitError{code: 1, err: fmt.Errorf("%d of %d files are not valid", bad, len(args))}
			}
			return nil
		},
	}
}

// validateFile checks one topology or experiment file and returns what is wrong with
// it (nil when nothing is): one problem per line, FILE:LINE: FIELD: what was expected.
func validateFile(file string) error {
	src, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if !isExperiment(src) {
		t, err := topo.Parse(file, src)
		if err != nil {
			return err
		}
		if _, err := plan.Build(t, plan.Options{Seed: 1}); err != nil {
			return fmt.Errorf("%s: plan: %w", file, err)
		}
		return nil
	}
	// Each backend may compile at its own time scale (backend_time_scale): all are
	// checked, and a problem they share is reported once.
	var backends []string
	for _, b := range emulator.Backends() {
		backends = append(backends, b.Name())
	}
	return experiment.Check(file, src, backends)
}

// excerptRe matches the lines of a decoder's source excerpt ("  12 | text", "^").
var excerptRe = regexp.MustCompile(`^(>?\s*\d+ \|.*|\s*\^\s*)$`)

// withoutExcerpt drops the decoder's source excerpts from msg, keeping its other lines.
func withoutExcerpt(msg string) string {
	lines := strings.Split(msg, "\n")
	out := lines[:0]
	for _, ln := range lines {
		if !excerptRe.MatchString(ln) {
			out = append(out, ln)
		}
	}
	return strings.Join(out, "\n")
}

// isExperiment tells an experiment file (it has a topology: key) from a topology file.
// A file that is not a YAML mapping is handed to the topology loader, which says why.
func isExperiment(src []byte) bool {
	var keys yaml.MapSlice
	if err := yaml.NewDecoder(bytes.NewReader(src)).Decode(&keys); err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	for _, kv := range keys {
		if kv.Key == "topology" {
			return true
		}
	}
	return false
}
