// Package workloads ships the flow-size distributions the reproduced papers use (see
// README.md for their sources and format), embedded so that every binary has them.
// hostd/workload parses them.
package workloads

import "embed"

// FS holds the shipped .cdf files and README.md.
//
//go:embed *.cdf README.md
var FS embed.FS
